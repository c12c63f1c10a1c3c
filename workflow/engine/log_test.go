package engine_test

import (
	"errors"
	"testing"

	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logOf reads the part of the run's history that f keeps through a freshly
// opened run, as a new `custodian log` process would.
func (h *harness) logOf(f engine.LogFilter) ([]engine.Event, error) {
	h.t.Helper()
	o, err := engine.Open(h.reg, h.dir)
	require.NoError(h.t, err)
	defer o.Close()
	return o.LogOf(f)
}

// A filter keeps a job's own events, the steps from one on, or both; no
// filter keeps the whole history.
func TestLogOf_keepsAJobsEventsAndTheStepsSince(t *testing.T) {
	h := historyScripted(t)
	const refused = string(engine.BlockRefused)
	tests := []struct {
		name   string
		filter engine.LogFilter
		want   []string
	}{
		{
			name:   "a job: its hand-outs, verdicts, kept files, blocks and the reports that name it",
			filter: engine.LogFilter{Job: "notes"},
			want: []string{
				"handout notes #1 .custodian/jobs/notes/prompt-1.md",
				"keep notes notes.problem.md -> .custodian/jobs/notes/kept/1-notes.problem.md",
				"block notes problem-report .custodian/jobs/notes/block-1.md: the worker wrote a problem report (permits repair)",
				"report 2 repair notes after step 2: put incoming.md in place",
				"handout notes #2 .custodian/jobs/notes/prompt-2.md",
				"accept notes #2",
			},
		},
		{
			name:   "the steps since 10: the start and earlier steps are left out",
			filter: engine.LogFilter{Since: 10},
			want: []string{
				"step 10 blocked",
				"block effect publish effect-inputs-changed .custodian/effect-blocks/publish.md: " +
					"the effect is completed and its inputs have changed since: input release.md (permits stop)",
				"resolve publish completed",
				"step 11 done",
			},
		},
		{
			name:   "a job since a step: its refusal, keep, block, the stop report and the release",
			filter: engine.LogFilter{Job: "a", Since: 7},
			want: []string{
				"refuse a #4 " + refused,
				"keep a a.md -> .custodian/jobs/a/kept/5-a.md",
				"block a " + refused + " .custodian/jobs/a/block-2.md: the output was refused by its validator, attempt 2 of 2 (permits stop)",
				"report 3 stop a after step 7: a stopped",
				"release a",
				"handout a #5 .custodian/jobs/a/prompt-5.md",
				"accept a #5",
			},
		},
		{
			name:   "a step past the last: nothing",
			filter: engine.LogFilter{Since: 12},
			want:   []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, err := h.logOf(tt.filter)
			require.NoError(t, err)
			assert.Equal(t, tt.want, historyLines(events))
		})
	}

	t.Run("no filter, or since step 0: the whole history", func(t *testing.T) {
		all := historyLog(t, h.reg, h.dir)
		for _, f := range []engine.LogFilter{{}, {Since: 0}} {
			events, err := h.logOf(f)
			require.NoError(t, err)
			assert.Equal(t, all, events)
		}
	})
}

// A job name the run has never had is refused, with a hint that names the
// run's jobs and the command that lists them; an effect's name is not a
// job's.
func TestLogOf_refusesAnUnknownJob(t *testing.T) {
	h := historyScripted(t)
	for _, name := range []string{"nobody", "publish", "workflow", "effect publish"} {
		t.Run(name, func(t *testing.T) {
			_, err := h.logOf(engine.LogFilter{Job: name})
			require.ErrorIs(t, err, engine.ErrRefused)
			var refused *engine.RefusedError
			require.True(t, errors.As(err, &refused))
			assert.Equal(t, "run "+h.dir+" has no job \""+name+"\"", refused.Reason)
			assert.Equal(t, "name one of the run's jobs (a, notes); custodian status "+h.dir+" lists them", refused.Hint)
		})
	}

	t.Run("before the first step", func(t *testing.T) {
		h := startRun(t, statusTwoJobs, source)
		_, err := h.logOf(engine.LogFilter{Job: "a"})
		var refused *engine.RefusedError
		require.True(t, errors.As(err, &refused), "%v", err)
		assert.Equal(t, "the run has named no job yet: a step names them", refused.Hint)
	})
}

// A job's former name stays in the history after its output carried over
// to its new name: the log of either name shows the carry.
func TestLogOf_aFormerNameKeepsItsHistory(t *testing.T) {
	v := newVersioned()
	h := finished(t, v)
	v.nameB, v.formerly = "brief", []string{"b"}
	h.reg = registryOf(t, v.definition())
	h.reopen()
	h.done()

	former, err := h.logOf(engine.LogFilter{Job: "b"})
	require.NoError(t, err)
	lines := historyLines(former)
	require.NotEmpty(t, lines)
	assert.Equal(t, "handout b #1 .custodian/jobs/b/prompt-1.md", lines[0])
	assert.True(t, containsEvent(former, engine.EventCarry, "brief", "b"), "the former name's log lacks the carry: %v", lines)

	renamed, err := h.logOf(engine.LogFilter{Job: "brief"})
	require.NoError(t, err)
	require.Len(t, renamed, 1)
	assert.Equal(t, engine.EventCarry, renamed[0].Type)
}
