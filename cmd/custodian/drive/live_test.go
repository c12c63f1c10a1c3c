package drive

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 7, 1, 15, 0, 0, 0, time.UTC)

// viewOf applies events to a new view.
func viewOf(events ...Event) *view {
	v := &view{}
	for _, e := range events {
		v.apply(e)
	}
	return v
}

func TestLiveFrame(t *testing.T) {
	round := Event{Kind: EventRound, Round: 2, Jobs: []string{"assumptions", "claims", "notes", "reconcile"}}
	tests := []struct {
		name          string
		events        []Event
		now           time.Time
		width, height int
		want          []string
	}{
		{"before the first round", nil, t0, 80, 24, []string{
			"0 running · 0 queued · 0 finished · 0 killed",
		}},
		{"a round under way", []Event{
			round,
			{Kind: EventLaunched, Time: t0, Job: "claims", Pid: 1},
			{Kind: EventLaunched, Time: t0.Add(-65 * time.Minute), Job: "assumptions", Pid: 2},
			{Kind: EventOutput, Job: "claims", Text: "Reading the text"},
			{Kind: EventLaunchFailed, Job: "notes", Text: "no flag"},
			{Kind: EventStep, Outcome: "launch"},
		}, t0.Add(62 * time.Second), 80, 24, []string{
			"2 running · 1 queued · 0 finished · 1 killed · last step: launch",
			"  assumptions   1:06:02",
			"  claims           1:02  Reading the text",
		}},
		{"ended workers", []Event{
			round,
			{Kind: EventLaunched, Job: "claims"}, {Kind: EventEnded, Job: "claims", Outcome: "finished"},
			{Kind: EventLaunched, Job: "notes"}, {Kind: EventEnded, Job: "notes", Outcome: "timed-out"},
			{Kind: EventLaunched, Job: "reconcile"}, {Kind: EventEnded, Job: "reconcile", Outcome: "usage-limited"},
		}, t0, 80, 24, []string{
			"0 running · 2 queued · 1 finished · 1 killed",
		}},
		{"paused, with a countdown", []Event{
			round,
			{Kind: EventPaused, Until: t0.Add(2*time.Hour + 3*time.Second)},
		}, t0, 80, 24, []string{
			"0 running · 4 queued · 0 finished · 0 killed",
			"paused for a usage limit: launching again at 17:00:03, in 2:00:03",
		}},
		{"resumed", []Event{
			round, {Kind: EventPaused, Until: t0.Add(time.Hour)}, {Kind: EventResumed},
		}, t0, 80, 24, []string{
			"0 running · 4 queued · 0 finished · 0 killed",
		}},
		{"interrupted", []Event{round, {Kind: EventInterrupted}}, t0, 80, 24, []string{
			"0 running · 4 queued · 0 finished · 0 killed",
			"interrupted: ending the workers",
		}},
		{"cut to the width", []Event{
			round,
			{Kind: EventLaunched, Time: t0, Job: "claims"},
			{Kind: EventOutput, Job: "claims", Text: strings.Repeat("word ", 20)},
		}, t0, 30, 24, []string{
			"1 running · 3 queued · 0 fin…",
			"  claims      0:00  word wor…",
		}},
		{"wide characters take two cells", []Event{
			round,
			{Kind: EventLaunched, Time: t0, Job: "claims"},
			{Kind: EventOutput, Job: "claims", Text: "中文中文中文中文"},
		}, t0, 32, 24, []string{
			"1 running · 3 queued · 0 finis…",
			"  claims      0:00  中文中文中…",
		}},
		{"cut to the height", []Event{
			{Kind: EventRound, Round: 1, Jobs: []string{"a", "b", "c", "d", "e"}},
			{Kind: EventLaunched, Time: t0, Job: "a"}, {Kind: EventLaunched, Time: t0, Job: "b"},
			{Kind: EventLaunched, Time: t0, Job: "c"}, {Kind: EventLaunched, Time: t0, Job: "d"},
			{Kind: EventLaunched, Time: t0, Job: "e"},
		}, t0, 80, 5, []string{
			"5 running · 0 queued · 0 finished · 0 killed",
			"  a      0:00",
			"  b      0:00",
			"  … and 3 more running",
		}},
		{"a long name", []Event{
			{Kind: EventLaunched, Time: t0, Job: strings.Repeat("n", 30)},
		}, t0, 80, 24, []string{
			"1 running · 0 queued · 0 finished · 0 killed",
			"  " + strings.Repeat("n", 23) + "…      0:00",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := viewOf(tt.events...).frame(tt.now, tt.width, tt.height)
			assert.Equal(t, tt.want, got)
			for _, line := range got {
				assert.Less(t, cells(line), tt.width, "a line never reaches the last column: %q", line)
			}
			assert.Less(t, len(got), tt.height)
		})
	}
}

var redraw = regexp.MustCompile(`\x1b\[(\d+)A\r\x1b\[J`)

func TestLiveRedrawsInPlace(t *testing.T) {
	var b bytes.Buffer
	now := t0
	l := &Live{out: writer{w: &b}, size: func() (int, int) { return 60, 10 }, now: func() time.Time { return now }}

	l.Emit(Event{Kind: EventRound, Round: 1, Jobs: []string{"claims"}})
	l.Emit(Event{Kind: EventLaunched, Job: "claims", Attempt: 1, Pid: 7})
	l.draw()
	assert.Equal(t, "15:00:00 claims: launched, attempt 1, pid 7\n"+
		"1 running · 0 queued · 0 finished · 0 killed\n  claims      0:00\n", b.String(),
		"the events above, the frame below")

	b.Reset()
	l.draw()
	assert.Empty(t, b.String(), "an unchanged frame is not drawn again")

	b.Reset()
	now = now.Add(3 * time.Second)
	l.Emit(Event{Kind: EventOutput, Job: "claims", Text: "thinking"})
	l.draw()
	require.Equal(t, []string{"\x1b[2A\r\x1b[J", "2"}, redraw.FindStringSubmatch(b.String()))
	assert.Equal(t, "1 running · 0 queued · 0 finished · 0 killed\n  claims      0:03  thinking\n",
		redraw.ReplaceAllString(b.String(), ""), "output goes to the frame, not above it")

	b.Reset()
	l.Emit(Event{Kind: EventEnded, Job: "claims", Outcome: "finished", Status: "exit 0", Duration: 3 * time.Second})
	l.draw()
	assert.Equal(t, "\x1b[2A\r\x1b[J15:00:03 claims: finished, exit 0, after 3s\n0 running · 0 queued · 1 finished · 0 killed\n", b.String(),
		"moves up over the old frame of two lines, clears it, and draws one of one")
}

func TestLiveCloseDrawsTheLastFrame(t *testing.T) {
	var b bytes.Buffer
	l := NewLive(&b, func() (int, int) { return 0, 0 }, func() time.Time { return t0 })
	l.Emit(Event{Kind: EventStep, Outcome: "done"})
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "Close may be called again")
	assert.True(t, strings.HasSuffix(b.String(), "15:00:00 step: done\n0 running · 0 queued · 0 finished · 0 killed · last step: done\n"), b.String())
}

func TestClock(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0:00", -time.Second: "0:00", 59 * time.Second: "0:59", 61 * time.Second: "1:01",
		time.Hour: "1:00:00", 25*time.Hour + 61*time.Second: "25:01:01",
	} {
		assert.Equal(t, want, clock(d), d.String())
	}
}
