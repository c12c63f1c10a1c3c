package drive

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// read feeds lines to a transcript, as a worker's streams would.
func read(lines ...string) *transcript {
	var t transcript
	for _, line := range lines {
		t.line([]byte(line))
	}
	return &t
}

func utc(s string) time.Time {
	t, err := time.Parse(time.DateTime, s)
	if err != nil {
		panic(err)
	}
	return t
}

func berlin(s string) time.Time {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	t, err := time.ParseInLocation(time.DateTime, s, loc)
	if err != nil {
		panic(err)
	}
	return t
}

// Events as claude 2.1.197 and codex 0.171.0 print them, around a text.
func claudeAssistant(text string) string {
	return `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"` + text + `"}]},"session_id":"s1","error":"rate_limit"}`
}

func claudeResult(text string) string {
	return `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"` + text + `","session_id":"s1"}`
}

func codexError(text string) string { return `{"type":"error","message":"` + text + `"}` }

func codexFailed(text string) string {
	return `{"type":"turn.failed","error":{"message":"` + text + `"}}`
}

const codexUpgrade = "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at "

func TestUsageLimit(t *testing.T) {
	now := utc("2026-07-01 15:00:00")
	tests := []struct {
		name   string
		now    time.Time // now when zero
		lines  []string
		resets time.Time // zero: a limit whose reset time is not known
	}{
		{"claude rate_limit_event wins over the text", now, []string{
			`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796076000,"rateLimitType":"five_hour"},"session_id":"s1"}`,
			claudeAssistant("You've hit your session limit · resets 10pm (UTC)"),
			claudeResult("You've hit your session limit · resets 10pm (UTC)"),
		}, time.Unix(1796076000, 0)},
		{"claude rate_limit_event alone", now, []string{
			`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796076000}}`,
		}, time.Unix(1796076000, 0)},
		{"claude rate_limit_event without resetsAt, then the text", now, []string{
			`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected"}}`,
			claudeAssistant("You've hit your session limit · resets 10pm (UTC)"),
		}, utc("2026-07-01 22:01:00")},
		{"claude hour later today", now, []string{claudeAssistant("You've hit your session limit · resets 10pm (UTC)")}, utc("2026-07-01 22:01:00")},
		{"claude hour passed today is tomorrow's", utc("2026-07-01 23:00:00"), []string{claudeAssistant("You've hit your limit · resets 10pm (UTC)")}, utc("2026-07-02 22:01:00")},
		{"claude hour just passed is today's", utc("2026-07-01 22:01:30"), []string{claudeAssistant("You've hit your limit · resets 10pm (UTC)")}, utc("2026-07-01 22:01:00")},
		{"claude minutes in another zone", now, []string{claudeAssistant("You've hit your weekly limit · resets 3:30pm (Europe/Berlin)")}, berlin("2026-07-02 15:31:00")},
		{"claude morning", now, []string{claudeAssistant("You've hit your Opus limit · resets 9am (UTC)")}, utc("2026-07-02 09:01:00")},
		{"claude noon and midnight", now, []string{claudeAssistant("You've hit your limit · resets 12am (UTC)")}, utc("2026-07-02 00:01:00")},
		{"claude upper case, a space, a narrow space", now, []string{claudeAssistant("You've hit your limit · resets 4:05\u202fPM (UTC)")}, utc("2026-07-01 16:06:00")},
		{"claude date", now, []string{claudeAssistant("You've hit your weekly limit · resets Jul 3, 3pm (UTC)")}, utc("2026-07-03 15:01:00")},
		{"claude date passed is next year's", now, []string{claudeAssistant("You've hit your weekly limit · resets Jun 3, 3pm (UTC)")}, utc("2027-06-03 15:01:00")},
		{"claude date with a year", now, []string{claudeAssistant("You've hit your weekly limit · resets Jan 3, 2027, 3:15pm (UTC)")}, utc("2027-01-03 15:16:00")},
		{"claude result alone", now, []string{claudeResult("You've hit your session limit · resets 10pm (UTC)")}, utc("2026-07-01 22:01:00")},
		{"claude out of credits", now, []string{claudeResult("You're out of usage credits · resets 10pm (UTC)")}, utc("2026-07-01 22:01:00")},
		{"claude unknown zone", now, []string{claudeAssistant("You've hit your limit · resets 10pm (Mars/Olympus)")}, time.Time{}},
		{"claude without a time", now, []string{claudeAssistant("Your org is out of usage · add funds to continue")}, time.Time{}},
		{"claude legacy", now, []string{claudeResult("Claude AI usage limit reached|1796076000")}, time.Unix(1796076000, 0)},
		{"claude legacy as text", now, []string{"Claude AI usage limit reached|1796076000"}, time.Unix(1796076000, 0)},
		{"claude as text", now, []string{"You've hit your limit · resets 2pm (Asia/Shanghai)"}, utc("2026-07-02 06:01:00")},
		{"codex date", now, []string{codexError(codexUpgrade + "Dec 1st, 2026 12:47 AM."), codexFailed(codexUpgrade + "Dec 1st, 2026 12:47 AM.")}, utc("2026-12-01 00:48:00")},
		{"codex ordinals", now, []string{codexFailed("You’ve hit your usage limit. Try again at Jul 22nd, 2026 1:05 PM.")}, utc("2026-07-22 13:06:00")},
		{"codex ASCII apostrophe", now, []string{codexFailed("You've hit your usage limit. Try again at Jul 3rd, 2026 11:00 PM.")}, utc("2026-07-03 23:01:00")},
		{"codex same day", now, []string{codexFailed(codexUpgrade + "9:51 PM.")}, utc("2026-07-01 21:52:00")},
		{"codex same day passed is tomorrow's", now, []string{codexFailed(codexUpgrade + "9:51 AM.")}, utc("2026-07-02 09:52:00")},
		{"codex later", now, []string{codexError("You’ve hit your usage limit. Try again later."), codexFailed("You’ve hit your usage limit. Try again later.")}, time.Time{}},
		{"codex for a model", now, []string{codexFailed("You’ve hit your usage limit for gpt-5-codex. Switch to another model now, or try again at 4:00 PM.")}, utc("2026-07-01 16:01:00")},
		{"codex as text on stderr", now, []string{"ERROR: " + codexUpgrade + "4:00 PM."}, utc("2026-07-01 16:01:00")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := read(tt.lines...).limit.limit(tt.now)
			require.NotNil(t, u)
			assert.Equal(t, !tt.resets.IsZero(), u.Known)
			assert.True(t, tt.resets.Equal(u.Resets), "resets %s, want %s", u.Resets, tt.resets)
			assert.NotEmpty(t, u.Message+strings.Join(tt.lines, ""))
		})
	}
}

func TestNoUsageLimit(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
	}{
		{"claude allowed", []string{`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1796076000}}`}},
		{"claude warning", []string{`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1796076000}}`}},
		{"claude quoting the message in its work", []string{
			`{"type":"assistant","message":{"content":[{"type":"text","text":"You've hit your session limit · resets 10pm (UTC)"}]}}`,
			`{"type":"result","is_error":false,"result":"You've hit your session limit · resets 10pm (UTC)"}`,
		}},
		{"claude another error", []string{
			`{"type":"assistant","message":{"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed"}`,
			`{"type":"result","is_error":true,"api_error_status":null,"result":"Not logged in · Please run /login"}`,
		}},
		{"codex retrying", []string{codexError("Reconnecting... 2/5 (stream disconnected before completion)")}},
		{"codex plain 429", []string{codexFailed("exceeded retry limit, last status: 429 Too Many Requests")}},
		{"codex agent message quoting it", []string{`{"type":"item.completed","item":{"type":"agent_message","text":"You’ve hit your usage limit. Try again later."}}`}},
		{"text quoting a message in passing", []string{"The log said: You've hit your limit · resets 2pm (UTC)", "we saw ERROR: You’ve hit your usage limit."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Nil(t, read(tt.lines...).limit.limit(time.Now()))
		})
	}
}

// TestUsageLimitOfRecordedOutput reads output that the real CLIs printed
// when a mock API server answered them with a usage limit.
func TestUsageLimitOfRecordedOutput(t *testing.T) {
	now := utc("2026-11-30 19:50:00")
	tests := []struct {
		file   string
		resets time.Time
	}{
		{"testdata/claude-usage-limit.jsonl", time.Unix(1796076000, 0)},
		{"testdata/codex-usage-limit.jsonl", utc("2026-12-01 00:48:00")},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(tt.file)
			require.NoError(t, err)
			u := read(strings.Split(string(data), "\n")...).limit.limit(now)
			require.NotNil(t, u)
			assert.True(t, u.Known)
			assert.True(t, tt.resets.Equal(u.Resets), "resets %s, want %s", u.Resets, tt.resets)
		})
	}
}

func TestUsageLimitUntil(t *testing.T) {
	now := utc("2026-07-01 15:00:00")
	at := utc("2026-07-01 22:01:00")
	assert.Equal(t, at, UsageLimit{Known: true, Resets: at}.Until(now))
	assert.Equal(t, now.Add(15*time.Minute), UsageLimit{}.Until(now))
}
