package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The binaries under test, built once by TestMain: the custodian binary as
// it ships, and one built with the crashpoints tag, which can be told to end
// itself just before any write (see store/crash_points.go).
var (
	binary      string
	crashBinary string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "custodian-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "custodian")
	crashBinary = filepath.Join(dir, "custodian-crash")
	builds := append([][]string{
		{"build", "-o", binary, "."},
		{"build", "-tags", "crashpoints", "-o", crashBinary, "."},
	}, append(variantBuilds(dir), driveBuilds(dir)...)...)
	// The builds share the build cache and differ in their links, which
	// take a core each: one at a time on each.
	failed := make(chan error, len(builds))
	places := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for _, args := range builds {
		wg.Go(func() {
			places <- struct{}{}
			defer func() { <-places }()
			if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
				failed <- fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
	wg.Wait()
	close(failed)
	for err := range failed {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// result is what one process printed and its exit status.
type result struct {
	stdout, stderr string
	code           int
}

// run runs bin with args in a process of its own, with env added to an
// environment that has no crash settings of its own.
func run(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CUSTODIAN_CRASH_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// ok runs the custodian binary with args, requires exit status 0 and
// nothing on stderr, and returns what it printed.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := run(t, binary, nil, args...)
	require.Equal(t, 0, r.code, "custodian %s: %s", strings.Join(args, " "), r.stderr)
	require.Empty(t, r.stderr)
	return r.stdout
}

// trialRun sets up a run of the trial definition for scenario and returns
// its directory.
func trialRun(t *testing.T, scenario string, flags ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	out := ok(t, append([]string{"trial", "setup", scenario, "--run", dir}, flags...)...)
	require.Equal(t, "run: "+dir+"\n", out)
	return dir
}

// firstLaunch is what the first step of a clean trial run in dir prints.
func firstLaunch(dir string) string {
	return "launch\n" +
		"- assumptions: `" + filepath.Join(dir, ".custodian", "jobs", "assumptions", "prompt-1.md") + "`\n" +
		"- claims: `" + filepath.Join(dir, ".custodian", "jobs", "claims", "prompt-1.md") + "`\n"
}

func TestExitCodes(t *testing.T) {
	dir := trialRun(t, "clean")
	notRun := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"unknown command", []string{"bogus"}, 2},
		{"no command", nil, 2},
		{"unknown flag", []string{"--bogus"}, 2},
		{"unknown flag after the run", []string{"step", dir, "--bogus"}, 2},
		{"step without RUN", []string{"step"}, 2},
		{"step with an extra argument", []string{"step", dir, "extra"}, 2},
		{"param without a value", []string{"start", "trial", "--param", "novalue"}, 2},
		{"unknown trial command", []string{"trial", "bogus"}, 2},
		{"an unlisted report event", []string{"report", dir, "finished"}, 1},
		{"release of a job that is not stopped", []string{"release", dir, "claims"}, 1},
		{"an unknown definition", []string{"start", "nope", "--run", filepath.Join(notRun, "x")}, 1},
		{"not a run", []string{"step", notRun}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, binary, nil, tt.args...)
			assert.Equal(t, tt.code, r.code, "stderr %q", r.stderr)
			assert.Empty(t, r.stdout)
			assert.True(t, strings.HasPrefix(r.stderr, "custodian: "), "stderr %q", r.stderr)
			assert.Contains(t, r.stderr, "\ncustodian: hint: ")
		})
	}
	assert.Equal(t, firstLaunch(dir), ok(t, "step", dir), "a refused command changed the run")
}

// The demo drives a trial run with custodian drive and the scripted worker,
// repairing what the script repairs between drives, and leaves the evidence
// of every launch.
func TestTrialDemoDrivesARunThroughTheBinary(t *testing.T) {
	cases := []struct {
		scenario string
		final    string
		launches map[string]int // each job's launches
	}{
		{"clean", "final: done", map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}},
		{"retry", "final: done", map[string]int{"assumptions": 1, "claims": 1, "reconcile": 2}},
		{"problem", "final: done", map[string]int{"assumptions": 1, "claims": 1, "notes": 2, "reconcile": 1}},
		{"stop", "final: blocked: the script repairs none of it, so the run waits for the operator", map[string]int{"assumptions": 2, "claims": 1}},
		{"stop-only", "final: blocked: the script repairs none of it, so the run waits for the operator", map[string]int{"assumptions": 2, "claims": 1}},
		// exec's command gives claims its model with {param:model?}, and
		// assumptions, which has none, no --model at all.
		{"parameters", "final: done", map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}},
		{"uncertain", "final: uncertain: the operator establishes what took place", map[string]int{"assumptions": 1, "claims": 1, "reconcile": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.scenario, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			out := ok(t, "trial", "demo", "--scenario", tc.scenario, "--run", dir)
			assert.True(t, strings.HasPrefix(out, "run: "+dir+"\nscenario: "+tc.scenario+"\n"), out)
			assert.True(t, strings.HasSuffix(out, "\n"+tc.final+"\n"), out)
			for job, n := range tc.launches {
				for k := 1; k <= n; k++ {
					assert.FileExists(t, filepath.Join(dir, ".custodian", "jobs", job, fmt.Sprintf("launch-%d", k), "launch.json"))
				}
				assert.NoDirExists(t, filepath.Join(dir, ".custodian", "jobs", job, fmt.Sprintf("launch-%d", n+1)))
			}
			status := ok(t, "status", dir)
			assert.Contains(t, status, "  last launch: attempt ")
			// A job's story shows each launch's evidence where it is.
			story := ok(t, "status", dir, "--job", "claims")
			evidence := filepath.Join(dir, ".custodian", "jobs", "claims", "launch-1")
			assert.Contains(t, story, "\n    launch 1: worker exec, pid ")
			assert.Contains(t, story, "\n    stdout: "+filepath.Join(evidence, "stdout")+" (")
			if tc.final == "final: done" {
				assert.Equal(t, "done\n", ok(t, "step", dir))
			}
			if tc.scenario == "problem" {
				// The second drive's steps are numbered as the run counts
				// them, as the lines of what they decided are.
				assert.Regexp(t, `\d\d:\d\d:\d\d step 4: launch\n\d\d:\d\d:\d\d step 4 decided: `, out)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	assert.Regexp(t, `^custodian version \S+\n$`, ok(t, "--version"))
}

func TestBusyRunIsRefusedAtOnce(t *testing.T) {
	dir := trialRun(t, "busy", "--hold", "2")
	assert.NoFileExists(t, dir+".hold", "setup returned before the hold began")
	assert.FileExists(t, dir+".hold.log")

	r := run(t, binary, nil, "step", dir)
	require.Equal(t, 3, r.code, "stdout %q, stderr %q", r.stdout, r.stderr)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "busy")
	assert.Contains(t, r.stderr, "\ncustodian: hint: another custodian process is working on this run; do not start a second loop and do not retry on your own: tell the operator\n")

	// Wait for the held step the way it holds the run: by its lock.
	lock := flock.New(filepath.Join(dir, ".custodian", "lock"))
	require.NoError(t, lock.Lock())
	require.NoError(t, lock.Unlock())

	// The held step finished its work: it handed out the first attempts,
	// so the next step, in a round without outputs, hands out the second.
	assert.Equal(t, "launch\n"+
		"- assumptions: `"+filepath.Join(dir, ".custodian", "jobs", "assumptions", "prompt-2.md")+"`\n"+
		"- claims: `"+filepath.Join(dir, ".custodian", "jobs", "claims", "prompt-2.md")+"`\n",
		ok(t, "step", dir))
}

// files returns every regular file under dir, relative, with its bytes.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	require.NoError(t, err)
	return out
}
