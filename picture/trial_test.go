package picture_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/picture"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow/engine"
)

// The trial run at each scenario's end, driven in process by the scripted
// agent orchestrator, drawn as Mermaid, DOT and SVG. The uncertain scenario ends
// a process inside an effect and the busy one steps in the background, so
// cmd/custodian draws those two through the binary.
func TestGoldenPicturesOfTheTrialScenarios(t *testing.T) {
	for _, scenario := range []string{"clean", "retry", "problem", "stop", "stop-only", "parameters"} {
		t.Run(scenario, func(t *testing.T) {
			reg := definitions.Builtin()
			dir, err := trial.Setup(reg, trial.SetupOptions{Scenario: scenario, Dir: filepath.Join(t.TempDir(), "run")})
			require.NoError(t, err)
			o, err := engine.Open(reg, dir)
			require.NoError(t, err)
			defer o.Close()
			agent := &trial.Agent{Runner: trial.InProcess(o), RunDir: dir, Script: trial.ScenarioScript(scenario)}
			_, err = agent.Drive()
			require.NoError(t, err)

			g, err := o.Graph()
			require.NoError(t, err)
			var mermaid, dot, svg bytes.Buffer
			require.NoError(t, picture.Mermaid(&mermaid, g, picture.Options{}))
			require.NoError(t, picture.DOT(&dot, g, picture.Options{}))
			require.NoError(t, picture.SVG(&svg, g, picture.Options{}))
			golden(t, "trial-"+scenario+".mmd", mermaid.String())
			golden(t, "trial-"+scenario+".dot", dot.String())
			golden(t, "trial-"+scenario+".svg", svg.String())
		})
	}
}
