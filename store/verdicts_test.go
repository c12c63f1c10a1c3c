package store_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerdictsRoundTrip(t *testing.T) {
	r := newRun(t)
	locked(t, r)
	sumA, sumB := sha("a"), sha("b")
	v := r.Verdicts("build-1")
	assert.False(t, v.Accepted("summary", sumA), "an empty cache holds no verdict")
	v.Accept("summary", sumA)
	v.Accept("review", sumB)
	require.NoError(t, v.Save())

	tests := []struct {
		name       string
		code, job  string
		sum        string
		wantAccept bool
	}{
		{"the same code, job and bytes", "build-1", "summary", sumA, true},
		{"other bytes", "build-1", "summary", sumB, false},
		{"another job", "build-1", "other", sumA, false},
		{"another code", "build-2", "summary", sumA, false},
		{"no code remembers nothing", "", "summary", sumA, false},
		{"a code that cannot be a header field", "build 1", "summary", sumA, false},
		{"no bytes", "build-1", "summary", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantAccept, r.Verdicts(tt.code).Accepted(tt.job, tt.sum))
			// A step's, read on another goroutine, holds the same.
			assert.Equal(t, tt.wantAccept, r.StepVerdicts(tt.code).Accepted(tt.job, tt.sum))
		})
	}
}

func TestVerdictsSaveOnlyWhatIsNew(t *testing.T) {
	r := newRun(t)
	locked(t, r)
	path := filepath.Join(r.Dir, ".custodian", "verdicts")
	v := r.Verdicts("build-1")
	require.NoError(t, v.Save())
	assert.NoFileExists(t, path, "nothing learned, nothing written")

	v.Accept("summary", sha("a"))
	require.NoError(t, v.Save())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "custodian verdicts 1 "+r.Record.ID+" build-1\n"+sha("a")+" summary\n", string(data))

	// The same verdict again changes nothing; a later one replaces it.
	v = r.Verdicts("build-1")
	v.Accept("summary", sha("a"))
	require.NoError(t, os.Remove(path))
	require.NoError(t, v.Save())
	assert.NoFileExists(t, path)
	v.Accept("summary", sha("b"))
	require.NoError(t, v.Save())
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(data), "\n"))
	assert.True(t, r.Verdicts("build-1").Accepted("summary", sha("b")))
	assert.False(t, r.Verdicts("build-1").Accepted("summary", sha("a")), "one verdict a job: its last")
}

func TestVerdictsOfAnotherCodeAreNotWritten(t *testing.T) {
	r := newRun(t)
	locked(t, r)
	v := r.Verdicts("")
	v.Accept("summary", sha("a"))
	require.NoError(t, v.Save())
	assert.NoFileExists(t, filepath.Join(r.Dir, ".custodian", "verdicts"))
}
