package engine

import (
	"slices"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// Graph is a run as its records give it: the jobs the last replay named and
// the effects the run journaled or owes, each with where it stands, and an
// edge from each job to every job or effect that declared its output as an
// input. It is what `custodian graph` and `view` draw.
type Graph struct {
	Run        string      `json:"run"`
	Definition string      `json:"definition"`
	Nodes      []GraphNode `json:"nodes"` // jobs by name, then effects by name
	Edges      []GraphEdge `json:"edges"` // by From, then To
}

// GraphNode is a job or an effect of a Graph.
type GraphNode struct {
	Subject Subject `json:"subject"`
	// State is where it stands: for a job one of NodeAccepted, NodeAwaited,
	// NodeRunning, NodeRefused, NodeBlocked, NodeStopped and NodePending;
	// for an effect one of NodeCompleted, NodeStarted, NodeAbsent, NodeOwed,
	// NodeUncertain and NodeBlocked.
	State    string `json:"state"`
	Attempts int    `json:"attempts"` // a job's attempts; an effect's runs
	Output   string `json:"output"`   // a job's output, run-relative; "" for an effect
}

// GraphEdge says that From's output is an input of To.
type GraphEdge struct {
	From Subject `json:"from"`
	To   Subject `json:"to"`
}

// The states of a graph's nodes.
const (
	NodeAccepted  = "accepted"  // the job's output is accepted
	NodeAwaited   = "awaited"   // handed out; its output is awaited
	NodeRunning   = "running"   // handed out, and a worker that custodian drive launched runs it now
	NodeRefused   = "refused"   // its last attempt was refused, and it is handed out again
	NodeBlocked   = "blocked"   // blocked at the last step
	NodeStopped   = "stopped"   // stopped until the operator releases it
	NodePending   = "pending"   // named, not yet handed out
	NodeCompleted = "completed" // the effect took place
	NodeStarted   = "started"   // the effect started and its end is not recorded
	NodeAbsent    = "absent"    // the operator resolved the effect absent: it runs again when reached
	NodeOwed      = "owed"      // required, and the definition no longer reaches it
	NodeUncertain = "uncertain" // whether the effect took place is uncertain
)

// Graph reads the run's graph from its records. Like Status, it takes no
// lock and writes nothing.
func (run *Run) Graph() (Graph, error) {
	rec, err := run.read()
	if err != nil {
		return Graph{}, err
	}
	// What changed since an acceptance is not drawn.
	s, err := run.status(rec, false)
	if err != nil {
		return Graph{}, err
	}
	return graphOf(s, rec.state, rec.effects), nil
}

// graphOf draws the graph of the status s of the records st and effects.
func graphOf(s Status, st *store.State, effects map[string]*store.Effect) Graph {
	g := Graph{Run: s.Run, Definition: s.Definition, Nodes: []GraphNode{}, Edges: []GraphEdge{}}
	running := map[string]bool{}
	if s.Round != nil {
		for _, w := range s.Round.Workers {
			running[w.Job] = true
		}
	}
	named := map[string]bool{}
	for _, name := range st.Named {
		named[name] = true
	}
	producer := map[string]Subject{} // an output → the job that writes it
	for _, j := range s.Jobs {
		if !named[j.Name] {
			continue
		}
		js := st.Jobs[j.Name]
		n := GraphNode{Subject: JobSubject(j.Name), State: jobNodeState(j, js, running[j.Name]), Attempts: j.Attempts}
		if js.Input != nil {
			n.Output = js.Input.Output
			producer[n.Output] = n.Subject
		}
		g.Nodes = append(g.Nodes, n)
	}
	feeds := func(to Subject, inputs []store.FileHash) {
		for _, f := range inputs {
			if from, ok := producer[f.Path]; ok && from != to {
				g.Edges = append(g.Edges, GraphEdge{From: from, To: to})
			}
		}
	}
	for _, j := range s.Jobs {
		if js := st.Jobs[j.Name]; named[j.Name] && js.Input != nil {
			feeds(JobSubject(j.Name), js.Input.Files)
		}
	}
	owed := map[string]bool{}
	for _, name := range st.Unreached {
		owed[name] = true
	}
	for _, e := range s.Effects {
		n := GraphNode{Subject: EffectSubject(e.Name), State: e.Status, Attempts: e.Runs}
		switch {
		case e.Uncertain != "":
			n.State = NodeUncertain
		case e.Block != nil:
			n.State = NodeBlocked
		case owed[e.Name] && e.Status != store.EffectCompleted:
			n.State = NodeOwed
		}
		g.Nodes = append(g.Nodes, n)
		if j := effects[e.Name]; j != nil {
			feeds(n.Subject, j.Inputs)
		}
	}
	for _, e := range s.Uncertain {
		// Uncertain without a journal to list it under Effects.
		g.Nodes = append(g.Nodes, GraphNode{Subject: EffectSubject(e.Name), State: NodeUncertain})
	}
	slices.SortFunc(g.Edges, func(a, b GraphEdge) int {
		if c := strings.Compare(string(a.From), string(b.From)); c != 0 {
			return c
		}
		return strings.Compare(string(a.To), string(b.To))
	})
	g.Edges = slices.Compact(g.Edges)
	return g
}

// jobNodeState is where a named job stands, in the words of a graph.
func jobNodeState(j JobStatus, js *store.JobState, running bool) string {
	switch j.State {
	case JobAccepted:
		return NodeAccepted
	case JobBlocked:
		return NodeBlocked
	case JobStopped:
		return NodeStopped
	case JobAwaited:
		switch {
		case running:
			return NodeRunning
		case js.Trouble != nil && js.Trouble.Failures > 0:
			return NodeRefused
		}
		return NodeAwaited
	}
	return NodePending
}
