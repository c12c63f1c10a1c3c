package workflow_test

// A process that ends inside an effect cannot be simulated in the process
// that observes it: the engine catches every panic and runtime.Goexit as the
// end of a path, and writing the journal by hand would test the test. So the
// test binary runs itself again (the helper-process pattern of os/exec's
// tests): the child opens the same run with the same registry, steps it, and
// ends with os.Exit inside the effect's do. The parent then steps the run in
// this process, as the next `custodian step` would.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/require"
)

// TestEffectHelperProcess is not a test: it is the child process of the
// effect crash tests, and skips itself unless a parent started it.
func TestEffectHelperProcess(t *testing.T) {
	dir := os.Getenv(effectRunEnv)
	if dir == "" {
		t.Skip("the child process of the effect crash tests; runs only when started by one")
	}
	o, err := workflow.Open(effectRegistry(), dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: open: %v\n", err)
		os.Exit(3)
	}
	out, err := o.Step()
	// Reaching this line means the step did not end inside the effect.
	text, _ := json.Marshal(out)
	fmt.Printf("child: the step returned %s, error %v\n", text, err)
	os.Exit(0)
}

// crashStep steps the run in a child process that must end inside an effect
// at point, leaving behind only what the child wrote before it ended.
func (r *effectRun) crashStep(point string) {
	r.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEffectHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), effectRunEnv+"="+r.dir, effectCrashEnv+"="+point)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(r.t, err, &exit, "the child should have ended inside the effect at %s; it said:\n%s", point, out)
	require.Equal(r.t, effectCrashStatus, exit.ExitCode(), "the child said:\n%s", out)
	require.FileExists(r.t, effectOutside(r.dir, "ended-at-"+point), "the child ended, but not at %s", point)
	require.NoError(r.t, os.Remove(effectOutside(r.dir, "ended-at-"+point)))
}
