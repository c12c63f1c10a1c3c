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

func TestExecutableBuildIsTheGoBuildID(t *testing.T) {
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
	got := engine.ExecutableBuild()
	assert.Equal(t, strings.TrimSpace(string(want)), got)
	assert.Equal(t, got, engine.ExecutableBuild(), "read once, the same every time")
}
