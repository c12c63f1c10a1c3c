package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The two trial scenarios whose run a test cannot drive in its own process
// drawn through the binary: uncertain ends a step inside its effect, busy
// steps in the background. package picture draws the others.
func TestGraphOfTheTrialScenariosAProcessEnds(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		make     func(dir string)
	}{
		{"uncertain", func(dir string) {
			r := run(t, binary, nil, "trial", "demo", "--scenario", "uncertain", "--run", dir)
			require.Equal(t, 0, r.code, r.stderr)
		}},
		{"busy", func(dir string) {
			ok(t, "trial", "setup", "busy", "--run", dir, "--hold", "1")
			// The background step ends, and has stepped the run once.
			lock := flock.New(filepath.Join(dir, ".custodian", "lock"))
			require.NoError(t, lock.Lock())
			require.NoError(t, lock.Unlock())
		}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			tc.make(dir)
			for _, f := range []struct{ format, ext string }{{"mermaid", "mmd"}, {"dot", "dot"}} {
				got := ok(t, "graph", dir, "--format", f.format)
				path := filepath.Join("..", "..", "testdata", "graph", "trial-"+tc.scenario+"."+f.ext)
				if *update {
					require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
					require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
				}
				assert.Equal(t, fileText(t, path), got, "%s differs; if the change is meant, rewrite it with -update", path)
			}
		})
	}
}

func TestGraphRefusesAnUnknownFormat(t *testing.T) {
	dir := trialRun(t, "clean")
	r := run(t, binary, nil, "graph", dir, "--format", "png")
	assert.Equal(t, 2, r.code)
	assert.Equal(t, "custodian: graph: \"png\" is not a format\ncustodian: hint: give --format mermaid or --format dot\n", r.stderr)
	before := files(t, dir)
	ok(t, "graph", dir)
	assert.Equal(t, before, files(t, dir), "graph writes nothing")
}
