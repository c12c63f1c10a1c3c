package shell_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storyLaunch records a launch of job by custodian drive, as drive records
// one that ended, through the engine.
func storyLaunch(t *testing.T, dir string, l *engine.Launch, stdout, stderr string) {
	t.Helper()
	o, err := engine.Open(definitions.Builtin(), dir)
	require.NoError(t, err)
	defer o.Close()
	_, err = o.Driver(engine.Process{}).RecordLaunch(l, []byte(stdout), []byte(stderr))
	require.NoError(t, err)
}

// storyCourse takes a stop-only trial run through a launch by drive, a
// refusal, a block that permits only stopping, the stop report and the
// release, to the fourth step, and returns its directory.
func storyCourse(t *testing.T) string {
	t.Helper()
	dir := trialRun(t, "stop-only")
	ok(t, "step", dir)
	storyLaunch(t, dir, &engine.Launch{Job: "assumptions", Attempt: 1, Launch: 1, Worker: "exec", Command: []string{"worker", "prompt"},
		Host: "box", Process: engine.Process{Pid: 4242, Start: "1"}, StartedAt: "2026-12-01T00:02:03Z", EndedAt: "2026-12-01T00:02:09Z",
		Outcome: "finished", ExitStatus: 0, Session: "s-1", Message: "I wrote\nassumptions.md",
		Stdout: engine.OutputRecord{Bytes: 100, Kept: 9}, Stderr: engine.OutputRecord{}}, "wrote it\n", "")
	statusBothLenses(t, dir)
	ok(t, "step", dir)
	writeOutput(t, dir, "assumptions.md", valid)
	ok(t, "step", dir)
	ok(t, "report", dir, "stop", "--job", "assumptions", "--text", "the block permits only stopping")
	ok(t, "release", dir, "assumptions")
	ok(t, "step", dir)
	return dir
}

// status --job tells one job's story: where it stands, then each hand-out
// with its prompt and what followed it, launches with their evidence.
func TestStatusJobTellsTheJobsStory(t *testing.T) {
	dir := storyCourse(t)
	record := func(rel ...string) string {
		return statusRecord(dir, append([]string{"jobs", "assumptions"}, rel...)...)
	}
	refused := "refused assumptions, attempt %s (validator-refused): the output was refused by its validator " +
		"(the output must be empty and must also start with a level-one heading)"
	assert.Equal(t, lines(
		"assumptions: awaited, 3 attempts",
		"  last failure: the output was refused by its validator, attempt 2 of 2 (validator-refused)",
		"  last launch: attempt 1, finished, exit 0; evidence "+record("launch-1"),
		"run: "+dir,
		"output: "+filepath.Join(dir, "assumptions.md"),
		"attempt 1, handed out by step 1 at TIME: "+record("prompt-1.md"),
		"  TIME  step 1    launched assumptions, attempt 1: finished, exit 0; evidence "+record("launch-1"),
		"    launch 1: worker exec, pid 4242 on host box, from TIME to TIME, session s-1",
		"    message: I wrote\\nassumptions.md",
		"    stdout: "+record("launch-1", "stdout")+" (100 bytes written, the last 9 kept)",
		"    stderr: "+record("launch-1", "stderr")+" (0 bytes written)",
		"  TIME  step 2    "+strings.Replace(refused, "%s", "1", 1),
		"  TIME  step 2    kept assumptions.md of assumptions as "+record("kept", "1-assumptions.md"),
		"attempt 2, handed out by step 2 at TIME: "+record("prompt-2.md"),
		"  TIME  step 3    "+strings.Replace(refused, "%s", "2", 1),
		"  TIME  step 3    kept assumptions.md of assumptions as "+record("kept", "2-assumptions.md"),
		"  TIME  step 3    blocked assumptions (validator-refused): the output was refused by its validator, attempt 2 of 2 (permits stop); "+
			"record "+record("block-1.md"),
		"  TIME  step 3    report 1, stop on assumptions: the block permits only stopping",
		"  TIME  step 3    released assumptions",
		"attempt 3, handed out by step 4 at TIME: "+record("prompt-3.md"),
	), statusUntimed(ok(t, "status", dir, "--job", "assumptions")))

	assert.Equal(t, lines(
		"claims: accepted, 1 attempt",
		"run: "+dir,
		"output: "+filepath.Join(dir, "claims.md"),
		"attempt 1, handed out by step 1 at TIME: "+statusRecord(dir, "jobs", "claims", "prompt-1.md"),
		"  TIME  step 2    accepted claims, attempt 1",
	), statusUntimed(ok(t, "status", "--job", "claims", dir)), "flags before the run")
}

// status --job --json prints the engine's JobStory as one object.
func TestStatusJobJSONDecodesIntoAJobStory(t *testing.T) {
	dir := storyCourse(t)
	out := ok(t, "status", dir, "--job", "assumptions", "--json")
	assert.Equal(t, 1, strings.Count(out, "\n"), "one object on one line")
	var got engine.JobStory
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got))

	o, err := engine.Open(definitions.Builtin(), dir)
	require.NoError(t, err)
	defer o.Close()
	want, err := o.Story("assumptions")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	require.Len(t, got.Handouts, 3)
	require.Len(t, got.Handouts[0].Launches, 1)
	assert.Equal(t, "s-1", got.Handouts[0].Launches[0].Record.Session)
}

// An unknown job is refused as log refuses it, and writes nothing.
func TestStatusJobRefusesAnUnknownJob(t *testing.T) {
	dir := storyCourse(t)
	before := listing(t, dir)
	r := custodian(t, "status", dir, "--job", "assumption")
	requireFailure(t, r, engine.ExitFailed, "name one of the run's jobs (assumptions, claims); custodian status "+dir+" lists them\n")
	assert.Equal(t, "custodian: run "+dir+" has no job \"assumption\"\n", strings.SplitAfter(r.stderr, "\n")[0])
	assert.Equal(t, before, listing(t, dir))
}

// Evidence a drive kept and never recorded in the history shows under the
// hand-out it worked on: a whole launch record, and a launch directory
// whose launch.json was never written.
func TestStatusJobShowsEvidenceTheHistoryLacks(t *testing.T) {
	dir := storyCourse(t)
	jobDir := statusRecord(dir, "jobs", "assumptions")
	data, err := os.ReadFile(filepath.Join(jobDir, "launch-1", "launch.json"))
	require.NoError(t, err)
	third := strings.NewReplacer(`"attempt":1`, `"attempt":3`, `"launch":1`, `"launch":3`, `"outcome":"finished"`, `"outcome":"idle"`).Replace(string(data))
	for rel, text := range map[string]string{
		"launch-2/stdout": "half\n", "launch-3/launch.json": third, "launch-3/stdout": "", "launch-3/stderr": "",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(jobDir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(jobDir, rel), []byte(text), 0o644))
	}

	out := statusUntimed(ok(t, "status", dir, "--job", "assumptions"))
	_, last, found := strings.Cut(out, "attempt 3, handed out by step 4 at TIME: "+filepath.Join(jobDir, "prompt-3.md")+"\n")
	require.True(t, found, out)
	assert.Equal(t, lines(
		"  launch 2: its end is not recorded; evidence "+filepath.Join(jobDir, "launch-2"),
		"    not in the history: a drive kept this evidence and ended before it recorded the launch",
		"    launch 2: its launch.json is missing: a drive ended while it kept the evidence",
		"  launch 3, attempt 3: idle, exit 0; evidence "+filepath.Join(jobDir, "launch-3"),
		"    not in the history: a drive kept this evidence and ended before it recorded the launch",
		"    launch 3: worker exec, pid 4242 on host box, from TIME to TIME, session s-1",
		"    message: I wrote\\nassumptions.md",
		"    stdout: "+filepath.Join(jobDir, "launch-3", "stdout")+" (100 bytes written, the last 9 kept)",
		"    stderr: "+filepath.Join(jobDir, "launch-3", "stderr")+" (0 bytes written)",
	), last)
}
