package engine_test

import (
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func graphOf(t *testing.T, o *engine.Run) engine.Graph {
	t.Helper()
	g, err := o.Graph()
	require.NoError(t, err)
	return g
}

func TestGraphDrawsTheRecords(t *testing.T) {
	published := 0
	def := &workflow.Definition{Name: "drawn", Run: func(ctx *workflow.Context) error {
		a := ctx.Agent(job("a"))
		b := job("b")
		b.Inputs = []string{"a.md"}
		ctx.Wait(a)
		ctx.Agent(b).Wait()
		ctx.Effect("publish", func() error { published++; return nil }, workflow.EffectInputs("b.md"))
		ctx.Agent(job("c")).Wait()
		return nil
	}}
	h := startRun(t, def, source)
	h.work(h.launch("a"), map[string]reply{"a": {output: "no heading\n"}})
	retry := h.launch("a")
	g := graphOf(t, h.o)
	assert.Equal(t, []engine.GraphNode{{Subject: "a", State: engine.NodeRefused, Attempts: 2, Output: "a.md"}}, g.Nodes,
		"a refused attempt handed out again")

	h.work(retry, nil)
	h.work(h.launch("b"), nil)
	h.launch("c")
	g = graphOf(t, h.o)
	assert.Equal(t, []engine.GraphNode{
		{Subject: "a", State: engine.NodeAccepted, Attempts: 2, Output: "a.md"},
		{Subject: "b", State: engine.NodeAccepted, Attempts: 1, Output: "b.md"},
		{Subject: "c", State: engine.NodeAwaited, Attempts: 1, Output: "c.md"},
		{Subject: engine.EffectSubject("publish"), State: engine.NodeCompleted, Attempts: 1},
	}, g.Nodes)
	assert.Equal(t, []engine.GraphEdge{{From: "a", To: "b"}, {From: "b", To: engine.EffectSubject("publish")}}, g.Edges,
		"an edge from each output to what declared it an input")
	assert.Equal(t, 1, published)
}

func TestGraphShowsAJobARoundRuns(t *testing.T) {
	h := leased(t, process(t, true))
	g := graphOf(t, h.o)
	require.Len(t, g.Nodes, 1)
	assert.Equal(t, engine.NodeRunning, g.Nodes[0].State)
}
