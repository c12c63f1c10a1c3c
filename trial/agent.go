package trial

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/custodian-run/custodian/workflow/engine"
)

// DefaultMaxRounds is how many steps an Agent takes when its script names no
// limit. The trial's longest course takes six; a run that needs fifty is
// looping.
const DefaultMaxRounds = 50

// ErrMaxRounds means the agent took as many steps as its script allows and
// the run had not ended: a definition or a script that never settles.
var ErrMaxRounds = errors.New("the run did not end within the round limit")

// Behaviour is what one scripted worker does with its hand-out: it writes
// the output, a problem report, or nothing. It returns an error only when
// it could not do what it was scripted to do, or, made by LaunchFailed,
// when the harness is scripted to fail the launch.
type Behaviour func(h engine.Handout) error

// Repair is a scripted repair of a block that permits one. It changes the run
// directory within the repair scope and returns what it changed, in one
// line, for the repair report: only the agent can tell the operator that.
type Repair func(runDir string, b engine.Block) (changed string, err error)

// Script is what the scripted agent's harness does, decided in advance: how
// each job's workers behave and which blocks it can repair. The agent itself
// decides nothing the loop instruction leaves to judgment.
type Script struct {
	// Workers holds each job's behaviours, one per launch of the job by this
	// agent; the last repeats.
	Workers map[string][]Behaviour
	// Default is the behaviour of a job Workers does not name; nil means Valid.
	Default Behaviour
	// Repairs holds the repair the agent makes for a block, by the block's
	// subject. A block with none is one no change within scope fixes.
	Repairs map[string]Repair
	// Decisions are the operator's choices on the questions the definition
	// asks (Context.Decide), by question name. The agent stops at a question
	// as the loop says; when the script holds the choice, the scripted
	// operator records it (custodian decide) and tells the agent to resume.
	Decisions map[string]Decision
	// MaxRounds bounds the steps the agent takes; zero means DefaultMaxRounds.
	MaxRounds int
}

// Decision is an operator's scripted choice on a question, and why.
type Decision struct {
	Choice string
	Text   string
}

// behaviour returns the behaviour of the launch-th launch of job, from 1.
func (s *Script) behaviour(job string, launch int) Behaviour {
	if bs := s.Workers[job]; len(bs) > 0 {
		return bs[min(launch, len(bs))-1]
	}
	if s.Default != nil {
		return s.Default
	}
	return Valid
}

// Agent is a scripted agent orchestrator. It plays the loop instruction
// mechanically: it steps; on launch it runs one worker per job of the round
// and steps again; on blocked it repairs every block its script can repair
// and reports each repair, or reports a stop; on uncertain it reports a stop;
// on done it ends. It never reads an output or judges one: code does that on
// the next step.
type Agent struct {
	Runner Runner    // the run's two commands
	RunDir string    // the run directory, where repairs act
	Script Script    // what the workers and the repairs do
	Log    io.Writer // optional: one line per round and per action, as commentary
}

// Transcript is the course of a drive.
type Transcript struct {
	Steps   []engine.Outcome // every step's outcome, in order
	Final   engine.Outcome   // the last step's outcome
	Reports []Report         // every report the agent made, in order
	// Decided names the questions the scripted operator chose on, in order.
	Decided []string
}

// Course summarizes the steps in one line each: the outcome word, then the
// jobs handed out, or each block as subject:kind:permitted. Tests compare
// courses.
func (t Transcript) Course() []string {
	lines := make([]string, 0, len(t.Steps))
	for _, o := range t.Steps {
		parts := []string{string(o.Kind)}
		for _, h := range o.Jobs {
			parts = append(parts, h.Name)
		}
		for _, b := range o.Blocks {
			parts = append(parts, b.Subject.String()+":"+string(b.Kind)+":"+string(b.Permitted))
		}
		lines = append(lines, strings.Join(parts, " "))
	}
	return lines
}

// Report is one report the agent made.
type Report struct {
	Event string // launch-failed, repair or stop
	Job   string // empty when the report names no job
	Text  string
}

// String renders the report as the command that makes it.
func (r Report) String() string {
	s := "custodian report RUN " + r.Event
	if r.Job != "" {
		s += " --job " + r.Job
	}
	return s + fmt.Sprintf(" --text %q", r.Text)
}

// LaunchError is a launch the harness refused or failed. A Behaviour returns
// one, made by LaunchFailed, to script a failed launch; the agent reports it
// and goes on with the round, as the loop instruction says.
type LaunchError struct {
	Text string // what the harness said
}

func (e *LaunchError) Error() string { return "the launch failed: " + e.Text }

// Drive plays the loop until the run ends or the agent must stop, and
// returns every step's outcome. Stopping at a block or at an uncertain
// effect is a course of the loop, not an error: Final tells which. The
// error is for a drive that could not follow the loop: a command that
// failed, a worker or a repair that could not do its part, or the round
// limit.
func (a *Agent) Drive() (Transcript, error) {
	d := &drive{Agent: a, launches: map[string]int{}}
	err := d.run()
	return d.t, err
}

// drive is the state of one Drive: the transcript so far and how often each
// job was launched, which picks its next behaviour.
type drive struct {
	*Agent
	t        Transcript
	launches map[string]int
}

func (d *drive) run() error {
	if d.Runner == nil {
		return errors.New("drive: the agent has no runner")
	}
	limit := d.Script.MaxRounds
	if limit <= 0 {
		limit = DefaultMaxRounds
	}
	for round := 1; round <= limit; round++ {
		d.logf("round %d: custodian step", round)
		out, err := d.Runner.Step()
		if err != nil {
			return d.stepFailed(round, err)
		}
		d.t.Steps = append(d.t.Steps, out)
		d.t.Final = out
		switch out.Kind {
		case engine.KindLaunch:
			for _, h := range out.Jobs {
				if err := d.launch(h); err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
			}
		case engine.KindBlocked:
			again, err := d.settle(out.Blocks)
			if err != nil || !again {
				return err
			}
		case engine.KindUncertain:
			return d.stop("", uncertainReason(out))
		case engine.KindDone:
			d.logf("the run is finished")
			return nil
		default:
			return fmt.Errorf("round %d: step gave outcome %q, which the loop does not know", round, out.Kind)
		}
	}
	return fmt.Errorf("drive: %w: %d rounds", ErrMaxRounds, limit)
}

// stepFailed follows the loop when step itself fails. A named exit status
// (busy, untrusted, refused, a broken definition) is told to the operator
// as it is; any other ending came from inside an effect, and the loop
// stops with a report before handing it over. Either way step is not run
// again.
func (d *drive) stepFailed(round int, err error) error {
	err = fmt.Errorf("round %d: step: %w", round, err)
	var exit *ExitError
	if errors.As(err, &exit) && !engine.Named(exit.Status) {
		if rerr := d.stop("", fmt.Sprintf("step ended with exit status %d", exit.Status)); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// launch runs one worker for a hand-out. The worker's whole instruction is
// its prompt file, so it learns where to write from there; a hand-out that
// names other paths than its prompt is a fault of the engine, not a course
// of the loop.
func (d *drive) launch(h engine.Handout) error {
	d.launches[h.Name]++
	behave := d.Script.behaviour(h.Name, d.launches[h.Name])
	h, err := followPrompt(h)
	if err != nil {
		return fmt.Errorf("worker %s: %w", h.Name, err)
	}
	var failed *LaunchError
	switch err := behave(h); {
	case errors.As(err, &failed):
		d.logf("worker %s: %v", h.Name, failed)
		return d.report(engine.ReportLaunchFailed, h.Name, failed.Text)
	case err != nil:
		return fmt.Errorf("worker %s: %w", h.Name, err)
	}
	d.logf("worker %s: %s", h.Name, d.reply(h))
	return nil
}

// reply is the worker's one-line reply: the file it wrote. It is commentary
// only; the agent never acts on it.
func (d *drive) reply(h engine.Handout) string {
	var wrote []string
	if exists(h.Output) {
		wrote = append(wrote, d.rel(h.Output))
	}
	if exists(h.Problem) {
		wrote = append(wrote, "a problem report, "+d.rel(h.Problem))
	}
	if len(wrote) == 0 {
		return "wrote nothing"
	}
	return "wrote " + strings.Join(wrote, " and ")
}

func (d *drive) rel(path string) string {
	if rel, err := filepath.Rel(d.RunDir, path); err == nil && d.RunDir != "" && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// settle handles every block before the next step, as the loop says: if any
// block permits only stopping, or any lacks a repair the script can make,
// the agent stops without changing anything; otherwise it makes every
// repair, reports each, and steps again.
func (d *drive) settle(blocks []engine.Block) (again bool, err error) {
	for _, b := range blocks {
		if b.Permitted != engine.PermitRepair {
			if err := d.stop(jobOf(b.Subject), fmt.Sprintf("%s: %s; the block permits only stopping", b.Subject, b.Reason)); err != nil {
				return false, err
			}
			return d.decide(blocks)
		}
	}
	for _, b := range blocks {
		if d.Script.Repairs[b.Subject.String()] == nil {
			return false, d.stop(jobOf(b.Subject), fmt.Sprintf("%s: %s; no change within the repair scope fixes it", b.Subject, b.Reason))
		}
	}
	for _, b := range blocks {
		changed, err := d.Script.Repairs[b.Subject.String()](d.RunDir, b)
		if err != nil {
			return false, fmt.Errorf("repair %s: %w", b.Subject, err)
		}
		d.logf("repair %s: %s", b.Subject, changed)
		if err := d.report(engine.ReportRepair, jobOf(b.Subject), changed); err != nil {
			return false, err
		}
	}
	return true, nil
}

// decide plays the operator after the agent stopped: when every block
// that permits only stopping is a question the script answers, the
// operator records each choice, and the agent resumes the loop; otherwise
// the run waits for a real operator.
func (d *drive) decide(blocks []engine.Block) (again bool, err error) {
	var names []string
	for _, b := range blocks {
		name, ok := b.Subject.Decision()
		if _, scripted := d.Script.Decisions[name]; !ok || !scripted {
			if b.Permitted != engine.PermitRepair {
				return false, nil
			}
			continue
		}
		names = append(names, name)
	}
	for _, name := range names {
		c := d.Script.Decisions[name]
		if err := d.Runner.Decide(name, c.Choice, c.Text); err != nil {
			return false, fmt.Errorf("the operator's decision %s: %w", name, err)
		}
		d.logf("the operator: custodian decide RUN %s %s; the agent resumes the loop", name, c.Choice)
		d.t.Decided = append(d.t.Decided, name)
	}
	return len(names) > 0, nil
}

// jobOf returns the job a subject names, and "" for the workflow and for
// effects, which a report may not name with --job.
func jobOf(subject engine.Subject) string {
	job, _ := subject.Job()
	return job
}

func uncertainReason(out engine.Outcome) string {
	names := make([]string, 0, len(out.Effects))
	for _, e := range out.Effects {
		names = append(names, engine.EffectSubject(e.Name).String())
	}
	return "it is uncertain whether " + strings.Join(names, ", ") + " took place"
}

// stop reports that the agent stops, naming the job whose block caused it.
// The report is the whole act, so it is also the whole log line.
func (d *drive) stop(job, why string) error {
	return d.report(engine.ReportStop, job, why)
}

func (d *drive) report(event, job, text string) error {
	r := Report{Event: event, Job: job, Text: text}
	d.logf("%s", r)
	if err := d.Runner.Report(event, job, text); err != nil {
		return fmt.Errorf("report %s: %w", event, err)
	}
	d.t.Reports = append(d.t.Reports, r)
	return nil
}

func (d *drive) logf(format string, args ...any) {
	if d.Log != nil {
		// Commentary: a reader that went away must not change the course.
		_, _ = fmt.Fprintf(d.Log, format+"\n", args...)
	}
}

// followPrompt does what a worker does first: it reads its prompt file and
// finds where to write. A hand-out read from the text form names no paths
// and gets them here; one that names them must agree with its prompt.
func followPrompt(h engine.Handout) (engine.Handout, error) {
	data, err := os.ReadFile(h.Prompt)
	if err != nil {
		return h, fmt.Errorf("read the prompt file: %w", err)
	}
	p, err := engine.ParsePrompt(data)
	if err != nil {
		return h, fmt.Errorf("prompt file %s: %w", h.Prompt, err)
	}
	for _, c := range []struct{ handout, prompt, what string }{{h.Output, p.Output, "output"}, {h.Problem, p.Problem, "problem report"}} {
		if c.handout != "" && c.handout != c.prompt {
			return h, fmt.Errorf("the hand-out names %s as the %s, its prompt file %s", c.handout, c.what, c.prompt)
		}
	}
	h.Output, h.Problem = p.Output, p.Problem
	return h, nil
}

// Valid writes an output every trial validator accepts, except the ones
// that demand more (retry's reconcile) or refuse everything (stop): a
// heading named after the job and two points.
func Valid(h engine.Handout) error {
	return write(h.Output, fmt.Sprintf("# %s\n\n- a point\n- another point\n", h.Name))
}

// ValidWith returns a behaviour that writes text as the output, for a
// worker that follows a prompt's extra demands.
func ValidWith(text string) Behaviour {
	return func(h engine.Handout) error { return write(h.Output, text) }
}

// Invalid writes one line without a heading, which the trial's validators
// refuse.
func Invalid(h engine.Handout) error {
	return write(h.Output, "a line without a heading\n")
}

// Nothing writes nothing: a worker that ended, or never started, without a
// trace.
func Nothing(engine.Handout) error { return nil }

// Problem returns a behaviour that writes text as the worker's problem
// report, and no output.
func Problem(text string) Behaviour {
	return func(h engine.Handout) error { return write(h.Problem, text) }
}

// LaunchFailed returns a behaviour for a launch the harness fails with text:
// no worker runs, and the agent reports launch-failed.
func LaunchFailed(text string) Behaviour {
	return func(engine.Handout) error { return &LaunchError{Text: text} }
}

// write creates the file's directory too, as a worker told to write a path
// would.
func write(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// PutNotesInPlace is the in-scope repair of the trial's problem scenario:
// setup left the notes at incoming/notes.md, where the notes job does not
// look, and the repair copies them to notes.md. It puts an input in place
// and writes no output content. Copying rather than moving keeps the file
// setup placed, so the run's history stays whole.
func PutNotesInPlace(runDir string, _ engine.Block) (string, error) {
	data, err := os.ReadFile(filepath.Join(runDir, "incoming", "notes.md"))
	if err != nil {
		return "", fmt.Errorf("put the notes in place: %w", err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "notes.md"), data, 0o644); err != nil {
		return "", fmt.Errorf("put the notes in place: %w", err)
	}
	return "copied incoming/notes.md to notes.md", nil
}
