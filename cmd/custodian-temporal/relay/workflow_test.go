package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/workflow/engine"
)

// fakeRun plays the run's host and the worker hosts for the workflow: a
// run of jobs j1..jN handed out at its first step, done once each has a
// finished launch recorded.
type fakeRun struct {
	jobs int
	// lose is how many launches of a job are lost before one finishes.
	lose map[string]int
	// block makes the first step blocked on j1.
	block bool
	// fault is Begin's, when set.
	fault *Fault

	mu            sync.Mutex
	finished      map[string]bool
	launched      map[string]int
	running, most int
	lostAsks      map[string]int
	steps         []StepInput
	reports       []ReportInput
	notLaunched   []string
	recorded      []string // outcomes, in order
	ended         bool
}

func newFakeRun(jobs int) *fakeRun {
	return &fakeRun{jobs: jobs, lose: map[string]int{}, finished: map[string]bool{}, launched: map[string]int{}, lostAsks: map[string]int{}}
}

func (f *fakeRun) job(i int) string { return fmt.Sprintf("j%d", i) }

func (f *fakeRun) Begin(context.Context, BeginInput) (BeginResult, error) {
	return BeginResult{Fault: f.fault}, nil
}

func (f *fakeRun) Step(_ context.Context, in StepInput) (StepResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, in)
	if f.block && in.Number == 1 {
		return StepResult{Kind: string(engine.KindBlocked), StopJob: "j1", StopWhy: "blocked; drive never repairs"}, nil
	}
	r := StepResult{Kind: string(engine.KindLaunch)}
	for i := 1; i <= f.jobs; i++ {
		name := f.job(i)
		if _, held := in.Held[name]; f.finished[name] || held {
			continue
		}
		r.Fresh = append(r.Fresh, Job{Handout: engine.Handout{Name: name, Attempt: 1}, Launch: f.launched[name] + 1})
	}
	if len(r.Fresh) == 0 && len(in.Held) == 0 {
		r.Kind = string(engine.KindDone)
	}
	return r, nil
}

func (f *fakeRun) Launch(_ context.Context, in LaunchInput) (LaunchResult, error) {
	name := in.Job.Handout.Name
	f.mu.Lock()
	f.launched[name]++
	f.running++
	f.most = max(f.most, f.running)
	lost := f.lose[name] > 0
	if lost {
		f.lose[name]--
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	res := LaunchResult{Launch: &engine.Launch{Job: name, Attempt: in.Job.Handout.Attempt, Launch: in.Job.Launch, Outcome: string(drive.Finished)}}
	time.Sleep(20 * time.Millisecond)
	if lost {
		return LaunchResult{}, errors.New("the worker host stopped answering")
	}
	return res, nil
}

func (f *fakeRun) Record(_ context.Context, in RecordInput) (RecordResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := in.Result.Launch
	f.recorded = append(f.recorded, l.Outcome)
	if l.Outcome == string(drive.Finished) {
		f.finished[l.Job] = true
	}
	return RecordResult{}, nil
}

func (f *fakeRun) Lost(_ context.Context, in LostInput) (LostResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lostAsks[in.Job.Handout.Name]++
	if !in.Waited {
		return LostResult{Wait: 10 * time.Minute}, nil // a lease on another host, not yet expired
	}
	f.recorded = append(f.recorded, engine.LaunchLost)
	return LostResult{}, nil
}

func (f *fakeRun) NotLaunched(_ context.Context, jobs []Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, j := range jobs {
		f.notLaunched = append(f.notLaunched, j.Handout.Name)
	}
	return nil
}

func (f *fakeRun) Report(_ context.Context, in ReportInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, in)
	return nil
}

func (f *fakeRun) End(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = true
	return nil
}

// run runs the workflow against f and returns its result. (The test
// environment does not wait for a cancelled activity as a server does:
// the server tests try cancellations.)
func run(t *testing.T, f *fakeRun, p Params) Result {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Loop, workflow.RegisterOptions{Name: WorkflowName})
	for name, fn := range map[string]any{activityBegin: f.Begin, activityStep: f.Step, activityLaunch: f.Launch,
		activityRecord: f.Record, activityLost: f.Lost, activityNotLaunched: f.NotLaunched, activityReport: f.Report, activityEnd: f.End} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	p.Timeout, p.Idle, p.Grace = time.Hour, time.Minute, time.Second
	env.ExecuteWorkflow(WorkflowName, p)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res Result
	require.NoError(t, env.GetWorkflowResult(&res))
	return res
}

// The workflow launches every hand-out once, never more at once than
// MaxParallel, steps as workers end, and ends done, the run freed.
func TestLoop_launchesEachHandOutOnceWithinMaxParallel(t *testing.T) {
	f := newFakeRun(10)
	res := run(t, f, Params{MaxParallel: 3})
	assert.Equal(t, Result{Status: drive.ExitDone}, res)
	for i := 1; i <= 10; i++ {
		assert.Equal(t, 1, f.launched[f.job(i)], "launches of %s", f.job(i))
	}
	assert.LessOrEqual(t, f.most, 3, "more launches at once than MaxParallel")
	assert.True(t, f.ended, "the run was not freed")
	for i, s := range f.steps {
		assert.Equal(t, i+1, s.Number, "the steps are not asked for by their numbers in turn")
	}
}

// A launch lost without its evidence keeps its job held, and so out of
// every step's hands, until the run's host says its worker can write no
// more; then the job is handed out again and finished.
func TestLoop_aLostLaunchIsHeldUntilItsWorkerCannotWrite(t *testing.T) {
	f := newFakeRun(2)
	f.lose["j1"] = 1
	res := run(t, f, Params{})
	assert.Equal(t, Result{Status: drive.ExitDone}, res)
	assert.Equal(t, 2, f.launched["j1"])
	assert.Equal(t, 1, f.launched["j2"])
	assert.Equal(t, 2, f.lostAsks["j1"], "the workflow did not wait for the lease")
	assert.Equal(t, []string{"finished", "lost", "finished"}, f.recorded)
	// Steps were taken while j1's lost worker might still write (j2's
	// end owes one); each left j1 alone.
	var beside int
	for _, s := range f.steps[1:] {
		if _, held := s.Held["j1"]; held {
			beside++
		}
	}
	assert.Positive(t, beside, "no step was taken while the lost launch was held")
}

// A blocked step stops launching: the stop is reported, the run freed,
// the status drive's 10.
func TestLoop_aBlockIsReported(t *testing.T) {
	f := newFakeRun(2)
	f.block = true
	res := run(t, f, Params{})
	assert.Equal(t, Result{Status: drive.ExitBlocked}, res)
	assert.Equal(t, []ReportInput{{Job: "j1", Why: "blocked; drive never repairs"}}, f.reports)
	assert.Empty(t, f.launched)
	assert.True(t, f.ended)
}

// A workflow whose history has grown past RenewAt lets its workers end,
// records what it queued as not launched, and goes on as a new execution.
func TestLoop_aLongHistoryGoesOnAsNew(t *testing.T) {
	f := newFakeRun(4)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Loop, workflow.RegisterOptions{Name: WorkflowName})
	for name, fn := range map[string]any{activityBegin: f.Begin, activityStep: f.Step, activityLaunch: f.Launch,
		activityRecord: f.Record, activityLost: f.Lost, activityNotLaunched: f.NotLaunched, activityReport: f.Report, activityEnd: f.End} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	env.SetCurrentHistorySize(2 << 20)
	env.ExecuteWorkflow(WorkflowName, Params{MaxParallel: 1, Timeout: time.Hour, Grace: time.Second, RenewAt: 1 << 20})
	require.True(t, env.IsWorkflowCompleted())
	var next *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &next, "the workflow did not go on as new")
	assert.Equal(t, 1, f.launched["j1"], "the launch in flight was not let end")
	assert.ElementsMatch(t, []string{"j2", "j3", "j4"}, f.notLaunched)
	assert.False(t, f.ended, "a workflow that goes on freed the run")
}

// A fault at the beginning (a launch set-up that cannot launch what was
// handed out) ends the workflow with it, and gives the hold back.
func TestLoop_aFaultAtTheBeginningFreesTheRun(t *testing.T) {
	f := newFakeRun(1)
	f.fault = &Fault{Status: engine.ExitUsage, Message: "drive: the launch set-up cannot launch this round"}
	res := run(t, f, Params{})
	assert.Equal(t, Result{Fault: f.fault}, res)
	assert.True(t, f.ended, "the run stays held by a workflow that has ended")
	assert.Empty(t, f.launched)
}
