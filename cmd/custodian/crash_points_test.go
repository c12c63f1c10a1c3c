package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The crash-point test ends the process at every write point of a scripted
// run, in turn, and drives the run on to its end. docs/crash-points.md
// gives the recovery rule of each point; this test holds the engine to them.
//
// The script is the agent orchestrator, its workers and the operator,
// played mechanically on the trial definition's uncertain scenario. Each
// decides from what the last command printed, never from a fixed list, so
// that a run whose course a crash changed is still driven the way a real
// agent would drive it. Its uninterrupted course:
//
//   - start the run, with the marker that makes publish end the process
//     halfway;
//   - claims and assumptions are handed out; assumptions' first output is
//     refused and handed out again (the refused file is kept), its next two
//     workers report a problem (each report is kept): the first block
//     permits a repair, which the agent reports, the second only stopping,
//     which the agent reports and the operator releases; the fourth output
//     is accepted;
//   - reconcile is handed out and accepted; publish ends the process between
//     its two writes (exit status 9); the next step is uncertain; the agent
//     reports a stop; the operator finishes the publication by hand, and
//     the recognizer establishes that it completed;
//   - the operator revises the source: every job is handed out again (each
//     output in the way is kept), and publish's input has changed since it
//     completed, which blocks; the agent reports a stop; the operator
//     withdraws the publication and resolves publish as absent; publish
//     runs again, to its end, and the run is done.
//
// The recovery rule the script follows after a crash is the one an agent
// and an operator would follow: a command that ended before its commit
// point (the write that commits its work: run, state, report, release,
// resolve) changed nothing that counts, so it is run again and must do
// exactly what it did in the uninterrupted course. A command that ended
// after its commit point did its work without printing it: a step's
// outcome is lost, so the agent runs the next step, which judges the run
// as that step left it (a hand-out nobody saw becomes a failed attempt); an
// operator's resolve has settled the effect, so the operator goes on.
//
// For every point the run must stay readable (no command exits 4), publish
// must run as often as in the uninterrupted course, every kept file of that
// course must exist with the same bytes, the accepted outputs and the
// publication must be identical, and the last step's outcome must be the
// same. A command that ended before its commit must leave the whole course,
// every command's output included, exactly as it was.

// crashStatus is store.CrashStatus, which exists only in a binary built
// with the crashpoints tag.
const crashStatus = 86

// commitPoints are the writes that commit a command's work; see
// docs/crash-points.md. A command that ends after one of them is not run
// again.
var commitPoints = map[string]bool{"run": true, "state": true, "report-state": true, "release": true, "resolve-state": true}

// unreachable lists the write points of docs/crash-points.md that no run of
// the trial definition reaches, and why. The test fails when one of them is
// reached, so that the list cannot outlive its reason.
var unreachable = map[string]string{
	"abandon": "the scripted run is never abandoned: abandoning ends it, and the script drives its run to the end; " +
		"TestRun_Abandon covers it",
	"round": "written by custodian drive only, which the script does not run: it plays the agent orchestrator itself; " +
		"the drive tests kill a drive inside a round (drive_test.go)",
	"launch-output": "written by custodian drive only; see round",
	"launch":        "written by custodian drive only; see round",
	"launch-state":  "written by custodian drive only; see round",
	"decide": "the trial definition, which the script drives, asks no question (design.md fixes its scenarios); " +
		"decide commits as release does, its history and then its state, a recovery the script covers at release",
}

// startWrites are start's writes, in order: the run's first state, then
// run.json, which makes the directory a run.
var startWrites = []string{"state-new", "run"}

// The script's words and texts.
const (
	// scriptSource is the run's source.md; scriptRevision is what the operator
	// adds to it after the publication.
	scriptSource   = "Decision records help a team only when every significant change has one.\n"
	scriptRevision = "A record that is sometimes missing is not trusted.\n"
	// scriptProblem is what assumptions' second and third workers report.
	scriptProblem = "# Cannot finish\n\nThe source states no assumption that I can name with confidence.\n"
	// scriptIndex is the index the operator writes when finishing the
	// publication by hand, as publish writes it.
	scriptIndex = "# Published\n\n- reconciled.md\n"
	// witnessMark is appended by the witness to each copy of reconciled.md
	// that publish writes; see witness.
	witnessMark = "<!-- seen by the crash-point test -->\n"
	// scriptMaxRounds bounds the steps of one drive: the uninterrupted
	// course takes fourteen, and a crash adds a few.
	scriptMaxRounds = 40
)

// scriptEvent is one thing that happened in a drive: a command and what it
// printed, or an action of a worker or of the operator. Paths name the run
// directory RUN, so that drives in different directories compare.
type scriptEvent struct {
	what   string // in words, e.g. "step: launch assumptions#2"
	output string // what the command printed on stdout
}

// scriptDriver plays the script once, in its own run directory.
type scriptDriver struct {
	t     *testing.T
	dir   string      // the run directory
	crash *crashPoint // the write to end a command before, or nil
	logs  string      // where each command's CUSTODIAN_CRASH_LOG goes, or ""

	commands  []string       // every command run so far, with RUN for the run directory
	course    []scriptEvent  // what happened, in order
	launches  map[string]int // workers launched so far, by job
	published int            // copies of reconciled.md that publish wrote
	revised   bool           // the operator has revised the source
	final     string         // what the last step printed
}

// crashPoint is one write of the uninterrupted course: the write-th write
// (from 1, as CUSTODIAN_CRASH_AT counts) of the command-th command (from 0).
type crashPoint struct {
	command int
	args    string   // the command's arguments, with RUN for the run directory
	write   int      // from 1
	labels  []string // every write of the command, in order
}

func (p crashPoint) label() string { return p.labels[p.write-1] }

// name is the point's subtest name, e.g. "05-step-3-state".
func (p crashPoint) name() string {
	return fmt.Sprintf("%02d-%s-%d-%s", p.command, strings.Fields(p.args)[0], p.write, p.label())
}

// committed says whether the command had committed its work before the
// point's write.
func (p crashPoint) committed() bool {
	return slices.ContainsFunc(p.labels[:p.write-1], func(l string) bool { return commitPoints[l] })
}

func newScriptDriver(t *testing.T) *scriptDriver {
	return &scriptDriver{t: t, dir: filepath.Join(t.TempDir(), "run"), launches: map[string]int{}}
}

// play drives the run from its start to its end.
func (d *scriptDriver) play() {
	d.t.Helper()
	require.NoError(d.t, os.MkdirAll(d.dir, 0o755))
	require.NoError(d.t, os.WriteFile(filepath.Join(d.dir, "source.md"), []byte(scriptSource), 0o644))
	require.NoError(d.t, os.WriteFile(d.dir+".interrupt", nil, 0o644))
	d.command("start", "trial", "--run", d.dir, "--param", "scenario=uncertain")

	for round := 1; ; round++ {
		require.LessOrEqual(d.t, round, scriptMaxRounds, "the run did not end; course:\n%s", d.courseText())
		out, printed := d.step()
		if !printed {
			continue
		}
		switch out.Kind {
		case engine.KindLaunch:
			for _, h := range out.Jobs {
				d.work(h)
			}
		case engine.KindBlocked:
			d.settle(out.Blocks)
		case engine.KindUncertain:
			d.report(engine.ReportStop, "", "it is uncertain whether publish took place")
			d.finishPublication()
		case engine.KindDone:
			if d.revised {
				d.readable()
				return
			}
			d.reviseSource()
		}
	}
}

// readable requires that the commands that only read a run, status and log,
// can read every record of it, the history included, which step does not
// read.
func (d *scriptDriver) readable() {
	d.t.Helper()
	for _, command := range []string{"status", "log"} {
		r := run(d.t, crashBinary, nil, command, d.dir)
		require.Equal(d.t, 0, r.code, "custodian %s RUN: %s", command, r.stderr)
	}
}

// noRun requires that a start that ended before its commit left no run:
// no run.json, and a directory every command refuses as no run, so that
// start can be run again.
func (d *scriptDriver) noRun() {
	d.t.Helper()
	require.NoFileExists(d.t, filepath.Join(d.dir, ".custodian", "run.json"), "a start that ended before its commit left a run")
	r := run(d.t, crashBinary, nil, "status", d.dir)
	require.Equal(d.t, 4, r.code, "status of a start that ended before its commit: stdout %q, stderr %q", r.stdout, r.stderr)
	require.Contains(d.t, r.stderr, "has no .custodian/run.json")
}

// step runs `step RUN --json` and returns its outcome, or false when it
// printed none: the process ended inside publish, or after its commit at
// the crash point.
func (d *scriptDriver) step() (engine.Outcome, bool) {
	d.t.Helper()
	r, ended := d.command("step", d.dir, "--json")
	switch {
	case ended:
		return engine.Outcome{}, false
	case r.code == trial.PublishInterruptedStatus:
		require.Empty(d.t, r.stdout)
		require.Equal(d.t, "the process ended while publishing\n", r.stderr)
		d.note("step: exit 9, the process ended while publishing", "")
		return engine.Outcome{}, false
	}
	out, err := trial.DecodeOutcome([]byte(r.stdout))
	require.NoError(d.t, err)
	d.final = d.rel(r.stdout)
	d.note("step: "+outcomeSummary(out), r.stdout)
	return out, true
}

// outcomeSummary is an outcome in a few words: the kind, and the jobs,
// blocks or effects it names.
func outcomeSummary(out engine.Outcome) string {
	parts := []string{string(out.Kind)}
	for _, h := range out.Jobs {
		parts = append(parts, fmt.Sprintf("%s#%d", h.Name, h.Attempt))
	}
	for _, b := range out.Blocks {
		parts = append(parts, fmt.Sprintf("%s (%s, %s)", b.Subject, b.Kind, b.Permitted))
	}
	for _, e := range out.Effects {
		parts = append(parts, e.Name)
	}
	return strings.Join(parts, " ")
}

// work is one scripted worker acting on a hand-out the engine made: it
// reads where to write from the hand-out, whose prompt file must say the
// same, and behaves as the job's n-th worker of this drive does.
func (d *scriptDriver) work(h engine.Handout) {
	d.t.Helper()
	prompt, err := os.ReadFile(h.Prompt)
	require.NoError(d.t, err, "a hand-out without its prompt file")
	require.Contains(d.t, string(prompt), "Write the result to `"+h.Output+"`.")
	d.launches[h.Name]++
	what, behave := scriptWorker(h.Name, d.launches[h.Name])
	require.NoError(d.t, behave(h))
	d.note(fmt.Sprintf("worker %s#%d: %s", h.Name, h.Attempt, what), "")
}

// scriptWorker is what the n-th worker of job does. assumptions' first
// output is refused and its next two workers report a problem; every other
// worker writes a valid output that names its launch, so that a job handed
// out again writes other bytes, and reconcile's new output changes
// publish's input.
func scriptWorker(job string, n int) (string, trial.Behaviour) {
	if job == "assumptions" {
		switch n {
		case 1:
			return "an invalid output", trial.Invalid
		case 2, 3:
			return "a problem report", trial.Problem(scriptProblem)
		}
	}
	return "a valid output", trial.ValidWith(fmt.Sprintf("# %s\n\n- written by launch %d\n", job, n))
}

// settle answers a blocked step. While every block permits a repair, the
// agent reports one for each (the next worker is the repair). When one
// permits only stopping, the agent stops and reports it, and the operator
// takes over: a stopped job is released, and publish, whose input changed
// after it completed, is withdrawn and resolved as absent.
func (d *scriptDriver) settle(blocks []engine.Block) {
	d.t.Helper()
	i := slices.IndexFunc(blocks, func(b engine.Block) bool { return b.Permitted == engine.PermitStop })
	if i < 0 {
		for _, b := range blocks {
			d.report(engine.ReportRepair, blockJob(string(b.Subject)), "the next worker is told why the last attempt failed")
		}
		return
	}
	d.report(engine.ReportStop, blockJob(string(blocks[i].Subject)), blocks[i].Reason)
	for _, b := range blocks[i:] {
		switch {
		case b.Permitted != engine.PermitStop:
		case b.Subject == "effect publish" && b.Kind == engine.BlockEffectInputsChanged:
			d.withdrawPublication()
			d.operator("resolve", d.dir, "publish", "absent")
		case blockJob(string(b.Subject)) != "":
			d.operator("release", d.dir, string(b.Subject))
		default:
			require.Failf(d.t, "the script has no answer to a block", "%+v", b)
		}
	}
}

// blockJob is the job a block's subject names, or "" for the workflow and
// for effects.
func blockJob(subject string) string {
	if subject == "workflow" || strings.HasPrefix(subject, "effect ") {
		return ""
	}
	return subject
}

// report runs `report RUN EVENT [--job JOB] --text TEXT`.
func (d *scriptDriver) report(event, job, text string) {
	d.t.Helper()
	args, what := []string{"report", d.dir, event}, "report "+event
	if job != "" {
		args, what = append(args, "--job", job), what+" --job "+job
	}
	if r, ended := d.command(append(args, "--text", text)...); !ended {
		require.Regexp(d.t, `^report \d+ recorded\n$`, r.stdout)
		d.note(what, r.stdout)
	}
}

// operator runs one of the operator's commands, which print nothing. One
// that ended after its commit did its work: the operator, seeing it end,
// finds the run settled and goes on.
func (d *scriptDriver) operator(args ...string) {
	d.t.Helper()
	r, _ := d.command(args...)
	require.Empty(d.t, r.stdout)
	d.note(d.rel(strings.Join(args, " ")), "")
}

// finishPublication is the operator establishing what publish did by
// finishing it by hand: the index it did not write.
func (d *scriptDriver) finishPublication() {
	d.t.Helper()
	require.NoError(d.t, os.WriteFile(filepath.Join(d.dir+".published", "index.md"), []byte(scriptIndex), 0o644))
	d.note("operator: finishes the publication by hand", "")
}

// withdrawPublication is the operator taking the publication down, after
// which it did not take place.
func (d *scriptDriver) withdrawPublication() {
	d.t.Helper()
	require.NoError(d.t, os.RemoveAll(d.dir+".published"))
	d.note("operator: withdraws the publication", "")
}

// reviseSource is the operator revising the source after publication.
func (d *scriptDriver) reviseSource() {
	d.t.Helper()
	require.NoError(d.t, os.WriteFile(filepath.Join(d.dir, "source.md"), []byte(scriptSource+scriptRevision), 0o644))
	d.revised = true
	d.note("operator: revises source.md", "")
}

// command runs one custodian command in the crash binary and requires an
// exit status the script expects: 0, or 9 from a step that ended inside
// publish. At the crash point it first runs the command set to end before
// the point's write, requires that it ended there, and follows the
// recovery rule: a command that ended before its commit is run again, and
// one that ended after it is not: ended is then true, and there is no
// output to act on.
// history is what `custodian log` prints of the run, without the times,
// which differ from run to run.
func (d *scriptDriver) history() string {
	d.t.Helper()
	r := run(d.t, crashBinary, nil, "log", d.dir)
	require.Equal(d.t, 0, r.code, r.stderr)
	return d.rel(logTime.ReplaceAllString(r.stdout, "TIME"))
}

// completedBy matches who established that an effect completed.
var completedBy = regexp.MustCompile(`(completed, run \d+), by (step|recognizer)`)

var logTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

func (d *scriptDriver) command(args ...string) (r result, ended bool) {
	d.t.Helper()
	n := len(d.commands)
	d.commands = append(d.commands, d.rel(strings.Join(args, " ")))
	var env []string
	if d.logs != "" {
		env = append(env, "CUSTODIAN_CRASH_LOG="+filepath.Join(d.logs, fmt.Sprintf("%d.log", n)))
	}
	if p := d.crash; p != nil && p.command == n {
		require.Equal(d.t, p.args, d.commands[n], "the drive reached another command than the uninterrupted one")
		r = run(d.t, crashBinary, append(env, fmt.Sprintf("CUSTODIAN_CRASH_AT=%d", p.write)), args...)
		require.Equal(d.t, crashStatus, r.code, "stdout %q, stderr %q", r.stdout, r.stderr)
		require.Empty(d.t, r.stdout, "a command that ended before a write printed")
		require.Contains(d.t, r.stderr, fmt.Sprintf("ended before write %d (%s)", p.write, p.label()))
		d.witness()
		if args[0] == "start" {
			d.noRun()
		} else {
			d.readable()
		}
		if p.committed() {
			return r, true
		}
		return d.command(args...)
	}
	r = run(d.t, crashBinary, env, args...)
	require.NotEqual(d.t, 4, r.code, "custodian %s: the records cannot be trusted: %s", d.rel(strings.Join(args, " ")), r.stderr)
	if !(r.code == trial.PublishInterruptedStatus && args[0] == "step") {
		require.Equal(d.t, 0, r.code, "custodian %s: %s", d.rel(strings.Join(args, " ")), r.stderr)
		require.Empty(d.t, r.stderr)
	}
	d.witness()
	return r, false
}

// witness counts the times publish ran. Each time, publish writes
// RUN.published/reconciled.md anew; the witness marks every copy it sees,
// so a copy without the mark was written since it last looked, and a
// command runs publish at most once. The recognizer looks only at which
// files exist, so the mark does not change what it establishes.
func (d *scriptDriver) witness() {
	d.t.Helper()
	copyPath := filepath.Join(d.dir+".published", "reconciled.md")
	data, err := os.ReadFile(copyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	require.NoError(d.t, err)
	if bytes.HasSuffix(data, []byte(witnessMark)) {
		return
	}
	d.published++
	require.NoError(d.t, os.WriteFile(copyPath, append(data, witnessMark...), 0o644))
}

// note adds an event to the course, with RUN for the run directory.
func (d *scriptDriver) note(what, output string) {
	d.course = append(d.course, scriptEvent{what: what, output: d.rel(output)})
}

// rel replaces the run directory with RUN.
func (d *scriptDriver) rel(s string) string { return strings.ReplaceAll(s, d.dir, "RUN") }

func (d *scriptDriver) courseText() string {
	var b strings.Builder
	for _, e := range d.course {
		fmt.Fprintln(&b, e.what)
	}
	return b.String()
}

// points returns every write of the drive, which ran with logs set.
func (d *scriptDriver) points() []crashPoint {
	d.t.Helper()
	var points []crashPoint
	for n, args := range d.commands {
		data, err := os.ReadFile(filepath.Join(d.logs, fmt.Sprintf("%d.log", n)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a command without writes
		}
		require.NoError(d.t, err)
		labels := strings.Fields(string(data))
		for w := range labels {
			points = append(points, crashPoint{command: n, args: args, write: w + 1, labels: labels})
		}
	}
	return points
}

// what the drive left, for comparing with the uninterrupted drive.

// outputs are the files of the run outside the state directory: the
// inputs and every accepted output.
func (d *scriptDriver) outputs() map[string]string {
	return filterFiles(files(d.t, d.dir), func(rel string) bool { return !strings.HasPrefix(rel, ".custodian/") })
}

// kept are the files the engine moved aside into jobs/<job>/kept/.
func (d *scriptDriver) kept() map[string]string {
	return filterFiles(files(d.t, d.dir), func(rel string) bool {
		ok, err := path.Match(".custodian/jobs/*/kept/*", rel)
		return ok && err == nil
	})
}

// publication is what publish, and the operator, left outside the run.
func (d *scriptDriver) publication() map[string]string {
	if _, err := os.Stat(d.dir + ".published"); errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}
	}
	return files(d.t, d.dir+".published")
}

func filterFiles(m map[string]string, keep func(string) bool) map[string]string {
	maps.DeleteFunc(m, func(k, _ string) bool { return !keep(k) })
	return m
}

// docLabels are the write points docs/crash-points.md gives a recovery
// rule for: its table rows start with "| `label` |".
func docLabels(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "crash-points.md"))
	require.NoError(t, err)
	var labels []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		labels = append(labels, m[1])
	}
	require.NotEmpty(t, labels, "docs/crash-points.md lists no write points")
	return labels
}

// scriptCourse is the uninterrupted course, as the driver notes it.
var scriptCourse = []string{
	"step: launch assumptions#1 claims#1",
	"worker assumptions#1: an invalid output",
	"worker claims#1: a valid output",
	"step: launch assumptions#2",
	"worker assumptions#2: a problem report",
	"step: blocked assumptions (problem-report, repair)",
	"report repair --job assumptions",
	"step: launch assumptions#3",
	"worker assumptions#3: a problem report",
	"step: blocked assumptions (problem-report, stop)",
	"report stop --job assumptions",
	"release RUN assumptions",
	"step: launch assumptions#4",
	"worker assumptions#4: a valid output",
	"step: launch reconcile#1",
	"worker reconcile#1: a valid output",
	"step: exit 9, the process ended while publishing",
	"step: uncertain publish",
	"report stop",
	"operator: finishes the publication by hand",
	"step: done",
	"operator: revises source.md",
	"step: launch assumptions#5 claims#2",
	"worker assumptions#5: a valid output",
	"worker claims#2: a valid output",
	"step: launch reconcile#2",
	"worker reconcile#2: a valid output",
	"step: blocked effect publish (effect-inputs-changed, stop)",
	"report stop",
	"operator: withdraws the publication",
	"resolve RUN publish absent",
	"step: done",
}

func TestEveryCrashPointOfAScriptedRun(t *testing.T) {
	t.Parallel()
	// The uninterrupted course, recording every command's writes.
	ref := newScriptDriver(t)
	ref.logs = t.TempDir()
	ref.play()
	var course []string
	for _, e := range ref.course {
		course = append(course, e.what)
	}
	require.Equal(t, scriptCourse, course, "the uninterrupted course is not the one the script is written for")
	require.Equal(t, 2, ref.published, "publish ran once halfway and once in full")
	require.Equal(t, "{\"outcome\":\"done\"}\n", ref.final)
	refOutputs, refKept, refPublication := ref.outputs(), ref.kept(), ref.publication()
	require.Len(t, refKept, 6, "kept: the refused output, two problem reports, three outputs handed out again")

	points := ref.points()
	// The run's start is ended before each of its writes, and run again.
	var startPoints []string
	for _, p := range points {
		if p.command == 0 {
			require.Equal(t, "start trial --run RUN --param scenario=uncertain", p.args)
			startPoints = append(startPoints, p.label())
		}
	}
	require.Equal(t, startWrites, startPoints, "start's write points")
	reached := map[string]bool{}
	for _, p := range points {
		reached[p.label()] = true
	}

	// Every write point has a recovery rule, and every rule a write point.
	documented := docLabels(t)
	for label := range reached {
		assert.Contains(t, documented, label, "write point %s has no recovery rule in docs/crash-points.md", label)
		assert.NotContains(t, unreachable, label, "write point %s is reached: take it off the unreachable list", label)
	}
	for _, label := range documented {
		if _, ok := unreachable[label]; !ok {
			assert.True(t, reached[label], "docs/crash-points.md lists write point %s, which the scripted run never reaches", label)
		}
	}
	for label := range unreachable {
		assert.Contains(t, documented, label, "the unreachable write point %s is not in docs/crash-points.md", label)
	}
	t.Logf("%d crash points in %d commands", len(points), len(ref.commands))

	for _, p := range points {
		t.Run(p.name(), func(t *testing.T) {
			t.Parallel()
			d := newScriptDriver(t)
			d.crash = &p
			d.play()

			assert.Equal(t, ref.final, d.final, "the last step's outcome")
			assert.Equal(t, ref.published, d.published, "publish ran another number of times")
			assert.Equal(t, refOutputs, d.outputs(), "the inputs and accepted outputs")
			assert.Equal(t, refPublication, d.publication(), "what publish left outside the run")
			kept := d.kept()
			for rel, data := range refKept {
				if assert.Contains(t, kept, rel, "a kept file is lost") {
					assert.Equal(t, data, kept[rel], "kept file %s", rel)
				}
			}
			// Run again or finished by the next step, the command did what it
			// would have done, and the history records it once.
			assert.Equal(t, ref.course, d.course, "the course after a command that ended")
			assert.Equal(t, refKept, kept)
			want, got := ref.history(), d.history()
			if p.label() == "effect-completed" {
				// The effect ran in full and its completion went unrecorded: the
				// next step's recognizer establishes it, and the history says so.
				want, got = completedBy.ReplaceAllString(want, "$1"), completedBy.ReplaceAllString(got, "$1")
			}
			assert.Equal(t, want, got, "the run's history")
		})
	}
}

// crashAt runs `step dir` with the crash binary ended just before its n-th
// write, and requires that it ended there.
func crashAt(t *testing.T, dir string, n int) {
	t.Helper()
	r := run(t, crashBinary, []string{fmt.Sprintf("CUSTODIAN_CRASH_AT=%d", n)}, "step", dir)
	require.Equal(t, crashStatus, r.code, "stdout %q, stderr %q", r.stdout, r.stderr)
	assert.Empty(t, r.stdout, "a step that ended before its commit printed an outcome")
	assert.Contains(t, r.stderr, fmt.Sprintf("ended before write %d", n))
}

func TestStepEndedBeforeItsFirstWriteChangesNothing(t *testing.T) {
	dir := trialRun(t, "clean")
	before := files(t, dir)
	state := before[".custodian/state.json"]
	require.NotEmpty(t, state, "setup left no state.json")

	crashAt(t, dir, 1)
	assert.Equal(t, before, files(t, dir))
	assert.Equal(t, state, files(t, dir)[".custodian/state.json"], "a step that ended before its first write changed state.json")
	for rel := range files(t, dir) {
		assert.NotContains(t, rel, "prompt-", "a step that ended before its first write left %s", rel)
	}

	assert.Equal(t, firstLaunch(dir), ok(t, "step", dir))
}
