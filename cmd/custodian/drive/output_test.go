package drive

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTranscriptOfRecordedOutput reads output that the real CLIs printed
// against a mock API server.
func TestTranscriptOfRecordedOutput(t *testing.T) {
	tests := []struct {
		file    string
		session string
		message string
		shown   []string
	}{
		{"testdata/claude-ok.jsonl", "865ae84b-5b61-4b61-bd18-be1050b239d5", "Hello from mock",
			[]string{"Hello from mock", "Hello from mock"}},
		{"testdata/codex-ok.jsonl", "01a22dff-77ad-75d0-9e50-892140c03e12", "hi there",
			[]string{"Model metadata for `gpt-5.2-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.", "hi there"}},
		{"testdata/claude-usage-limit.jsonl", "0bc24129-ae64-475f-8510-04eb2a212154", "You've hit your session limit · resets 10pm (UTC)",
			[]string{"usage limit reached", "You've hit your session limit · resets 10pm (UTC)", "You've hit your session limit · resets 10pm (UTC)"}},
		{"testdata/codex-usage-limit.jsonl", "01a22dff-4b63-7db0-9fbe-7d15771f29cc", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(tt.file)
			require.NoError(t, err)
			var tr transcript
			var shown []string
			for _, line := range bytes.Split(data, []byte("\n")) {
				if text := tr.line(line); text != "" {
					shown = append(shown, text)
				}
			}
			assert.Equal(t, tt.session, tr.session)
			assert.Equal(t, tt.message, tr.message)
			if tt.shown != nil {
				assert.Equal(t, tt.shown, shown)
			}
		})
	}
}

func TestTranscriptLines(t *testing.T) {
	tests := []struct {
		line  string
		shown string
	}{
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash"},{"type":"tool_use","name":"Read"}]}}`, "tool Bash, Read"},
		{`{"type":"assistant","message":{"content":[{"type":"text","text":"first\n\nsecond"}]}}`, "first second"},
		{`{"type":"user","message":{"content":[{"type":"tool_result","content":"x"}]}}`, ""},
		{`{"type":"system","subtype":"init","session_id":"s"}`, ""},
		{`{"type":"item.started","item":{"type":"command_execution","command":"bash -lc ls"}}`, "$ bash -lc ls"},
		{`{"type":"item.completed","item":{"type":"reasoning","text":"**Thinking**"}}`, "**Thinking**"},
		{`{"type":"turn.completed","usage":{}}`, ""},
		{`{"type":"error","message":"Reconnecting... 1/5"}`, "Reconnecting... 1/5"},
		{`{"type":"result","result":{"not":"a string"},"session_id":"s"}`, ""},
		{`{"no type":true}`, `{"no type":true}`},
		{`{broken`, `{broken`},
		{"plain text\r", "plain text"},
		{"\x1b[31mred\x1b[0m and\ttabs\x07", "red and tabs"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			var tr transcript
			assert.Equal(t, tt.shown, tr.line([]byte(tt.line)))
		})
	}
}

func TestTailBuffer(t *testing.T) {
	b := tailBuffer{max: 10}
	for i := range 100 {
		b.write([]byte{byte('a' + i%26)})
	}
	tail := b.tail()
	assert.Equal(t, "mnopqrstuv", string(tail.Data))
	assert.Equal(t, int64(100), tail.Total)
	assert.True(t, tail.Cut())
	assert.LessOrEqual(t, len(b.buf), 20, "the buffer stays bounded")

	b = tailBuffer{max: 10}
	b.write([]byte(strings.Repeat("x", 25) + "end"))
	assert.Equal(t, strings.Repeat("x", 7)+"end", string(b.tail().Data))

	b = tailBuffer{max: 10}
	b.write([]byte("short"))
	assert.Equal(t, Tail{Data: []byte("short"), Total: 5}, b.tail())
	assert.False(t, b.tail().Cut())
}

func TestLineSplitter(t *testing.T) {
	var s lineSplitter
	var lines []string
	take := func(b []byte) { lines = append(lines, string(b)) }
	s.feed([]byte("one\ntw"), take)
	s.feed([]byte("o\n\nthree"), take)
	s.feed([]byte(strings.Repeat("y", maxLine+1)), take)
	s.feed([]byte("yy\nfour\nfive"), take)
	s.flush(take)
	assert.Equal(t, []string{"one", "two", "four", "five"}, lines, "empty lines and a line longer than maxLine are left out")
}
