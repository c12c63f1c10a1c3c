package drive

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// UsageLimit is a usage limit that a worker's output reports: the account
// is out of usage, which is no fault of the job. The loop stops launching,
// waits, and launches the job again with the same prompt file.
type UsageLimit struct {
	Known   bool      `json:"known"`             // whether the output says when the limit lifts
	Resets  time.Time `json:"resets,omitzero"`   // when it lifts, when Known
	Message string    `json:"message,omitempty"` // the worker's words about it, when it gave any
}

// UnknownResetWait is how long to wait out a usage limit whose output does
// not say when it lifts.
const UnknownResetWait = 15 * time.Minute

// Until returns when the job can be launched again: when the limit lifts,
// or UnknownResetWait after now when the output did not say.
func (u UsageLimit) Until(now time.Time) time.Time {
	if !u.Known {
		return now.Add(UnknownResetWait)
	}
	return u.Resets
}

// limitSignals gathers what a worker's output says about a usage limit,
// line by line; limit decides at the end.
type limitSignals struct {
	hit      bool
	resetsAt time.Time // claude's rate_limit_event, the last one rejected
	legacy   time.Time // "Claude AI usage limit reached|<epoch>"
	claude   string    // the last claude text about the limit
	codex    string    // the last codex text about it
	message  string
}

var (
	// claude 2.1: "You've hit your session limit · resets 3:30pm (Europe/Berlin)",
	// "... · resets Jul 3, 3pm (UTC)", with the year when it is not this one.
	claudeResets = regexp.MustCompile(`(?i)·\s*resets\s+(?:([a-z]{3}) (\d{1,2}),(?: (\d{4}),)? )?(\d{1,2})(?::(\d{2}))?[\s\x{202f}]*([ap]m)\s*\(([^()]+)\)`)
	// claude as text (an exec worker that runs claude -p without
	// stream-json): the message is the whole line.
	claudePlain = regexp.MustCompile(`^(?:Error: )?You(?:'|’)(?:ve hit your|re out of) [^·]*·`)
	// claude 1.0: the reset time in epoch seconds.
	claudeLegacy = regexp.MustCompile(`Claude AI usage limit reached\|(\d+)`)
	// codex 0.171: "You’ve hit your usage limit. ... try again at Dec 1st,
	// 2026 12:47 AM." or "... at 9:51 AM." on the same day, in the local
	// time of codex (UTC, which the codex profile sets), or "Try again later."
	codexHit   = regexp.MustCompile(`(?i)you(?:'|’)ve hit your usage limit`)
	codexPlain = regexp.MustCompile(`(?i)^(?:ERROR: )?you(?:'|’)ve hit your usage limit`)
	codexRetry = regexp.MustCompile(`(?i)try again at (?:([a-z]{3}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) )?(\d{1,2}):(\d{2})[\s\x{202f}]*([ap]m)`)
)

// rejected notes a claude rate_limit_event whose status is rejected: its
// resetsAt, in epoch seconds, is the one exact reset time claude gives.
func (s *limitSignals) rejected(resetsAt float64) {
	s.hit = true
	if resetsAt > 0 {
		s.resetsAt = time.Unix(int64(resetsAt), 0)
	}
}

// claudeText notes the text of a claude event that says a limit was hit.
func (s *limitSignals) claudeText(text string) {
	s.hit, s.message = true, text
	if m := claudeLegacy.FindStringSubmatch(text); m != nil {
		if sec, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			s.legacy = time.Unix(sec, 0)
		}
		return
	}
	s.claude = text
}

// codexText notes the text of a codex error, if it is about a usage limit:
// codex reports retries and warnings as errors too.
func (s *limitSignals) codexText(text string) {
	if codexHit.MatchString(text) {
		s.hit, s.message, s.codex = true, text, text
	}
}

// plain reads a line that is not an event, as a wrapper script around
// either CLI might print it. Only a line that begins with the message
// counts, so that a worker quoting one in passing is not taken for it.
func (s *limitSignals) plain(line string) {
	line = strings.TrimSpace(line)
	switch {
	case claudePlain.MatchString(line), strings.HasPrefix(line, "Claude AI usage limit reached|"):
		s.claudeText(line)
	case codexPlain.MatchString(line):
		s.codexText(line)
	}
}

// limit returns the usage limit the output reported, or nil. now is when
// the worker ended: the texts name a time of day without a date, which is
// the next such time.
func (s *limitSignals) limit(now time.Time) *UsageLimit {
	if !s.hit {
		return nil
	}
	u := &UsageLimit{Message: s.message}
	switch {
	case !s.resetsAt.IsZero():
		u.Resets = s.resetsAt
	case !s.legacy.IsZero():
		u.Resets = s.legacy
	default:
		if c, ok := claudeClock(s.claude); ok {
			u.Resets = c.next(now)
		} else if c, ok := codexClock(s.codex); ok {
			u.Resets = c.next(now)
		}
	}
	u.Known = !u.Resets.IsZero()
	return u
}

// wallClock is a reset time as a text gives it: a time of day, perhaps a
// date, perhaps a year, in a zone.
type wallClock struct {
	year         int        // 0 when not given
	month        time.Month // 0 when not given
	day          int
	hour, minute int
	loc          *time.Location
}

// textSlack is how far in the past a time of day may lie and still be
// taken for today's rather than tomorrow's: a text drops the seconds, and
// the worker took a moment to end after writing it.
const textSlack = 2 * time.Minute

// next returns the end of the minute the clock names, on the first day (or
// in the first year) on which that minute is not more than textSlack
// before now. The end, because the limit lifts at some point within the
// minute the text names, and a worker launched before it would hit it again.
func (c wallClock) next(now time.Time) time.Time {
	at := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, c.hour, c.minute, 0, 0, c.loc) }
	local := now.In(c.loc)
	var t time.Time
	switch {
	case c.year != 0:
		t = at(c.year, c.month, c.day)
	case c.month != 0:
		if t = at(local.Year(), c.month, c.day); t.Before(now.Add(-textSlack)) {
			t = at(local.Year()+1, c.month, c.day)
		}
	default:
		if t = at(local.Year(), local.Month(), local.Day()); t.Before(now.Add(-textSlack)) {
			t = at(local.Year(), local.Month(), local.Day()+1)
		}
	}
	return t.Add(time.Minute)
}

// claudeClock reads the reset time of a claude text, in the IANA zone it
// names.
func claudeClock(text string) (wallClock, bool) {
	m := claudeResets.FindStringSubmatch(text)
	if m == nil {
		return wallClock{}, false
	}
	loc, err := time.LoadLocation(m[7])
	if err != nil {
		return wallClock{}, false
	}
	return readClock(m[1], m[2], m[3], m[4], m[5], m[6], loc)
}

// codexClock reads the reset time of a codex text, in UTC.
func codexClock(text string) (wallClock, bool) {
	m := codexRetry.FindStringSubmatch(text)
	if m == nil {
		return wallClock{}, false
	}
	return readClock(m[1], m[2], m[3], m[4], m[5], m[6], time.UTC)
}

// readClock reads the parts of a reset time; month, day, year and minute
// may be empty.
func readClock(month, day, year, hour, minute, ampm string, loc *time.Location) (wallClock, bool) {
	c := wallClock{loc: loc}
	c.hour, _ = strconv.Atoi(hour)
	c.minute, _ = strconv.Atoi(minute)
	if c.hour < 1 || c.hour > 12 || c.minute > 59 {
		return wallClock{}, false
	}
	c.hour %= 12
	if strings.EqualFold(ampm, "pm") {
		c.hour += 12
	}
	if month == "" {
		return c, true
	}
	for m := time.January; m <= time.December; m++ {
		if strings.EqualFold(month, m.String()[:3]) {
			c.month = m
		}
	}
	c.day, _ = strconv.Atoi(day)
	c.year, _ = strconv.Atoi(year)
	return c, c.month != 0 && c.day >= 1 && c.day <= 31
}
