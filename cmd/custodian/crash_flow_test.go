package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/internal/proc"
	"github.com/custodian-run/custodian/workflow/engine"
)

// besideRunning is a trial run as a drive holds it after its first step:
// claims' worker ended with an output its validator refuses, and
// assumptions' worker still runs (a process of this test, leased in
// round.json). The test process is the drive.
type besideRunning struct {
	dir    string
	self   engine.Process
	held   *engine.Driver
	before map[string]string // the state's record of assumptions before the step
}

func newBesideRunning(t *testing.T) *besideRunning {
	t.Helper()
	dir := trialRun(t, "clean")
	require.Equal(t, firstLaunch(dir), ok(t, "step", dir))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "claims.md"), []byte("not the claims\n"), 0o644))

	worker := exec.Command("sleep", "600")
	require.NoError(t, worker.Start())
	t.Cleanup(func() { _ = worker.Process.Kill(); _ = worker.Wait() })
	workerStart, err := proc.StartTime(worker.Process.Pid)
	require.NoError(t, err)
	selfStart, err := proc.StartTime(os.Getpid())
	require.NoError(t, err)

	o, err := engine.Open(definitions.Builtin(), dir)
	require.NoError(t, err)
	t.Cleanup(o.Close)
	b := &besideRunning{dir: dir, self: engine.Process{Pid: os.Getpid(), Start: selfStart}}
	b.held = o.Driver(b.self)
	require.NoError(t, b.held.Begin())
	require.NoError(t, b.held.BeginRound())
	require.NoError(t, b.held.Lease(engine.Lease{Job: "assumptions", Attempt: 1, Launch: 1,
		Process: engine.Process{Pid: worker.Process.Pid, Start: workerStart}}))
	b.before = b.jobs(t)
	return b
}

// step runs the drive's step beside assumptions' worker with bin and env.
func (b *besideRunning) step(t *testing.T, bin string, env ...string) result {
	t.Helper()
	args := append([]string{"step", b.dir, "--json", "--driver", drive.DriverToken(b.self)}, drive.RunningArgs(map[string]int{"assumptions": 1})...)
	return run(t, bin, env, args...)
}

// promptHash is the hash of a hand-out's prompt file, which names the run's
// directory: two runs' records differ in it alone.
var promptHash = regexp.MustCompile(`"outstanding":\{"prompt":"[0-9a-f]{64}"`)

// jobs reads each job's record in state.json, as raw JSON, without its
// prompt file's hash.
func (b *besideRunning) jobs(t *testing.T) map[string]string {
	t.Helper()
	var st struct {
		Jobs map[string]json.RawMessage `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(fileText(t, filepath.Join(b.dir, ".custodian", "state.json"))), &st))
	out := map[string]string{}
	for name, raw := range st.Jobs {
		out[name] = promptHash.ReplaceAllString(string(raw), `"outstanding":{"prompt":"HASH"`)
	}
	return out
}

// relative makes an outcome's paths relative to the run, to compare two
// runs' outcomes.
func (b *besideRunning) relative(s string) string { return strings.ReplaceAll(s, b.dir, "RUN") }

// A drive's step beside a running worker, ended before each of its writes:
// the running hand-out is never judged or charged, its lease stays, and
// the run recovers as a drive recovers, to the records, kept files and
// outcome of the step that was not ended.
func TestEveryCrashPointOfAStepBesideRunningWorkers(t *testing.T) {
	t.Parallel()
	ref := newBesideRunning(t)
	log := filepath.Join(t.TempDir(), "writes")
	r := ref.step(t, crashBinary, "CUSTODIAN_CRASH_LOG="+log)
	require.Equal(t, 0, r.code, r.stderr)
	var out engine.Outcome
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Equal(t, engine.KindLaunch, out.Kind)
	require.Equal(t, []string{"assumptions"}, out.Running)
	require.Len(t, out.Jobs, 1)
	require.Equal(t, "claims", out.Jobs[0].Name, "claims' refused output is handed out again")
	refOut, refJobs := ref.relative(r.stdout), ref.jobs(t)
	assert.Equal(t, ref.before["assumptions"], refJobs["assumptions"], "the running hand-out was judged")
	refKept := keptBytes(t, ref.dir)
	require.Len(t, refKept, 1, "claims' refused output is kept")

	points := strings.Fields(fileText(t, log))
	require.Contains(t, points, "state")
	commit := -1
	for i, p := range points {
		if p == "state" {
			commit = i + 1
		}
	}
	t.Logf("%d write points: %s", len(points), strings.Join(points, " "))
	for n := 1; n <= len(points); n++ {
		t.Run(fmt.Sprintf("%d-%s", n, points[n-1]), func(t *testing.T) {
			t.Parallel()
			b := newBesideRunning(t)
			r := b.step(t, crashBinary, fmt.Sprintf("CUSTODIAN_CRASH_AT=%d", n))
			require.Equal(t, crashStatus, r.code, "stdout %q, stderr %q", r.stdout, r.stderr)
			assert.Equal(t, b.before["assumptions"], b.jobs(t)["assumptions"], "the running hand-out was judged or charged")
			rd, err := b.held.InFlight()
			require.NoError(t, err)
			require.Len(t, rd.Workers, 1, "the running worker's lease is lost")

			// Before the commit, the step changed nothing that counts, and
			// run again it is the step that was not. After it, the step's
			// moves are owed and its outcome went unseen: the next step
			// finishes them and gives that outcome again.
			r = b.step(t, binary)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, refOut, b.relative(r.stdout))
			if n > commit {
				// And the next drive launches the hand-out nobody launched,
				// as the step gave it, before it steps.
				unlaunched, err := b.held.Unlaunched()
				require.NoError(t, err)
				require.Len(t, unlaunched, 1)
				assert.Equal(t, ref.relative(string(mustJSON(t, out.Jobs[0]))), b.relative(string(mustJSON(t, unlaunched[0]))))
			}
			assert.Equal(t, refJobs, b.jobs(t), "the jobs' records")
			assert.Equal(t, refKept, keptBytes(t, b.dir), "the kept files")
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

// keptBytes returns the files a run keeps aside, relative, with their
// bytes.
func keptBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	kept := map[string]string{}
	for rel, data := range files(t, dir) {
		if strings.Contains(rel, "/kept/") {
			kept[rel] = data
		}
	}
	return kept
}
