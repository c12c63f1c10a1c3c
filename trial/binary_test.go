package trial_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow/engine"
)

// buildCustodian builds the custodian binary into a temporary directory.
// `go test` puts its own go command first on PATH.
func buildCustodian(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the custodian binary")
	}
	gocmd, err := exec.LookPath("go")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "custodian")
	out, err := exec.Command(gocmd, "build", "-o", bin, "github.com/custodian-run/custodian/cmd/custodian").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// The scenarios whose course the scripted agent completes without an
// ending outside the loop: uncertain ends a step with status 9, busy with 3.
var drivenScenarios = []struct {
	scenario string
}{{"clean"}, {"retry"}, {"problem"}, {"stop"}, {"stop-only"}, {"parameters"}}

func TestThroughTheBinary(t *testing.T) {
	bin := buildCustodian(t)

	// The JSON the binary prints must carry every outcome the engine gives in
	// process: the same script drives both to the same course.
	for _, tc := range drivenScenarios {
		t.Run("json matches in process "+tc.scenario, func(t *testing.T) {
			setup := func() string {
				dir, err := trial.Setup(definitions.Builtin(), trial.SetupOptions{
					Scenario: tc.scenario, Dir: filepath.Join(t.TempDir(), "run"),
					Launch: launchFor(tc.scenario),
				})
				require.NoError(t, err)
				return dir
			}
			inDir, binDir := setup(), setup()
			o, err := engine.Open(definitions.Builtin(), inDir)
			require.NoError(t, err)

			inProcess, err := (&trial.Agent{Runner: trial.InProcess(o), RunDir: inDir, Script: trial.ScenarioScript(tc.scenario)}).Drive()
			require.NoError(t, err)
			throughBinary, err := (&trial.Agent{Runner: trial.Binary(bin, binDir), RunDir: binDir, Script: trial.ScenarioScript(tc.scenario)}).Drive()
			require.NoError(t, err)

			assert.Equal(t, inProcess.Course(), throughBinary.Course())
			assert.Equal(t, inProcess.Reports, throughBinary.Reports)
			for i, step := range throughBinary.Steps {
				for j, h := range step.Jobs {
					assert.JSONEq(t, string(inProcess.Steps[i].Jobs[j].Launch), string(h.Launch), "step %d job %s", i+1, h.Name)
				}
			}
		})
	}
}

func launchFor(scenario string) map[string]string {
	if scenario == "parameters" {
		return map[string]string{"model": "small"}
	}
	return nil
}
