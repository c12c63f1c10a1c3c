package engine

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job's inputs are its keys, each once: sorted for its input state, and
// in the order first declared for its prompt, whether they are few or
// many.
func TestNewSpec_InputsAreEachKeptOnce(t *testing.T) {
	dir := t.TempDir()
	many := func(n int) (declared, sorted []string) {
		for i := range n {
			key := fmt.Sprintf("in/%02d.md", n-1-i)
			declared = append(declared, key)
			sorted = append([]string{key}, sorted...)
		}
		return declared, sorted
	}
	manyDeclared, manySorted := many(20)
	for _, tc := range []struct {
		name           string
		inputs         []string
		listed, sorted []string
	}{
		{"none", nil, []string{}, []string{}},
		{"few, one twice", []string{"b.md", "a.md", "b.md"}, []string{"b.md", "a.md"}, []string{"a.md", "b.md"}},
		{"few, one by its absolute path too", []string{"b.md", filepath.Join(dir, "b.md"), "a.md"},
			[]string{"b.md", "a.md"}, []string{"a.md", "b.md"}},
		{"many, each twice", append(append([]string{}, manyDeclared...), manyDeclared...), manyDeclared, manySorted},
		{"many, each once", manyDeclared, manyDeclared, manySorted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newSpec("def", dir, nil, workflow.Job{Name: "a", Prompt: "p", Output: "out/a.md", Inputs: tc.inputs})
			require.NoError(t, err)
			assert.Equal(t, tc.listed, s.listed, "in the order declared")
			assert.Equal(t, tc.sorted, s.inputs, "sorted")
		})
	}
}
