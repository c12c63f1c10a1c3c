package relay

import (
	"time"

	"github.com/custodian-run/custodian/workflow/engine"
)

// WorkflowName is the name the workflow is registered and started under.
const WorkflowName = "custodian-run"

// LeasedSignal is the signal a worker host sends the workflow once its
// worker runs, with the worker's lease (engine.Lease): the run's host
// records it, so that the job is held until that worker can write no more.
const LeasedSignal = "leased"

// The activities, by name: those of the run's host (Host), and the
// workers' launch (Launcher.Launch).
const (
	activityBegin       = "Begin"
	activityStep        = "Step"
	activityLease       = "Lease"
	activityRecord      = "Record"
	activityLost        = "Lost"
	activityNotLaunched = "NotLaunched"
	activityReport      = "Report"
	activityEnd         = "End"
	activityLaunch      = "Launch"
)

// leaseMargin is added to a lease's bound for the clocks of two hosts
// that disagree, and for a worker's group to be gone after SIGKILL.
const leaseMargin = time.Minute

// LeaseBound is how long after it starts a worker on a worker host can
// still write, however its host fares: its host's watchdog ends it at
// timeout, with grace between SIGTERM and SIGKILL, and a worker whose
// worker process died has died with it. Past the bound its lease expires.
func LeaseBound(timeout, grace time.Duration) time.Duration { return timeout + grace + leaseMargin }

// WorkflowID is the ID of a run's workflow: one per run, so that a second
// drive of the run attaches to the first's workflow instead of starting a
// rival.
func WorkflowID(runID string) string { return "custodian-" + runID }

// RunQueue is the task queue of a run's host: only a custodian-temporal
// drive of the run serves it, where the run directory is.
func RunQueue(runID string) string { return "custodian-run-" + runID }

// Params is what a run's workflow is started with: how the drive that
// started it was told to drive.
type Params struct {
	Workflow    engine.Workflow
	Dir         string // the run directory, the same path on every host
	RunQueue    string
	WorkerQueue string
	Profile     string // the worker profile the drive named: claude, codex or exec
	Command     string // exec's --command, as the drive was given it
	MaxParallel int    // workers at once over every host; zero: every hand-out
	Timeout     time.Duration
	Idle        time.Duration
	Grace       time.Duration
	MaxWait     time.Duration
	// RenewAt is the size of the workflow's history, in bytes, past which
	// it lets its workers end and goes on as a new execution (continue as
	// new), before Temporal's bound (50 MB); zero: DefaultRenewAt.
	RenewAt int
}

// DefaultRenewAt is the history size at which a run's workflow goes on as
// a new execution: well inside Temporal's 50 MB, with room for the
// launches in flight while it drains.
const DefaultRenewAt = 20 << 20

// Result is how a run's workflow ended: the drive's exit status, and the
// fault that made it fail, if one did.
type Result struct {
	Status int
	Fault  *Fault
	// InEffect says the last step ended inside an effect, and printed
	// nothing on stdout.
	InEffect bool
}

// Settings are what the run host's activities take of the drive that
// started the workflow, rather than of the drive that serves them: a drive
// that attaches may have been given other flags.
type Settings struct {
	Profile, Command string
	Grace, MaxWait   time.Duration
}

// settings returns the settings of p.
func (p Params) settings() Settings {
	return Settings{Profile: p.Profile, Command: p.Command, Grace: p.Grace, MaxWait: p.MaxWait}
}

// Fault is what keeps a drive from going on, with the exit status it
// maps to and what the operator does next.
type Fault struct {
	Status  int
	Message string
	Hint    string
}

func (f *Fault) Error() string { return f.Message }

// Job is a hand-out with the number of the launch that works on it.
type Job struct {
	Handout engine.Handout
	Launch  int // jobs/<job>/launch-<n>/
}

// BeginResult is where the run stands when its workflow begins: its steps
// so far, and the hand-outs still out that no worker was launched for.
type BeginResult struct {
	Steps      int
	Unlaunched []Job
	Fault      *Fault
}

// BeginInput begins the workflow's hold of the run.
type BeginInput struct {
	Settings Settings
}

// StepInput asks for the run's step Number beside the hand-outs the
// workflow holds (job → attempt).
type StepInput struct {
	Number   int
	Held     map[string]int
	Settings Settings
}

// StepResult is what a step decided, as much as the workflow needs of it:
// its outcome word (or "in-effect"), the hand-outs to launch, the stop to
// report, or a fault.
type StepResult struct {
	Kind  string
	Fresh []Job
	// StopJob and StopWhy are the stop a blocked, uncertain or in-effect
	// step makes the drive report.
	StopJob, StopWhy string
	Fault            *Fault
}

// kindInEffect is a step that ended inside an effect: its fate is the
// operator's to establish.
const kindInEffect = "in-effect"

// LaunchInput asks a worker host to launch a worker for a hand-out.
type LaunchInput struct {
	Job     Job
	Dir     string // the run directory, the same path on every host
	Profile string
	Timeout time.Duration
	Idle    time.Duration
	Grace   time.Duration
}

// LaunchResult is the evidence of a launch, which goes back to the run's
// host to be recorded.
type LaunchResult struct {
	Launch         *engine.Launch
	Stdout, Stderr []byte
}

// RecordInput is a launch's evidence for the run's host to record.
type RecordInput struct {
	Result   LaunchResult
	Settings Settings
}

// RecordResult says whether a launch that hit a usage limit is launched
// again, not charged, once the limit lifts at Until.
type RecordResult struct {
	Again bool
	Until time.Time
	Fault *Fault
}

// LostInput says a launch's activity failed without its evidence: Why,
// and whether the workflow has waited once already for a worker that never
// gave its lease.
type LostInput struct {
	Job      Job
	Settings Settings
	Why      string
	Waited   bool
	// Lease is the lease the workflow was given for the launch, if any:
	// the run's host may not have recorded it yet.
	Lease *engine.Lease
}

// LostResult says how long to wait before asking again whether the lost
// worker can still write; zero: it cannot, and its launch is recorded lost.
type LostResult struct {
	Wait  time.Duration
	Fault *Fault
}

// ReportInput is a stop to report.
type ReportInput struct {
	Job, Why string
}
