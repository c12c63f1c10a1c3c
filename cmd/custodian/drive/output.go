package drive

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Tail is the end of one of a worker's output streams: what is kept of it.
type Tail struct {
	Data  []byte // the last bytes written, at most Options.Keep of them
	Total int64  // how many bytes were written in all
}

// Cut says whether the beginning of the stream was dropped: the end of a
// worker's output says how it ended, and is what is kept.
func (t Tail) Cut() bool { return t.Total > int64(len(t.Data)) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max   int
	buf   []byte
	total int64
}

func (b *tailBuffer) write(p []byte) {
	b.total += int64(len(p))
	b.buf = append(b.buf, p...)
	// Dropping the head at every write would copy the buffer every time.
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
}

func (b *tailBuffer) tail() Tail {
	data := b.buf[max(0, len(b.buf)-b.max):]
	return Tail{Data: slices.Clone(data), Total: b.total}
}

// maxLine bounds the line a worker's output is read in. A longer line (a
// tool's whole result, say) is skipped: nothing drive reads is that long.
const maxLine = 1 << 20

// lineSplitter cuts a stream into lines.
type lineSplitter struct {
	partial  []byte
	skipping bool // the line under way is longer than maxLine
}

func (s *lineSplitter) feed(p []byte, line func([]byte)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.add(p)
			return
		}
		s.add(p[:i])
		s.flush(line)
		p = p[i+1:]
	}
}

func (s *lineSplitter) add(p []byte) {
	if s.skipping {
		return
	}
	s.partial = append(s.partial, p...)
	if len(s.partial) > maxLine {
		s.partial, s.skipping = s.partial[:0], true
	}
}

// flush ends the line under way: at a newline, or at the end of the stream.
func (s *lineSplitter) flush(line func([]byte)) {
	if !s.skipping && len(s.partial) > 0 {
		line(s.partial)
	}
	s.partial, s.skipping = s.partial[:0], false
}

// transcript is what a worker's output has said so far. claude's
// stream-json events and codex's --json events have types of their own, so
// one transcript reads either CLI's, and those of an exec worker that wraps
// one.
type transcript struct {
	session string // claude's session_id, codex's thread_id
	message string // claude's result, codex's last agent message
	limit   limitSignals
}

// event holds the fields drive reads of claude's and codex's events.
type event struct {
	Type      string          `json:"type"`
	SessionID string          `json:"session_id"`       // claude: on every event
	ThreadID  string          `json:"thread_id"`        // codex: thread.started
	Message   json.RawMessage `json:"message"`          // claude assistant: the message; codex error: its text
	Error     json.RawMessage `json:"error"`            // claude assistant: a word; codex turn.failed: {"message"}
	IsError   bool            `json:"is_error"`         // claude result
	APIStatus int             `json:"api_error_status"` // claude result
	Result    string          `json:"result"`           // claude result
	Item      struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Message string `json:"message"`
		Command string `json:"command"`
	} `json:"item"` // codex item.*
	RateLimit struct {
		Status   string  `json:"status"`
		ResetsAt float64 `json:"resetsAt"` // epoch seconds
	} `json:"rate_limit_info"` // claude rate_limit_event
}

// line reads one line of output and returns it as one readable line for a
// progress view, or "" when it has nothing to show.
func (t *transcript) line(b []byte) string {
	b = bytes.TrimRight(b, "\r")
	ev, ok := decodeEvent(b)
	if !ok {
		t.limit.plain(string(b))
		return oneLine(string(b))
	}
	if t.session == "" {
		t.session = cmp.Or(ev.SessionID, ev.ThreadID)
	}
	switch ev.Type {
	case "assistant":
		texts, tools := assistantContent(ev.Message)
		text := strings.Join(texts, " ")
		if jsonString(ev.Error) == "rate_limit" {
			t.limit.claudeText(text)
		}
		if text == "" && len(tools) > 0 {
			return "tool " + strings.Join(tools, ", ")
		}
		return oneLine(text)
	case "result":
		t.message = ev.Result
		if ev.IsError && ev.APIStatus == 429 {
			t.limit.claudeText(ev.Result)
		}
		return oneLine(ev.Result)
	case "rate_limit_event":
		if ev.RateLimit.Status == "rejected" {
			t.limit.rejected(ev.RateLimit.ResetsAt)
			return "usage limit reached"
		}
	case "item.started", "item.updated", "item.completed":
		if ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
			t.message = ev.Item.Text
		}
		if ev.Item.Command != "" {
			return oneLine("$ " + ev.Item.Command)
		}
		return oneLine(ev.Item.Text + ev.Item.Message)
	case "error":
		text := jsonString(ev.Message)
		t.limit.codexText(text)
		return oneLine(text)
	case "turn.failed":
		var failure struct{ Message string }
		_ = json.Unmarshal(ev.Error, &failure)
		t.limit.codexText(failure.Message)
		return oneLine(failure.Message)
	}
	return ""
}

// decodeEvent reads a line as an event of either CLI: a JSON object with a
// type. A field of another shape than drive expects is left out, not a
// reason to read the line as text.
func decodeEvent(b []byte) (event, bool) {
	var ev event
	if len(b) == 0 || b[0] != '{' {
		return ev, false
	}
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(b, &ev); err != nil && !errors.As(err, &typeErr) {
		return ev, false
	}
	return ev, ev.Type != ""
}

// assistantContent returns the texts and the tool names of a claude
// assistant message.
func assistantContent(raw json.RawMessage) (texts, tools []string) {
	var m struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
			Name string `json:"name"`
		} `json:"content"`
	}
	_ = json.Unmarshal(raw, &m)
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			texts = append(texts, c.Text)
		case "tool_use":
			tools = append(tools, c.Name)
		}
	}
	return texts, tools
}

// jsonString returns raw's text when it is a JSON string, and "" otherwise.
func jsonString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

var escapeSequence = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]`)

// oneLine makes text safe to show on one line of a terminal: escape
// sequences go, every run of white space or control characters becomes one
// space. A worker's colours or cursor moves would otherwise wreck a view
// that is redrawn in place.
func oneLine(text string) string {
	text = escapeSequence.ReplaceAllString(text, "")
	text = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, text)
	return strings.Join(strings.Fields(text), " ")
}
