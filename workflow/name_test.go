package workflow_test

import (
	"strings"
	"testing"

	"github.com/custodian-run/custodian/internal/names"
	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
)

func TestJobName(t *testing.T) {
	cases := []struct {
		prefix, key string
		want        string // "" to check only that the name is valid
	}{
		{"review", "intro", "review-intro"},
		{"review", "chapter-2", "review-chapter-2"},
		{"review", "Intro.md", "review-intro-md-"},
		{"review", "a b", "review-a-b-"},
		{"review", "", "review-"},
		{"Review", "x", "review-x"},
		{"", "x", "job-x-"},
		{"review", strings.Repeat("long ", 40), "review-long-long-"},
		{"review", "Ünïcödé / ∑", "review-n-c-d-"},
	}
	for _, tc := range cases {
		got := workflow.JobName(tc.prefix, tc.key)
		assert.True(t, names.Valid(got), "JobName(%q, %q) = %q is not a valid name", tc.prefix, tc.key, got)
		assert.True(t, strings.HasPrefix(got, tc.want), "JobName(%q, %q) = %q", tc.prefix, tc.key, got)
		assert.Equal(t, got, workflow.JobName(tc.prefix, tc.key), "the same data gives the same name")
	}
	// Keys that slug the same get names of their own.
	seen := map[string]string{}
	for _, key := range []string{"a b", "a-b", "A B", "a_b", "a--b", "a.b"} {
		name := workflow.JobName("review", key)
		if other, ok := seen[name]; ok {
			t.Errorf("keys %q and %q both give %q", other, key, name)
		}
		seen[name] = key
	}
}
