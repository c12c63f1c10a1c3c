package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/custodian-run/custodian/store"
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

// follower is a Follow running on a goroutine of its own, on a run opened
// for it, as a `custodian log --follow` process would run: each call of its
// emit arrives on batches, and its end on ended.
type follower struct {
	t       *testing.T
	batches chan []string
	ended   chan error
	cancel  context.CancelFunc
}

// follow starts following h's run with f.
func (h *harness) follow(f engine.LogFilter) *follower {
	h.t.Helper()
	o, err := engine.Open(h.reg, h.dir)
	require.NoError(h.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	fl := &follower{t: h.t, batches: make(chan []string, 100), ended: make(chan error, 1), cancel: cancel}
	go func() {
		defer o.Close()
		fl.ended <- o.Follow(ctx, f, func(events []engine.Event) error {
			fl.batches <- historyLines(events)
			return nil
		})
	}()
	h.t.Cleanup(func() {
		cancel()
		<-fl.ended
	})
	return fl
}

// followWait bounds every wait on a follower: it is a safety net for a
// test that would otherwise hang, not a measure of speed.
const followWait = 20 * time.Second

// next returns the next batch the follower emitted.
func (fl *follower) next() []string {
	fl.t.Helper()
	select {
	case b := <-fl.batches:
		return b
	case err := <-fl.ended:
		require.FailNow(fl.t, "the follower ended", "%v", err)
	case <-time.After(followWait):
		require.FailNow(fl.t, "the follower emitted nothing")
	}
	return nil
}

// end returns how Follow ended, once it has.
func (fl *follower) end() error {
	fl.t.Helper()
	select {
	case err := <-fl.ended:
		fl.ended <- err // for the cleanup
		return err
	case <-time.After(followWait):
		require.FailNow(fl.t, "the follower did not end")
	}
	return nil
}

// Follow emits the history first, then the events of each command as it
// commits, and ends without an error when its context is done.
func TestFollow_emitsTheHistoryThenEachCommit(t *testing.T) {
	h := startRun(t, statusTwoJobs, source)
	jobs := h.launch("a", "b")
	fl := h.follow(engine.LogFilter{})
	assert.Equal(t, []string{
		"start two",
		"step 1 launch",
		"handout a #1 .custodian/jobs/a/prompt-1.md",
		"handout b #1 .custodian/jobs/b/prompt-1.md",
	}, fl.next())

	_, err := h.o.Report(engine.ReportLaunchFailed, "b", "no worker for b")
	require.NoError(t, err)
	assert.Equal(t, []string{"report 1 launch-failed b after step 1: no worker for b"}, fl.next())

	h.work(jobs, nil)
	h.done()
	assert.Equal(t, []string{"step 2 done", "accept a #1", "accept b #1"}, fl.next())

	fl.cancel()
	require.NoError(t, fl.end())
	select {
	case b := <-fl.batches:
		assert.Fail(t, "the follower emitted after it ended", "%v", b)
	default:
	}
}

// A filter holds for what follows, too: a commit with nothing the filter
// keeps emits nothing.
func TestFollow_keepsWhatTheFilterKeeps(t *testing.T) {
	h := startRun(t, statusTwoJobs, source)
	jobs := h.launch("a", "b")
	fl := h.follow(engine.LogFilter{Job: "b", Since: 2})
	h.work(jobs, map[string]reply{"b": {output: invalidText}})
	h.launch("b")
	assert.Equal(t, []string{
		"refuse b #1 " + string(engine.BlockRefused),
		"keep b b.md -> .custodian/jobs/b/kept/1-b.md",
		"handout b #2 .custodian/jobs/b/prompt-2.md",
	}, fl.next(), "the history before step 2 and a's acceptance are not kept")

	_, err := h.o.Report(engine.ReportLaunchFailed, "", "the harness is down")
	require.NoError(t, err)
	_, err = h.o.Report(engine.ReportRepair, "b", "gave b its input")
	require.NoError(t, err)
	assert.Equal(t, []string{"report 2 repair b after step 2: gave b its input"}, fl.next(), "a report that names no job was kept")
}

// A history file numbered past the state's count is a command still
// committing, or one that ended before it did: it is not history until
// the state counts it, and then it is what that command wrote.
func TestFollow_waitsForTheStateToCountAHistoryFile(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	fl := h.follow(engine.LogFilter{})
	fl.next()

	historyWriteFuture(t, h, "never released")
	_, err := h.o.Report(engine.ReportRepair, "a", "a report commits no history")
	require.NoError(t, err)
	assert.Equal(t, []string{"report 1 repair a after step 1: a report commits no history"}, fl.next())

	h.write("a.md", validText)
	h.done()
	assert.Equal(t, []string{"step 2 done", "accept a #1"}, fl.next())
}

// Follow reads each record as every command does: one that cannot be
// trusted ends it with that error, as does a state that counts fewer
// commands than it did.
func TestFollow_endsAtARecordThatCannotBeTrusted(t *testing.T) {
	t.Run("garbage", func(t *testing.T) {
		h := startRun(t, oneJob(job("a")), source)
		h.launch("a")
		fl := h.follow(engine.LogFilter{})
		fl.next()
		h.write(".custodian/state.json", "garbage\n")
		err := fl.end()
		require.ErrorIs(t, err, store.ErrUntrusted)
		assert.Contains(t, err.Error(), "state.json")
	})
	t.Run("a state from before", func(t *testing.T) {
		h := startRun(t, oneJob(job("a")), source)
		h.launch("a")
		before := h.stateBytes()
		h.launch("a")
		fl := h.follow(engine.LogFilter{})
		fl.next()
		h.write(".custodian/state.json", string(before))
		err := fl.end()
		require.ErrorIs(t, err, store.ErrUntrusted)
		assert.Contains(t, err.Error(), "its seq went back from 2 to 1")
	})
}

// Follow takes no lock: it follows a run another process holds, and
// writes nothing.
func TestFollow_takesNoLockAndWritesNothing(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	run, err := store.Open(h.dir)
	require.NoError(t, err)
	unlock, err := run.Lock()
	require.NoError(t, err)
	defer unlock()
	before := statusSnapshot(t, h.dir)

	fl := h.follow(engine.LogFilter{Job: "a"})
	assert.Equal(t, []string{"handout a #1 .custodian/jobs/a/prompt-1.md"}, fl.next())
	fl.cancel()
	require.NoError(t, fl.end())
	assert.Equal(t, before, statusSnapshot(t, h.dir))
}

// An unknown job is refused before anything is emitted.
func TestFollow_refusesAnUnknownJob(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	fl := h.follow(engine.LogFilter{Job: "b"})
	require.ErrorIs(t, fl.end(), engine.ErrRefused)
	assert.Empty(t, fl.batches)
}
