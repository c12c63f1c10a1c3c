package picture

import (
	"cmp"
	"math"
	"slices"
	"unicode/utf8"
)

// The layout is the layered one of Sugiyama, Tagawa and Toda, which
// Graphviz's dot also follows, in its plainest form: columns by longest
// path, rows ordered by barycentres with the fewest crossings kept, rows
// placed by their neighbours. A run's graph is a few stages of jobs, most
// of them fan-outs and joins; the plain form draws those as dot does.

// The measures of a picture, in SVG user units (pixels at 100%).
const (
	fontSize  = 11.0
	charWidth = 6.6 // an average Helvetica character at fontSize, rounded up: a label never overflows its box
	lineStep  = 14.0
	padX      = 10.0
	padY      = 7.0
	colGap    = 56.0 // between two columns: room for the edges' curves
	rowGap    = 14.0 // between two boxes of a column
	laneGap   = 8.0  // between an edge passing through a column and its neighbours
	margin    = 8.0
	sweeps    = 24 // of the ordering: enough for a run's few stages
)

// point is a point of the picture.
type point struct{ x, y float64 }

// placed is a drawing laid out: a centre and a size for each node (in the
// drawing's order), and each edge's route from its tail to its head.
type placed struct {
	centres []point
	sizes   []point
	routes  [][]point
	width   float64
	height  float64
}

// vertex is a node of the layered graph: one of the drawing's nodes, or a
// bend of an edge that passes a column on its way.
type vertex struct {
	layer        int
	size         point
	preds, succs []int
}

// layout lays d out left to right.
func layout(d drawing) placed {
	n := len(d.nodes)
	index := make(map[string]int, n)
	vs := make([]vertex, n)
	for i, nd := range d.nodes {
		index[nd.id] = i
		vs[i].size = boxSize(nd.lines)
	}
	type arc struct {
		from, to int
		back     bool // drawn against the layers: it closes a cycle
	}
	arcs := make([]arc, 0, len(d.edges))
	for _, e := range d.edges {
		arcs = append(arcs, arc{from: index[e.from], to: index[e.to]})
	}

	// Columns: each node one past the furthest of what feeds it. An edge
	// that closes a cycle (a run's edges follow its files, which a
	// definition may pass around) is laid out reversed.
	out := make([][]int, n)
	for i, a := range arcs {
		out[a.from] = append(out[a.from], i)
	}
	state := make([]byte, n) // 0 new, 1 on the path, 2 done
	var order []int          // reverse postorder: a topological order
	var visit func(v int)
	visit = func(v int) {
		state[v] = 1
		for _, i := range out[v] {
			switch w := arcs[i].to; state[w] {
			case 0:
				visit(w)
			case 1:
				arcs[i].back = true
			}
		}
		state[v] = 2
		order = append(order, v)
	}
	for v := range n {
		if state[v] == 0 {
			visit(v)
		}
	}
	slices.Reverse(order)
	ins := make([][]int, n)
	for _, a := range arcs {
		from, to := a.from, a.to
		if a.back {
			from, to = to, from
		}
		ins[to] = append(ins[to], from)
	}
	layers := 0
	for _, v := range order {
		for _, u := range ins[v] {
			vs[v].layer = max(vs[v].layer, vs[u].layer+1)
		}
		layers = max(layers, vs[v].layer+1)
	}

	// Each edge becomes a chain of segments between adjacent columns, with
	// a bend in every column it passes.
	chains := make([][]int, len(arcs))
	for i, a := range arcs {
		from, to := a.from, a.to
		if a.back {
			from, to = to, from
		}
		chain := []int{from}
		for l := vs[from].layer + 1; l < vs[to].layer; l++ {
			vs = append(vs, vertex{layer: l})
			chain = append(chain, len(vs)-1)
		}
		chain = append(chain, to)
		for k := 1; k < len(chain); k++ {
			vs[chain[k-1]].succs = append(vs[chain[k-1]].succs, chain[k])
			vs[chain[k]].preds = append(vs[chain[k]].preds, chain[k-1])
		}
		if a.back {
			slices.Reverse(chain)
		}
		chains[i] = chain
	}

	rows := make([][]int, max(layers, 1))
	for v := range vs {
		rows[vs[v].layer] = append(rows[vs[v].layer], v)
	}
	rows = orderRows(vs, rows)
	ys := place(vs, rows)

	// Columns as wide as their widest box, the boxes centred in them.
	p := placed{centres: make([]point, n), sizes: make([]point, n), routes: make([][]point, len(arcs))}
	xs := make([]float64, len(rows))
	x := margin
	for l, row := range rows {
		w := 0.0
		for _, v := range row {
			w = max(w, vs[v].size.x)
		}
		xs[l] = x + w/2
		x += w + colGap
	}
	p.width = x - colGap + margin
	top, bottom := math.Inf(1), math.Inf(-1)
	for v := range vs {
		top = min(top, ys[v]-vs[v].size.y/2)
		bottom = max(bottom, ys[v]+vs[v].size.y/2)
	}
	shift := margin - top
	p.height = bottom - top + 2*margin
	at := func(v int) point { return point{xs[vs[v].layer], ys[v] + shift} }
	for v := range n {
		p.centres[v], p.sizes[v] = at(v), vs[v].size
	}
	for i, chain := range chains {
		route := make([]point, len(chain))
		for k, v := range chain {
			route[k] = at(v)
		}
		// From the tail's right side to the head's left side, as the
		// picture reads; an edge that closes a cycle goes back.
		first, last := chain[0], chain[len(chain)-1]
		dir := 1.0
		if arcs[i].back {
			dir = -1
		}
		route[0].x += dir * vs[first].size.x / 2
		route[len(route)-1].x -= dir * vs[last].size.x / 2
		p.routes[i] = route
	}
	return p
}

// boxSize is the size of a node's box: its longest line and its lines.
func boxSize(lines []string) point {
	longest := 0
	for _, l := range lines {
		longest = max(longest, utf8.RuneCountInString(l))
	}
	return point{float64(longest)*charWidth + 2*padX, float64(len(lines))*lineStep + 2*padY}
}

// orderRows orders each column so that few edges cross: sweeps that sort a
// column by the mean place of its neighbours in the column before (or,
// sweeping back, after), keeping the order with the fewest crossings.
// Ties keep the order they had, so that the drawing's order (the
// definition's) shows where nothing else decides.
func orderRows(vs []vertex, rows [][]int) [][]int {
	pos := make([]float64, len(vs))
	setPos := func(rows [][]int) {
		for _, row := range rows {
			for i, v := range row {
				pos[v] = float64(i)
			}
		}
	}
	setPos(rows)
	best, fewest := clone(rows), crossings(vs, rows, pos)
	keys := make([]float64, len(vs))
	for sweep := range sweeps {
		if fewest == 0 {
			break
		}
		down := sweep%2 == 0
		for k := 1; k < len(rows); k++ {
			l := k
			if !down {
				l = len(rows) - 1 - k
			}
			for _, v := range rows[l] {
				near := vs[v].preds
				if !down {
					near = vs[v].succs
				}
				keys[v] = pos[v] // nothing on that side: it stays
				if len(near) > 0 {
					sum := 0.0
					for _, u := range near {
						sum += pos[u]
					}
					keys[v] = sum / float64(len(near))
				}
			}
			slices.SortStableFunc(rows[l], func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
			for i, v := range rows[l] {
				pos[v] = float64(i)
			}
		}
		if c := crossings(vs, rows, pos); c < fewest {
			best, fewest = clone(rows), c
		}
	}
	return best
}

func clone(rows [][]int) [][]int {
	c := make([][]int, len(rows))
	for l, row := range rows {
		c[l] = slices.Clone(row)
	}
	return c
}

// crossings counts the pairs of segments that cross between adjacent
// columns: with the segments sorted by their tails, the pairs whose heads
// are in the other order (Barth, Jünger and Mutzel's count, with a
// Fenwick tree: a column of ten thousand jobs counts at once).
func crossings(vs []vertex, rows [][]int, pos []float64) int {
	total := 0
	var segs [][2]int
	for l := 0; l+1 < len(rows); l++ {
		segs = segs[:0]
		for _, u := range rows[l] {
			for _, v := range vs[u].succs {
				segs = append(segs, [2]int{int(pos[u]), int(pos[v])})
			}
		}
		slices.SortFunc(segs, func(a, b [2]int) int {
			return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
		})
		tree := make([]int, len(rows[l+1])+1)
		for i, s := range segs {
			// Segments seen so far whose head is after this one's.
			seen := 0
			for j := s[1] + 1; j > 0; j -= j & -j {
				seen += tree[j]
			}
			total += i - seen
			for j := s[1] + 1; j < len(tree); j += j & -j {
				tree[j]++
			}
		}
	}
	return total
}

// place gives each vertex its height in the picture: each column stacked
// in its order, then moved, sweep by sweep, towards the mean height of its
// neighbours as far as its order and the gaps between boxes allow.
func place(vs []vertex, rows [][]int) []float64 {
	ys := make([]float64, len(vs))
	gap := func(a, b int) float64 {
		g := rowGap
		if vs[a].size.y == 0 || vs[b].size.y == 0 {
			g = laneGap
		}
		return (vs[a].size.y+vs[b].size.y)/2 + g
	}
	for _, row := range rows {
		y := 0.0
		for i, v := range row {
			if i > 0 {
				y += gap(row[i-1], v)
			}
			ys[v] = y
		}
		for _, v := range row {
			ys[v] -= y / 2 // centred on the picture's middle
		}
	}
	want := make([]float64, len(vs))
	for sweep := range 8 {
		down := sweep%2 == 0
		for k := range rows {
			l := k
			if !down {
				l = len(rows) - 1 - k
			}
			row := rows[l]
			for _, v := range row {
				near := vs[v].preds
				if !down {
					near = vs[v].succs
				}
				want[v] = ys[v]
				if len(near) > 0 {
					sum := 0.0
					for _, u := range near {
						sum += ys[u]
					}
					want[v] = sum / float64(len(near))
				}
			}
			// The nearest heights to want that keep the order and the
			// gaps: pushed down from the top, pushed up from the bottom,
			// and the mean of the two, which keeps them too.
			fromTop := make([]float64, len(row))
			for i, v := range row {
				fromTop[i] = want[v]
				if i > 0 {
					fromTop[i] = max(want[v], fromTop[i-1]+gap(row[i-1], v))
				}
			}
			fromBottom := make([]float64, len(row))
			for i := len(row) - 1; i >= 0; i-- {
				v := row[i]
				fromBottom[i] = want[v]
				if i < len(row)-1 {
					fromBottom[i] = min(want[v], fromBottom[i+1]-gap(v, row[i+1]))
				}
			}
			for i, v := range row {
				ys[v] = (fromTop[i] + fromBottom[i]) / 2
			}
		}
	}
	return ys
}
