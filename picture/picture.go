// Package picture draws a run's graph (engine.Graph): as Mermaid, which a
// GitHub page renders from Markdown, as Graphviz's DOT, and as SVG laid
// out here in layers, left to right, as Graphviz's dot lays graphs out
// (layout.go), for the pages of `custodian view` and `serve`.
//
// Everything in a picture that comes from a run (a job's name, a path) is
// text from an untrusted source: each format's writer escapes it so that it
// is only ever a label, whatever characters it holds.
package picture

import (
	"fmt"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/workflow/engine"
)

// Options say how a picture is drawn.
type Options struct {
	// All draws every job as a node of its own; otherwise a fan-out of
	// more than Wide alike jobs is one node with their count.
	All bool
}

// Wide is how many alike jobs (the same jobs feed them, and they feed the
// same jobs and effects) are drawn one by one; more are drawn as one node.
// Thirty audits side by side make a picture nobody reads.
const Wide = 8

// node is a node as drawn: one job or effect, or a group of alike jobs.
type node struct {
	id      string   // n1, n2, ...: the formats' own identifiers, never a run's text
	lines   []string // the label, a line each
	state   string   // the state its colour says: the gravest of a group's
	subject engine.Subject
	members []engine.Subject // a group's jobs; nil for a single node
}

type edge struct{ from, to string }

// drawing is a graph as drawn: its nodes in the graph's order (a group
// where its first job was), and its edges, deduplicated, in that order.
type drawing struct {
	nodes []node
	edges []edge
}

// gravity orders states from the one a person must look at first: a
// group's colour is its gravest member's.
var gravity = []string{engine.NodeStopped, engine.NodeBlocked, engine.NodeUncertain, engine.NodeOwed, engine.NodeStarted,
	engine.NodeRefused, engine.NodeRunning, engine.NodeAwaited, engine.NodePending, engine.NodeAbsent, engine.NodeAccepted, engine.NodeCompleted}

func grave(a, b string) string {
	ia, ib := slices.Index(gravity, a), slices.Index(gravity, b)
	if ib >= 0 && (ia < 0 || ib < ia) {
		return b
	}
	return a
}

// draw lays out g's nodes and edges, grouping wide fan-outs unless opt.All.
func draw(g engine.Graph, opt Options) drawing {
	preds := map[engine.Subject][]engine.Subject{}
	succs := map[engine.Subject][]engine.Subject{}
	for _, e := range g.Edges {
		succs[e.From] = append(succs[e.From], e.To)
		preds[e.To] = append(preds[e.To], e.From)
	}
	// Alike jobs have the same neighbours on both sides.
	key := func(n engine.GraphNode) string {
		if _, ok := n.Subject.Job(); !ok {
			return ""
		}
		return fmt.Sprint(preds[n.Subject], "|", succs[n.Subject])
	}
	groups := map[string][]engine.GraphNode{}
	if !opt.All {
		for _, n := range g.Nodes {
			if k := key(n); k != "" {
				groups[k] = append(groups[k], n)
			}
		}
	}
	var d drawing
	ids := map[engine.Subject]string{}
	drawn := map[string]bool{}
	for _, n := range g.Nodes {
		k := key(n)
		if members := groups[k]; len(members) > Wide {
			if drawn[k] {
				continue
			}
			drawn[k] = true
			id := fmt.Sprintf("n%d", len(d.nodes)+1)
			d.nodes = append(d.nodes, groupNode(id, members))
			for _, m := range members {
				ids[m.Subject] = id
			}
			continue
		}
		id := fmt.Sprintf("n%d", len(d.nodes)+1)
		ids[n.Subject] = id
		d.nodes = append(d.nodes, node{id: id, lines: []string{n.Subject.String(), nodeWords(n)}, state: n.State, subject: n.Subject})
	}
	seen := map[edge]bool{}
	for _, e := range g.Edges {
		de := edge{ids[e.From], ids[e.To]}
		if de.from == "" || de.to == "" || de.from == de.to || seen[de] {
			continue
		}
		seen[de] = true
		d.edges = append(d.edges, de)
	}
	return d
}

// nodeWords says where a node stands and how often it was tried.
func nodeWords(n engine.GraphNode) string {
	if _, ok := n.Subject.Effect(); ok {
		return n.State + ", " + count(n.Attempts, "run", "runs")
	}
	return n.State + ", " + count(n.Attempts, "attempt", "attempts")
}

// groupNode is one node for many alike jobs: their common name, how many,
// and how many stand in each state.
func groupNode(id string, members []engine.GraphNode) node {
	n := node{id: id, state: members[0].State}
	states := map[string]int{}
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Subject.String()
		states[m.State]++
		n.state = grave(n.state, m.State)
		n.members = append(n.members, m.Subject)
	}
	var counts []string
	for _, s := range gravity {
		if states[s] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", states[s], s))
		}
	}
	n.lines = []string{fmt.Sprintf("%s (%d jobs)", commonName(names), len(members)), strings.Join(counts, ", ")}
	return n
}

// commonName names a group by what its jobs' names share: "audit-*" for
// audit-axios and audit-lodash; else the first and the last name.
func commonName(names []string) string {
	prefix := names[0]
	for _, name := range names[1:] {
		for !strings.HasPrefix(name, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if i := strings.LastIndexAny(prefix, "-_."); i > 0 {
		return prefix[:i+1] + "*"
	}
	return names[0] + " … " + names[len(names)-1]
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// colours are each state's fill and line, as a person reads them: green
// done, blue at work, amber waiting on something, red for the operator.
var colours = map[string][2]string{
	engine.NodeAccepted:  {"#dcfce7", "#15803d"},
	engine.NodeCompleted: {"#dcfce7", "#15803d"},
	engine.NodeRunning:   {"#dbeafe", "#1d4ed8"},
	engine.NodeAwaited:   {"#e0f2fe", "#0369a1"},
	engine.NodeRefused:   {"#fef3c7", "#b45309"},
	engine.NodePending:   {"#f3f4f6", "#6b7280"},
	engine.NodeAbsent:    {"#f3f4f6", "#6b7280"},
	engine.NodeStarted:   {"#fef3c7", "#b45309"},
	engine.NodeOwed:      {"#fee2e2", "#b91c1c"},
	engine.NodeUncertain: {"#fee2e2", "#b91c1c"},
	engine.NodeBlocked:   {"#fee2e2", "#b91c1c"},
	engine.NodeStopped:   {"#fecaca", "#7f1d1d"},
}

// colour is a state's fill and line; grey for one it does not know.
func colour(state string) (fill, line string) {
	c, ok := colours[state]
	if !ok {
		return "#f3f4f6", "#6b7280"
	}
	return c[0], c[1]
}
