package shell_test

import (
	"testing"

	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
)

func TestReportPrintsItsNumber(t *testing.T) {
	dir := trialRun(t, "clean")
	ok(t, "step", dir)
	assert.Equal(t, "report 1 recorded\n", ok(t, "report", dir, "launch-failed", "--job", "claims", "--text", "no such model"))
	assert.Equal(t, "report 2 recorded\n", ok(t, "report", "--text=fixed it", dir, "repair"))
	assert.Equal(t, "report 3 recorded\n", ok(t, "report", dir, "stop"))
}

func TestReportRefusals(t *testing.T) {
	tests := []struct {
		name string
		args []string
		hint string
	}{
		{"an unlisted event", []string{"finished", "--text", "all done"}, "report one of: launch-failed, repair, stop"},
		{"a job the run does not have", []string{"repair", "--job", "nope"}, "name a job that step has handed out, or leave --job out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := trialRun(t, "clean")
			ok(t, "step", dir)
			before := listing(t, dir)
			requireFailure(t, custodian(t, append([]string{"report", dir}, tt.args...)...), engine.ExitFailed, tt.hint)
			assert.Equal(t, before, listing(t, dir))
		})
	}
}

func TestRelease(t *testing.T) {
	t.Run("a stopped job", func(t *testing.T) {
		dir := blockedRun(t, "stop-only")
		ok(t, "step", dir)
		assert.Empty(t, ok(t, "release", dir, "assumptions"))
		assert.Equal(t, "launch\n- assumptions: `"+prompt(dir, "assumptions", 3)+"`\n", ok(t, "step", dir))
	})
	tests := []struct {
		name    string
		subject string
		hint    string
	}{
		{"a job that is not stopped", "claims", "run step: a block that permits a repair is the agent orchestrator's to repair; release only a subject step reports as permitting only stopping"},
		{"workflow, not stopped", "workflow", "run step: a block that permits a repair is the agent orchestrator's to repair; release only a subject step reports as permitting only stopping"},
		{"a job the run does not have", "nope", "name a job of the run, or workflow"},
		{"an effect", "effect publish", "the operator records what took place with resolve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := trialRun(t, "clean")
			ok(t, "step", dir)
			before := listing(t, dir)
			requireFailure(t, custodian(t, "release", dir, tt.subject), engine.ExitFailed, tt.hint)
			assert.Equal(t, before, listing(t, dir))
		})
	}
}
