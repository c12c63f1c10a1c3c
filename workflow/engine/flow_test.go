package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipelines is two items, each an audit then a follow-up that reads it,
// and a join of the follow-ups.
func pipelines() *workflow.Definition {
	return &workflow.Definition{Name: "pipelines", Run: func(ctx *workflow.Context) error {
		items := []string{"x", "y"}
		follow := make([]*workflow.Handle, len(items))
		paths := make([]func(), len(items))
		for i, item := range items {
			paths[i] = func() {
				ctx.Agent(job("audit-" + item)).Wait()
				f := job("follow-" + item)
				f.Inputs = []string{"audit-" + item + ".md"}
				follow[i] = ctx.Agent(f)
			}
		}
		ctx.Parallel(paths...)
		join := job("join")
		join.Inputs = []string{"follow-x.md", "follow-y.md"}
		ctx.Wait(follow...)
		ctx.Agent(join).Wait()
		return nil
	}}
}

// names lists an outcome's hand-outs by name.
func names(out engine.Outcome) []string {
	var ns []string
	for _, j := range out.Jobs {
		ns = append(ns, j.Name)
	}
	return ns
}

// A drive's step leaves the hand-outs it holds alone and goes on with
// every other path: the worker that ended is judged, and what it made
// ready is handed out, while the other item's audit still runs.
func TestStepLeaving_judgesWhatEndedAndLeavesWhatRuns(t *testing.T) {
	h := startRun(t, pipelines(), source)
	first := h.launch("audit-x", "audit-y")
	self := process(t, true)
	d := driving(t, h, self)
	require.NoError(t, d.BeginRound())
	for _, name := range []string{"audit-x", "audit-y"} {
		require.NoError(t, d.Lease(engine.Lease{Job: name, Attempt: 1, Launch: 1, Process: process(t, name == "audit-y")}))
	}
	writeFile(t, first["audit-x"].Output, validText)
	_, err := d.RecordLaunch(&engine.Launch{Job: "audit-x", Attempt: 1, Launch: 1, Outcome: "finished"}, nil, nil)
	require.NoError(t, err)

	before := h.state().Jobs["audit-y"]
	out, err := d.StepLeaving(map[string]int{"audit-y": 1})
	require.NoError(t, err)
	assert.Equal(t, engine.KindLaunch, out.Kind)
	assert.Equal(t, []string{"follow-x"}, names(out), "audit-x's follow-up, as soon as audit-x is accepted")
	assert.Equal(t, []string{"audit-y"}, out.Running)
	assert.Equal(t, before, h.state().Jobs["audit-y"], "a hand-out left running is neither judged nor charged")
	require.Len(t, inFlight(t, h).Workers, 1, "the running worker's lease stays")

	events, err := h.o.Log()
	require.NoError(t, err)
	last := events[len(events)-1]
	for i := len(events) - 1; events[i].Type != engine.EventStep; i-- {
		last = events[i-1]
	}
	var recorded engine.Outcome
	require.NoError(t, json.Unmarshal(last.Outcome, &recorded))
	assert.Equal(t, []string{"audit-y"}, recorded.Running, "the step's history says what it left running")

	// Nothing ready, something running: work is out, nothing stalls.
	out, err = d.StepLeaving(map[string]int{"audit-y": 1, "follow-x": 1})
	require.NoError(t, err)
	assert.Equal(t, engine.KindLaunch, out.Kind)
	assert.Empty(t, out.Jobs)
	assert.Equal(t, []string{"audit-y", "follow-x"}, out.Running, "a hand-out waiting for a place is left alone too")
	assert.Nil(t, h.state().Jobs["follow-x"].Trouble, "follow-x was not charged")
}

// A live worker the drive does not name as held refuses the step, as any
// step beside live workers is refused: its output would be judged as
// missing while it may yet write it.
func TestStepLeaving_refusesBesideAWorkerItDoesNotHold(t *testing.T) {
	h := startRun(t, pipelines(), source)
	h.launch("audit-x", "audit-y")
	d := driving(t, h, process(t, true))
	require.NoError(t, d.BeginRound())
	for _, name := range []string{"audit-x", "audit-y"} {
		require.NoError(t, d.Lease(engine.Lease{Job: name, Attempt: 1, Launch: 1, Process: process(t, true)}))
	}
	before := h.stateBytes()
	_, err := d.StepLeaving(map[string]int{"audit-y": 1})
	var alive *engine.WorkersAliveError
	require.ErrorAs(t, err, &alive)
	require.Len(t, alive.Workers, 1)
	assert.Equal(t, "audit-x", alive.Workers[0].Job)
	assert.Equal(t, before, h.stateBytes(), "the refused step changed the state")

	_, err = d.StepLeaving(map[string]int{"audit-x": 2, "audit-y": 1})
	assert.ErrorAs(t, err, &alive, "held at another attempt than its worker's")
}

// A step without drive judges the round as over, as it always has: a
// hand-out without an output is a failed attempt.
func TestStep_withoutADriveJudgesTheRoundAsOver(t *testing.T) {
	h := startRun(t, pipelines(), source)
	first := h.launch("audit-x", "audit-y")
	writeFile(t, first["audit-x"].Output, validText)
	out := h.step()
	assert.Equal(t, []string{"audit-y", "follow-x"}, names(out))
	assert.Empty(t, out.Running)
	assert.Equal(t, 1, h.state().Jobs["audit-y"].Trouble.Failures)
}

// A drive killed with hand-outs queued leaves them unlaunched, some older
// than the last step: the next drive launches every one of them.
func TestUnlaunched_findsHandoutsOlderThanTheLastStep(t *testing.T) {
	h := startRun(t, pipelines(), source)
	first := h.launch("audit-x", "audit-y")
	d := driving(t, h, process(t, true))
	require.NoError(t, d.BeginRound())
	require.NoError(t, d.Lease(engine.Lease{Job: "audit-x", Attempt: 1, Launch: 1, Process: process(t, false)}))
	writeFile(t, first["audit-x"].Output, validText)
	_, err := d.RecordLaunch(&engine.Launch{Job: "audit-x", Attempt: 1, Launch: 1, Outcome: "finished"}, nil, nil)
	require.NoError(t, err)
	out, err := d.StepLeaving(map[string]int{"audit-y": 1})
	require.NoError(t, err)
	require.Equal(t, []string{"follow-x"}, names(out))
	require.NoError(t, d.End(), "killed: nothing queued is recorded")

	next := driving(t, h, process(t, false))
	unlaunched, err := next.Unlaunched()
	require.NoError(t, err)
	require.Len(t, unlaunched, 2)
	assert.Equal(t, first["audit-y"], unlaunched[0], "as step 1 handed it out")
	assert.Equal(t, out.Jobs[0], unlaunched[1])
}

// A hand-out the drive holds that the replay no longer names (the data
// the definition reads changed while its worker ran) is still out: the run
// is not done while its worker may write.
func TestStepLeaving_aHeldJobTheReplayNoLongerNamesIsStillOut(t *testing.T) {
	def := &workflow.Definition{Name: "listed", Run: func(ctx *workflow.Context) error {
		data, err := os.ReadFile(ctx.Path("items.txt"))
		if err != nil {
			return err
		}
		var handles []*workflow.Handle
		for _, name := range strings.Fields(string(data)) {
			handles = append(handles, ctx.Agent(job(name)))
		}
		ctx.Wait(handles...)
		return nil
	}}
	h := startRun(t, def, map[string]string{"source.md": "the source text\n", "items.txt": "a b\n"})
	first := h.launch("a", "b")
	d := driving(t, h, process(t, true))
	require.NoError(t, d.BeginRound())
	require.NoError(t, d.Lease(engine.Lease{Job: "b", Attempt: 1, Launch: 1, Process: process(t, true)}))
	writeFile(t, first["a"].Output, validText)
	writeFile(t, filepath.Join(h.dir, "items.txt"), "a\n")

	out, err := d.StepLeaving(map[string]int{"b": 1})
	require.NoError(t, err)
	assert.Equal(t, engine.KindLaunch, out.Kind, "done while b's worker runs")
	assert.Equal(t, []string{"b"}, out.Running)
}
