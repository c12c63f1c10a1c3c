package drive_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/workflow/engine"
)

var (
	// fakeworker is the fake worker, built once for every test.
	fakeworker string
	// fakeBin holds claude and codex, links to fakeworker, for the PATH of
	// the workers the tests start (and no other process's).
	fakeBin string
)

func TestMain(m *testing.M) {
	// The test binary is also the keeper, and the process that a test
	// kills under a kept worker (keeper_linux_test.go).
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "keep-group", "start-kept":
			os.Exit(helperRole(os.Args[1], os.Args[2:]))
		}
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "drive-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fakeworker = filepath.Join(dir, "fakeworker")
	build := exec.Command("go", "build", "-o", fakeworker, "./testdata/fakeworker")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the fake worker:", err)
		return 1
	}
	fakeBin = filepath.Join(dir, "bin")
	if err := os.Mkdir(fakeBin, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, name := range []string{"claude", "codex"} {
		if err := os.Symlink(fakeworker, filepath.Join(fakeBin, name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// newHandout writes the prompt file of job's first hand-out in the run
// directory dir, as the engine would, and returns the hand-out.
func newHandout(t *testing.T, dir, job, launch string) engine.Handout {
	t.Helper()
	jobDir := filepath.Join(dir, engine.StateDir, "jobs", job)
	require.NoError(t, os.MkdirAll(jobDir, 0o755))
	p := engine.Prompt{
		Task:    "List the claims the text makes.",
		Output:  filepath.Join(dir, job+".md"),
		Problem: filepath.Join(dir, job+".problem.md"),
	}
	path := filepath.Join(jobDir, "prompt-1.md")
	require.NoError(t, os.WriteFile(path, p.Text(), 0o644))
	return engine.Handout{Name: job, Attempt: 1, Prompt: path, Output: p.Output, Problem: p.Problem, Launch: json.RawMessage(launch)}
}

// fakeCommand returns the command of the profile worker (with --command
// command) for h, whose worker finds claude and codex in fakeBin and gets
// env besides.
func fakeCommand(t *testing.T, worker, command string, h engine.Handout, dir string, env ...string) *drive.Command {
	t.Helper()
	p, err := drive.NewProfile(worker, command)
	require.NoError(t, err)
	c, err := p.Command(h, dir)
	require.NoError(t, err)
	c.Env = setenv(c.Env, append([]string{"PATH=" + fakeBin + string(os.PathListSeparator) + "/usr/bin:/bin"}, env...)...)
	return c
}

// setenv returns env with the KEY=VALUE pairs of set in place of any
// value of their KEY; of two in set, the later wins.
func setenv(env []string, set ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		replaced := false
		for _, s := range set {
			replaced = replaced || strings.HasPrefix(s, name+"=")
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// writeScript writes the fake worker's script and returns the variable
// that names it.
func writeScript(t *testing.T, plan map[string][]string) string {
	t.Helper()
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return "FAKEWORKER_SCRIPT=" + path
}

// runWorker starts c and waits for it.
func runWorker(t *testing.T, c *drive.Command, o drive.Options) drive.Result {
	t.Helper()
	w, err := drive.Start(c, o)
	require.NoError(t, err)
	return w.Wait()
}
