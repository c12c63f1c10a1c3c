package picture

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/workflow/engine"
)

// graph is a graph of jobs named by edges "a>b".
func graph(nodes []string, edges ...[2]string) engine.Graph {
	var g engine.Graph
	for _, n := range nodes {
		g.Nodes = append(g.Nodes, engine.GraphNode{Subject: engine.Subject(n), State: engine.NodeAccepted, Attempts: 1})
	}
	for _, e := range edges {
		g.Edges = append(g.Edges, engine.GraphEdge{From: engine.Subject(e[0]), To: engine.Subject(e[1])})
	}
	return g
}

func fanout(n int) engine.Graph {
	nodes := []string{"gate"}
	var edges [][2]string
	for i := range n {
		name := fmt.Sprintf("audit-%03d", i)
		nodes = append(nodes, name)
		edges = append(edges, [2]string{"gate", name}, [2]string{name, "join"})
	}
	return graph(append(nodes, "join"), edges...)
}

func TestLayoutKeepsBoxesApartAndEdgesForward(t *testing.T) {
	tests := []struct {
		name string
		g    engine.Graph
		back int // edges that close a cycle
	}{
		{"one job", graph([]string{"a"}), 0},
		{"a chain with a shortcut", graph([]string{"a", "b", "c"}, [2]string{"a", "b"}, [2]string{"b", "c"}, [2]string{"a", "c"}), 0},
		{"a fan-out drawn whole", fanout(30), 0},
		{"a cycle", graph([]string{"a", "b", "c"}, [2]string{"a", "b"}, [2]string{"b", "c"}, [2]string{"c", "a"}), 1},
		{"two stages and a late join", graph([]string{"x", "y", "z", "w"}, [2]string{"x", "y"}, [2]string{"y", "z"}, [2]string{"x", "w"}, [2]string{"z", "w"}), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := draw(tt.g, Options{All: true})
			p := layout(d)
			require.Len(t, p.centres, len(d.nodes))
			require.Len(t, p.routes, len(d.edges))
			for i := range d.nodes {
				c, s := p.centres[i], p.sizes[i]
				assert.GreaterOrEqual(t, c.x-s.x/2, 0.0, "%s inside the picture", d.nodes[i].id)
				assert.GreaterOrEqual(t, c.y-s.y/2, 0.0)
				assert.LessOrEqual(t, c.x+s.x/2, p.width)
				assert.LessOrEqual(t, c.y+s.y/2, p.height)
				for j := range i {
					o, os := p.centres[j], p.sizes[j]
					apart := c.x+s.x/2 <= o.x-os.x/2 || o.x+os.x/2 <= c.x-s.x/2 || c.y+s.y/2 <= o.y-os.y/2 || o.y+os.y/2 <= c.y-s.y/2
					assert.True(t, apart, "%s and %s overlap", d.nodes[i].id, d.nodes[j].id)
				}
			}
			back := 0
			for i, e := range d.edges {
				route := p.routes[i]
				from, to := indexOf(d, e.from), indexOf(d, e.to)
				assert.Equal(t, p.centres[from].y, route[0].y, "an edge leaves its tail's side")
				assert.Equal(t, p.centres[to].y, route[len(route)-1].y, "an edge reaches its head's side")
				forward := true
				for k := 1; k < len(route); k++ {
					forward = forward && route[k].x > route[k-1].x
				}
				if !forward {
					back++
				}
			}
			assert.Equal(t, tt.back, back, "edges drawn right to left")
		})
	}
}

func indexOf(d drawing, id string) int {
	for i, n := range d.nodes {
		if n.id == id {
			return i
		}
	}
	return -1
}

func TestLayoutUncrossesWhatNeedNotCross(t *testing.T) {
	// a feeds d and b feeds c: in the drawing's order the two edges cross.
	g := graph([]string{"a", "b", "c", "d"}, [2]string{"a", "d"}, [2]string{"b", "c"})
	p := layout(draw(g, Options{}))
	assert.Less(t, p.centres[0].y, p.centres[1].y, "a above b, as the definition names them")
	assert.Less(t, p.centres[3].y, p.centres[2].y, "d moved above c, where a feeds it")

	// A long edge passes a column beside its boxes, not through them.
	g = graph([]string{"a", "b", "c"}, [2]string{"a", "b"}, [2]string{"b", "c"}, [2]string{"a", "c"})
	p = layout(draw(g, Options{}))
	route := p.routes[2]
	require.Len(t, route, 3, "a bend in b's column")
	b := p.centres[1]
	assert.True(t, route[1].y <= b.y-p.sizes[1].y/2 || route[1].y >= b.y+p.sizes[1].y/2, "the bend at %v is clear of b", route[1])
}

func TestCrossingsCountsEachPairOnce(t *testing.T) {
	// Two columns of three, every box of one to every box of the other:
	// of the nine segments, each pair (u1,v1), (u2,v2) with u1 < u2 and
	// v1 > v2 crosses: 3 choose 2 squared.
	vs := make([]vertex, 6)
	for u := range 3 {
		for v := 3; v < 6; v++ {
			vs[u].succs = append(vs[u].succs, v)
		}
	}
	pos := []float64{0, 1, 2, 0, 1, 2}
	assert.Equal(t, 9, crossings(vs, [][]int{{0, 1, 2}, {3, 4, 5}}, pos))
}
