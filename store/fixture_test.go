package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAFixtureLeavesOutWhatOnlyALiveRunUses(t *testing.T) {
	tests := []struct {
		rel  string
		left bool
	}{
		{".custodian/lock", true},
		{".custodian/hashes", true},
		{".custodian/round.json", true},
		{".custodian/jobs/a/launch-1", true},
		{".custodian/jobs/a/launch-1/stdout.log", true},
		{".custodian/.state.json.tmp-abc123", true},
		{".custodian/state.json", false},
		{".custodian/run.json", false},
		{".custodian/history/1.jsonl", false},
		{".custodian/jobs/a/prompt-1.md", false},
		{".custodian/jobs/a/kept/1-a.md", false},
		{"launch-1", false},
		{"hashes", false},
		{"notes/.draft.tmp-1", false},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			assert.Equal(t, tt.left, notInFixture(tt.rel))
		})
	}
}
