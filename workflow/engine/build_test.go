package engine_test

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThisBuildIsTheGoBuildID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the build ID is read from ELF binaries")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to read the build ID with")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	want, err := exec.Command(goTool, "tool", "buildid", exe).Output()
	require.NoError(t, err)
	got := engine.ThisBuild()
	assert.Equal(t, strings.TrimSpace(string(want)), got.ID)
	assert.Equal(t, got, engine.ThisBuild(), "read once, the same every time")
	parts := strings.Split(got.ID, "/")
	assert.Contains(t, engine.BuildText(got), ", build "+parts[len(parts)-1])
}

func TestBuildTextNamesWhatAPersonMatches(t *testing.T) {
	tests := []struct {
		build engine.Build
		want  string
	}{
		{engine.Build{}, "custodian of an unknown build"},
		{engine.Build{ID: "AAAA/BBBB"}, "custodian, build BBBB"},
		{engine.Build{ID: "AAAA/BBBB", Revision: "3f9c2a7d1e04aa55", Modified: true}, "custodian 3f9c2a7d1e04 (modified), build BBBB"},
		{engine.Build{ID: "AAAA/BBBB", Revision: "3f9c2a7d1e04aa55"}, "custodian 3f9c2a7d1e04, build BBBB"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, engine.BuildText(tt.build))
		})
	}
}
