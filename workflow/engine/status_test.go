package engine_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The advice strings a status gives, as the loop instruction words them.
const (
	statusAdviceNoStep   = "step: no step has run"
	statusAdviceRepair   = "repair within the scope, report each repair, then step; or stop (%s)"
	statusAdviceStop     = "stop and report it: a block permits only stopping (%s)"
	statusAdviceFinished = "nothing: the run is finished"
	statusNothing        = "nothing"
)

func statusAdviceLaunch(step int) string {
	return fmt.Sprintf("launch the workers of step %d that have not started, wait for all of them, then step", step)
}

// status reads the run's status through a freshly opened run, as a new
// `custodian status` process would.
func (h *harness) status() engine.Status {
	h.t.Helper()
	o, err := engine.Open(h.reg, h.dir)
	require.NoError(h.t, err)
	s, err := o.Status()
	require.NoError(h.t, err)
	return s
}

// statusJob returns the named job's status; the job must be listed.
func statusJob(t *testing.T, s engine.Status, name string) engine.JobStatus {
	t.Helper()
	for _, j := range s.Jobs {
		if j.Name == name {
			return j
		}
	}
	require.FailNow(t, "the status lists no job "+name, "jobs: %+v", s.Jobs)
	return engine.JobStatus{}
}

// statusTwoJobs names a and b, each reading source.md, and waits on both.
var statusTwoJobs = &workflow.Definition{Name: "two", Run: func(ctx *workflow.Context) error {
	ctx.Wait(ctx.Agent(job("a")), ctx.Agent(job("b")))
	return nil
}}

func TestRun_StatusBeforeTheFirstStep(t *testing.T) {
	h := startRun(t, statusTwoJobs, source)
	s := h.status()
	assert.Equal(t, h.dir, s.Run)
	assert.Equal(t, "two", s.Definition)
	assert.NotEmpty(t, s.StartedAt)
	assert.Nil(t, s.Last)
	assert.Zero(t, s.Steps)
	assert.Empty(t, s.Jobs)
	assert.Empty(t, s.Effects)
	assert.Nil(t, s.Workflow)
	assert.Equal(t, statusAdviceNoStep, s.Agent)
	assert.Equal(t, statusNothing, s.Operator)
}

// One job goes through every state a job of a running definition can be in:
// awaited, refused and awaited again, blocked with a repair permitted,
// stopped, and pending after the release; the other is accepted throughout.
func TestStatusFollowsAJobThroughRefusalBlockStopAndRelease(t *testing.T) {
	h := startRun(t, statusTwoJobs, source)

	h.launch("a", "b")
	s := h.status()
	require.NotNil(t, s.Last)
	assert.Equal(t, 1, s.Last.Step)
	assert.Equal(t, engine.KindLaunch, s.Last.Outcome.Kind)
	assert.NotEmpty(t, s.Last.At)
	for _, name := range []string{"a", "b"} {
		j := statusJob(t, s, name)
		assert.Equal(t, engine.JobAwaited, j.State, name)
		assert.Equal(t, 1, j.Attempts, name)
		assert.Nil(t, j.LastFailure, name)
		assert.Nil(t, j.Block, name)
	}
	assert.Equal(t, statusAdviceLaunch(1), s.Agent)
	assert.Equal(t, statusNothing, s.Operator)

	// a is accepted; b is refused and handed out again.
	writeFile(t, h.path("a.md"), validText)
	writeFile(t, h.path("b.md"), invalidText)
	h.launch("b")
	s = h.status()
	a := statusJob(t, s, "a")
	assert.Equal(t, engine.JobAccepted, a.State)
	assert.Equal(t, 1, a.Attempts)
	assert.Empty(t, a.Changed)
	b := statusJob(t, s, "b")
	assert.Equal(t, engine.JobAwaited, b.State)
	assert.Equal(t, 2, b.Attempts)
	assert.Equal(t, &store.Failure{Kind: string(engine.BlockRefused), Reason: "the output was refused by its validator"}, b.LastFailure)
	assert.Equal(t, statusAdviceLaunch(2), s.Agent)

	// The retry is refused too: b blocks, and a repair is permitted.
	writeFile(t, h.path("b.md"), invalidText)
	blocks := h.blocked()
	s = h.status()
	b = statusJob(t, s, "b")
	assert.Equal(t, engine.JobBlocked, b.State)
	require.NotNil(t, b.Block)
	assert.Equal(t, blocks["b"], *b.Block, "the status gives the block as the step did")
	assert.Equal(t, engine.BlockRefused, b.Block.Kind)
	assert.Equal(t, "the output was refused by its validator, attempt 2 of 2", b.Block.Reason)
	assert.Equal(t, engine.PermitRepair, b.Block.Permitted)
	assert.FileExists(t, b.Block.Record)
	assert.Equal(t, h.path(".custodian/jobs/b/block-1.md"), b.Block.Record)
	assert.Equal(t, &store.Failure{Kind: string(engine.BlockRefused), Reason: b.Block.Reason}, b.LastFailure)
	assert.Equal(t, engine.JobAccepted, statusJob(t, s, "a").State)
	assert.Equal(t, 3, s.Last.Step)
	assert.Equal(t, engine.KindBlocked, s.Last.Outcome.Kind)
	assert.Equal(t, fmt.Sprintf(statusAdviceRepair, "b"), s.Agent)
	assert.Equal(t, "if the agent orchestrator stopped, fix the cause, then: custodian step "+h.dir, s.Operator,
		"a repair is the agent orchestrator's; the operator steps only when it stopped")

	// The second cycle ends in the second block, which permits only stopping.
	writeFile(t, h.path("b.md"), invalidText)
	h.launch("b")
	writeFile(t, h.path("b.md"), invalidText)
	h.launch("b")
	writeFile(t, h.path("b.md"), invalidText)
	require.Equal(t, engine.PermitStop, h.blocked()["b"].Permitted)
	s = h.status()
	b = statusJob(t, s, "b")
	assert.Equal(t, engine.JobStopped, b.State)
	assert.Equal(t, 4, b.Attempts)
	require.NotNil(t, b.Block)
	assert.Equal(t, engine.PermitStop, b.Block.Permitted)
	assert.Equal(t, h.path(".custodian/jobs/b/block-2.md"), b.Block.Record)
	assert.Equal(t, fmt.Sprintf(statusAdviceStop, "b"), s.Agent)
	assert.Equal(t, "fix the cause, then: custodian release "+h.dir+" b", s.Operator)
	assert.Empty(t, s.Settled)

	// Released: the block of the last outcome no longer stands. The job is
	// owed a hand-out, its last failure is still known, and the agent may
	// step again.
	require.NoError(t, h.o.Release("b"))
	s = h.status()
	b = statusJob(t, s, "b")
	assert.Equal(t, engine.JobPending, b.State)
	assert.Nil(t, b.Block)
	require.NotNil(t, b.LastFailure)
	assert.Equal(t, "the output was refused by its validator, attempt 2 of 2", b.LastFailure.Reason)
	assert.Equal(t, []engine.Subject{"b"}, s.Settled)
	assert.Equal(t, engine.KindBlocked, s.Last.Outcome.Kind, "the last outcome is the record of step 6")
	assert.Equal(t, "step: after step 6 the operator released b", s.Agent)
	assert.Equal(t, statusNothing, s.Operator)

	// The next step hands b out again; the release is no longer news.
	h.launch("b")
	s = h.status()
	assert.Empty(t, s.Settled)
	assert.Equal(t, statusAdviceLaunch(7), s.Agent)
}

// A step that blocks hands nothing out, so a job whose attempt failed in it
// is owed a hand-out: it is pending, not awaited and not blocked.
func TestStatusJobWhoseFailureWasCountedInABlockedStepIsPending(t *testing.T) {
	h := startRun(t, statusTwoJobs, source)
	h.work(h.launch("a", "b"), map[string]reply{
		"a": {problem: "I cannot do this.\n"},
		"b": {}, // no output
	})
	h.blocked()

	s := h.status()
	a := statusJob(t, s, "a")
	assert.Equal(t, engine.JobBlocked, a.State)
	require.NotNil(t, a.Block)
	assert.Equal(t, engine.BlockProblemReport, a.Block.Kind)

	b := statusJob(t, s, "b")
	assert.Equal(t, engine.JobPending, b.State)
	assert.Nil(t, b.Block, "b's failure was counted, and it did not block")
	assert.Equal(t, 1, b.Attempts)
	assert.Equal(t, &store.Failure{Kind: string(engine.BlockNoOutput), Reason: "no output"}, b.LastFailure)
	assert.Equal(t, fmt.Sprintf(statusAdviceRepair, "a"), s.Agent)
}

// A job the definition stops naming keeps its record, and the status says
// it is no longer part of the run's course.
func TestStatusJobNoLongerNamed(t *testing.T) {
	def := &workflow.Definition{Name: "switch", Run: func(ctx *workflow.Context) error {
		second := "b"
		if _, err := os.Stat(ctx.Path("switch")); err == nil {
			second = "c"
		}
		ctx.Wait(ctx.Agent(job("a")), ctx.Agent(job(second)))
		return nil
	}}
	h := startRun(t, def, source)
	h.launch("a", "b")
	h.write("a.md", validText)
	h.write("switch", "on\n")
	h.launch("c")

	// A replay that ended at a wait may not have reached a job yet: b is
	// still part of the course until a replay runs to its end without it.
	s := h.status()
	assert.Equal(t, engine.JobAwaited, statusJob(t, s, "b").State)
	assert.Equal(t, engine.JobAwaited, statusJob(t, s, "c").State)

	h.write("c.md", validText)
	h.done()
	s = h.status()
	b := statusJob(t, s, "b")
	assert.Equal(t, engine.JobNoLongerUsed, b.State)
	assert.Equal(t, 1, b.Attempts)
	assert.Equal(t, engine.JobAccepted, statusJob(t, s, "a").State)
	assert.Equal(t, engine.JobAccepted, statusJob(t, s, "c").State)
}

// An accepted job whose recorded inputs or output changed since is reopened
// by the next step; the status names what changed, without a step.
func TestStatusNamesWhatChangedSinceAnAcceptance(t *testing.T) {
	cases := []struct {
		name   string
		change func(h *harness)
		want   []string
	}{
		{"nothing", func(*harness) {}, []string{}},
		{"an input", func(h *harness) { h.write("source.md", "other text\n") }, []string{"input source.md"}},
		{"the output", func(h *harness) { h.write("a.md", validText+"more\n") }, []string{"output a.md"}},
		{"both", func(h *harness) {
			h.write("source.md", "other text\n")
			h.write("a.md", validText+"more\n")
		}, []string{"input source.md", "output a.md"}},
		{"a removed input", func(h *harness) { h.remove("source.md") }, []string{"input source.md (removed)"}},
		{"a removed output", func(h *harness) { h.remove("a.md") }, []string{"output a.md (removed)"}},
		{"an output edited back to its accepted bytes", func(h *harness) {
			h.write("a.md", "changed\n")
			h.write("a.md", validText)
		}, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startRun(t, oneJob(job("a")), source)
			h.runToDone()
			tc.change(h)

			s := h.status()
			a := statusJob(t, s, "a")
			assert.Equal(t, engine.JobAccepted, a.State)
			assert.Equal(t, tc.want, a.Changed)
			if len(tc.want) == 0 {
				assert.Equal(t, statusAdviceFinished, s.Agent)
			} else {
				assert.Equal(t, "step: what was accepted changed after the run was done at step 2 (a); the next step judges it again", s.Agent,
					"a finished run whose accepted work changed is not finished")
			}
		})
	}
}

// The output path comes from the hand-out, which recorded absolute paths;
// a run that moved since still names its output.
func TestStatusNamesTheOutputOfAMovedRun(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.runToDone()
	moved := filepath.Join(filepath.Dir(h.dir), "moved")
	require.NoError(t, os.Rename(h.dir, moved))
	h.dir = moved
	h.write("a.md", "# edited\n")

	assert.Equal(t, []string{"output a.md"}, statusJob(t, h.status(), "a").Changed)
}

func TestStatusShowsEffects(t *testing.T) {
	r := effectPublishRun(t, "files")
	r.expect(engine.KindDone)

	s, err := r.open().Status()
	require.NoError(t, err)
	require.Len(t, s.Effects, 1)
	e := s.Effects[0]
	assert.Equal(t, "publish", e.Name)
	assert.Equal(t, store.EffectCompleted, e.Status)
	assert.Equal(t, 1, e.Runs)
	assert.Equal(t, "step", e.By)
	assert.NotEmpty(t, e.At)
	assert.Empty(t, e.Changed)
	assert.False(t, e.Interrupted)
	assert.Equal(t, statusAdviceFinished, s.Agent)

	// The effect's input is the draft, a job's output: both the job and the
	// effect name the change.
	r.write("draft.md", "# another draft\n")
	s, err = r.open().Status()
	require.NoError(t, err)
	assert.Equal(t, []string{"draft.md"}, s.Effects[0].Changed)
	assert.Equal(t, []string{"output draft.md"}, statusJob(t, s, "draft").Changed)
	assert.Equal(t, "step: what was accepted changed after the run was done at step 2 (draft, effect publish); the next step judges it again", s.Agent)
}

// The effect's fate is open: first while nothing has judged the ended
// process, then while the operator has not resolved it, and not after.
func TestStatusOfAnEffectWhoseFateIsOpen(t *testing.T) {
	r := effectPublishRun(t, "files")
	r.crashStep("part")

	// No committed command has recorded the start: a process ended inside it
	// (or a step is inside it now). The agent must not step on its own.
	s, err := r.open().Status()
	require.NoError(t, err)
	require.Len(t, s.Effects, 1)
	assert.True(t, s.Effects[0].Interrupted)
	assert.Equal(t, store.EffectStarted, s.Effects[0].Status)
	assert.Equal(t, engine.KindLaunch, s.Last.Outcome.Kind)
	assert.Equal(t, "stop and report it: effect publish started and its end is not recorded; "+
		"a step is inside it or a process ended inside it", s.Agent)
	assert.Equal(t, "make sure no custodian process is running, then let a step ask the recognizer of effect publish, "+
		"or establish whether it took place and: custodian resolve "+r.dir+" publish completed|absent (absent: it runs again at the next step that reaches it, so remove any part of it that took place first)", s.Operator)

	r.expect(engine.KindUncertain)
	s, err = r.open().Status()
	require.NoError(t, err)
	assert.False(t, s.Effects[0].Interrupted, "the uncertain step recorded the start")
	assert.Equal(t, 2, s.Last.Step)
	assert.Equal(t, engine.KindUncertain, s.Last.Outcome.Kind)
	assert.Equal(t, "stop and report it: the fate of an effect is uncertain (publish)", s.Agent)
	assert.Equal(t, "establish whether effect publish took place, then: custodian resolve "+r.dir+" publish completed|absent (absent: it runs again at the next step that reaches it, so remove any part of it that took place first)", s.Operator)

	require.NoError(t, r.resolve("publish", workflow.Absent))
	s, err = r.open().Status()
	require.NoError(t, err)
	assert.Equal(t, store.EffectAbsent, s.Effects[0].Status)
	assert.Equal(t, "operator", s.Effects[0].By)
	assert.Equal(t, []engine.Subject{"effect publish"}, s.Settled)
	assert.Equal(t, "step: after step 2 the operator resolved effect publish", s.Agent)
	assert.Equal(t, statusNothing, s.Operator)
}

// A completed effect whose input changed blocks, permitting only stopping:
// the operator resolves it.
func TestStatusOfAnEffectBlock(t *testing.T) {
	r := effectStartDef(t, effectReleaseDef, map[string]string{"source.md": "text\n", "release.md": "v1\n"})
	r.launch(true, "announce")
	r.expect(engine.KindDone)
	r.write("release.md", "v2\n")
	r.blocked()

	s, err := r.open().Status()
	require.NoError(t, err)
	assert.Equal(t, []string{"release.md"}, s.Effects[0].Changed)
	assert.Equal(t, fmt.Sprintf(statusAdviceStop, "effect publish"), s.Agent)
	assert.Equal(t, "establish what took place, then: custodian resolve "+r.dir+" publish completed|absent (absent: it runs again at the next step that reaches it, so remove any part of it that took place first)", s.Operator)

	require.NoError(t, r.resolve("publish", workflow.Completed))
	s, err = r.open().Status()
	require.NoError(t, err)
	assert.Empty(t, s.Effects[0].Changed, "resolved as completed, it stands with its inputs as they are now")
	assert.Equal(t, "step: after step 3 the operator resolved effect publish", s.Agent)
}

// A definition that stops the run stops the workflow until the operator
// releases it.
func TestStatusOfAStoppedWorkflow(t *testing.T) {
	def := &workflow.Definition{Name: "halt", Run: func(ctx *workflow.Context) error {
		if _, err := os.Stat(ctx.Path("halt")); err == nil {
			ctx.Stop("the source cannot be used")
		}
		ctx.Agent(job("a")).Wait()
		return nil
	}}
	h := startRun(t, def, source)
	h.write("halt", "\n")
	require.Equal(t, engine.PermitStop, h.blocked()["workflow"].Permitted)

	s := h.status()
	require.NotNil(t, s.Workflow)
	assert.Equal(t, engine.BlockWorkflowStop, s.Workflow.Kind)
	assert.Equal(t, "the source cannot be used", s.Workflow.Reason)
	assert.FileExists(t, s.Workflow.Record)
	assert.Equal(t, fmt.Sprintf(statusAdviceStop, "workflow"), s.Agent)
	assert.Equal(t, "fix the cause, then: custodian release "+h.dir+" workflow", s.Operator)

	h.remove("halt")
	require.NoError(t, h.o.Release("workflow"))
	s = h.status()
	assert.Nil(t, s.Workflow)
	assert.Equal(t, "step: after step 1 the operator released workflow", s.Agent)
	h.launch("a")
}

// Status takes no lock: it answers while another process holds the run's.
func TestStatusAnswersWhileTheRunIsLocked(t *testing.T) {
	h := startRun(t, statusTwoJobs, source)
	h.launch("a", "b")
	want := h.status()

	run, err := store.Open(h.dir)
	require.NoError(t, err)
	unlock, err := run.Lock()
	require.NoError(t, err)
	defer unlock()

	_, err = h.o.Step()
	require.ErrorIs(t, err, store.ErrBusy, "the lock is held")
	got := h.status()
	assert.Equal(t, want, got)
	events, err := h.o.Log()
	require.NoError(t, err)
	assert.NotEmpty(t, events)
}

// statusFile is what a read-only command must leave as it was.
type statusFile struct {
	size  int64
	mode  fs.FileMode
	mtime time.Time
	data  string
}

// statusSnapshot records every file and directory under dir, the state
// directory included: names, sizes, modes, mtimes and bytes.
func statusSnapshot(t *testing.T, dir string) map[string]statusFile {
	t.Helper()
	out := map[string]statusFile{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := statusFile{size: info.Size(), mode: info.Mode(), mtime: info.ModTime()}
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			f.data = string(b)
		}
		rel, err := filepath.Rel(dir, path)
		out[rel] = f
		return err
	})
	require.NoError(t, err)
	return out
}

// Status, Log and Story write nothing, at every point of a run's course: before
// the first step, after a launch, a block, an uncertain step and the end.
func TestStatusAndLogWriteNothing(t *testing.T) {
	check := func(t *testing.T, reg *workflow.Registry, dir string) {
		t.Helper()
		before := statusSnapshot(t, dir)
		require.Contains(t, before, filepath.Join(".custodian", "run.json"), "the snapshot covers the state directory")
		o, err := engine.Open(reg, dir)
		require.NoError(t, err)
		s, err := o.Status()
		require.NoError(t, err)
		_, err = o.Log()
		require.NoError(t, err)
		for _, j := range s.Jobs {
			_, err = o.Story(j.Name)
			require.NoError(t, err)
		}
		assert.Equal(t, before, statusSnapshot(t, dir))
	}

	h := startRun(t, statusTwoJobs, source)
	check(t, h.reg, h.dir)
	h.work(h.launch("a", "b"), map[string]reply{"b": {output: invalidText}})
	check(t, h.reg, h.dir)
	h.work(h.launch("b"), map[string]reply{"b": {output: invalidText}})
	h.blocked()
	check(t, h.reg, h.dir)
	h.write("b.md", validText)
	h.done()
	check(t, h.reg, h.dir)

	r := effectPublishRun(t, "files")
	r.crashStep("part")
	check(t, r.reg, r.dir)
	r.expect(engine.KindUncertain)
	check(t, r.reg, r.dir)
}

// A step consumes a round; a status does not. However often the status is
// read while a job's worker has written nothing, the next step counts one
// failed attempt and hands out the second.
func TestStatusConsumesNoRound(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	for range 10 {
		s := h.status()
		assert.Equal(t, 1, statusJob(t, s, "a").Attempts)
		assert.Equal(t, engine.JobAwaited, statusJob(t, s, "a").State)
	}
	assert.Equal(t, 2, h.launch("a")["a"].Attempt)
	assert.Equal(t, 2, h.status().Steps)
}

// A state directory that cannot be trusted fails the status too: it is
// never read as an ordinary status.
func TestStatusRefusesUntrustedRecords(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.launch("a")
	h.remove(".custodian/history/1.jsonl")

	o, err := engine.Open(h.reg, h.dir)
	require.NoError(t, err)
	_, err = o.Status()
	require.ErrorIs(t, err, store.ErrUntrusted)
	_, err = o.Log()
	require.ErrorIs(t, err, store.ErrUntrusted)
}

// The operator's commands are ready to paste into a shell, whatever the
// run directory is called.
func TestStatusQuotesTheRunInCommands(t *testing.T) {
	h := startRun(t, statusTwoJobs, source)
	h.launch("a", "b")
	writeFile(t, h.path("a.md"), validText)
	// b's workers write nothing: two cycles of two attempts.
	h.launch("b")
	require.Equal(t, engine.PermitRepair, h.blocked()["b"].Permitted)
	h.launch("b")
	h.launch("b")
	require.Equal(t, engine.PermitStop, h.blocked()["b"].Permitted)
	moved := filepath.Join(filepath.Dir(h.dir), "it's a run")
	require.NoError(t, os.Rename(h.dir, moved))
	h.dir = moved

	assert.Equal(t, "fix the cause, then: custodian release '"+filepath.Dir(moved)+"/it'\\''s a run' b", h.status().Operator)
}

// A process that ended inside an effect of the very first step committed no
// step at all: the status has no last outcome, and still must not tell the
// agent to step as if the run were new.
func TestStatusOfAnEffectInterruptedBeforeTheFirstCommit(t *testing.T) {
	r := effectStart(t, effectRegistry(), "effect-stamp", nil, nil)
	r.crashStep("stamped")

	s, err := r.open().Status()
	require.NoError(t, err)
	assert.Nil(t, s.Last)
	assert.Zero(t, s.Steps)
	require.Len(t, s.Effects, 1)
	assert.Equal(t, "stamp", s.Effects[0].Name)
	assert.True(t, s.Effects[0].Interrupted)
	assert.Equal(t, "stop and report it: effect stamp started and its end is not recorded; "+
		"a step is inside it or a process ended inside it", s.Agent)

	events, err := r.open().Log()
	require.NoError(t, err)
	assert.Equal(t, []string{"start effect-stamp"}, historyLines(events), "nothing was committed")
}

// An agent orchestrator that reported a stop after the last step is done
// until the operator acts: status says so, whatever the outcome permitted.
func TestRun_StatusAfterAStopReport(t *testing.T) {
	h := startRun(t, oneJob(job("a")), source)
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.work(h.launch("a"), map[string]reply{"a": {output: invalidText}})
	h.blocked()
	s, err := h.o.Status()
	require.NoError(t, err)
	require.Nil(t, s.StopReport)
	assert.True(t, strings.HasPrefix(s.Agent, "repair within the scope"), s.Agent)

	_, err = h.o.Report(engine.ReportStop, "a", "no repair in scope helps")
	require.NoError(t, err)
	s, err = h.o.Status()
	require.NoError(t, err)
	require.NotNil(t, s.StopReport)
	assert.Equal(t, 1, s.StopReport.Number)
	assert.Equal(t, "nothing: you reported a stop after step 3 (report 1); the run waits for the operator", s.Agent)
	assert.Contains(t, s.Operator, "the agent orchestrator stopped after step 3 (report 1: no repair in scope helps)")

	// A step after it is the loop resumed: the report is history.
	h.step()
	s, err = h.o.Status()
	require.NoError(t, err)
	assert.Nil(t, s.StopReport)
}
