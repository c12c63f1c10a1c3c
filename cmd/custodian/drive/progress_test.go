package drive_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/cmd/custodian/drive"
	"github.com/custodian-run/custodian/workflow/engine"
)

var t0 = time.Date(2026, 7, 1, 15, 0, 0, 0, time.UTC)

// course is a drive's events, one of each kind, at times from t0.
var course = []drive.Event{
	{Kind: drive.EventRound, Time: t0, Round: 1, Jobs: []string{"assumptions", "claims"}},
	{Kind: drive.EventLaunched, Time: t0, Job: "claims", Attempt: 1, Pid: 4242},
	{Kind: drive.EventLaunchFailed, Time: t0, Job: "assumptions", Text: `launch parameter "tools" has no flag`},
	{Kind: drive.EventOutput, Time: t0.Add(time.Second), Job: "claims", Text: "Reading the text"},
	{Kind: drive.EventEnded, Time: t0.Add(90 * time.Second), Job: "claims", Outcome: "usage-limited", Status: "exit 1", Duration: 90*time.Second + 420*time.Millisecond},
	{Kind: drive.EventPaused, Time: t0.Add(90 * time.Second), Until: t0.Add(7 * time.Hour), Job: "claims", Text: "You've hit your limit · resets 10pm (UTC)"},
	{Kind: drive.EventResumed, Time: t0.Add(7 * time.Hour)},
	{Kind: drive.EventStep, Time: t0.Add(7 * time.Hour), Outcome: "blocked"},
	{Kind: drive.EventInterrupted, Time: t0.Add(7 * time.Hour)},
}

func TestPlainSink(t *testing.T) {
	var b bytes.Buffer
	sink := drive.NewPlain(&b)
	for _, e := range course {
		sink.Emit(e)
	}
	require.NoError(t, sink.Close())
	assert.Equal(t, `15:00:00 claims: launched, attempt 1, pid 4242
15:00:00 assumptions: launch failed: launch parameter "tools" has no flag
15:01:30 claims: usage-limited, exit 1, after 1m30.4s
15:01:30 paused for a usage limit until 2026-07-01 22:00:00 UTC (claims: You've hit your limit · resets 10pm (UTC))
22:00:00 resumed after the usage limit
22:00:00 step: blocked
22:00:00 interrupted: ending the workers
`, b.String(), "one line per event but output, which the evidence keeps")
}

func TestJSONLinesSink(t *testing.T) {
	var b bytes.Buffer
	sink := drive.NewJSONLines(&b)
	for _, e := range course {
		sink.Emit(e)
	}
	require.NoError(t, sink.Close())
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, len(course))
	assert.JSONEq(t, `{"event":"round","time":"2026-07-01T15:00:00Z","round":1,"jobs":["assumptions","claims"]}`, lines[0])
	assert.JSONEq(t, `{"event":"launched","time":"2026-07-01T15:00:00Z","job":"claims","attempt":1,"pid":4242}`, lines[1])
	assert.JSONEq(t, `{"event":"output","time":"2026-07-01T15:00:01Z","job":"claims","text":"Reading the text"}`, lines[3])
	assert.JSONEq(t, `{"event":"ended","time":"2026-07-01T15:01:30Z","job":"claims","outcome":"usage-limited","status":"exit 1","seconds":90.42}`, lines[4])
	assert.JSONEq(t, `{"event":"paused","time":"2026-07-01T15:01:30Z","until":"2026-07-01T22:00:00Z","job":"claims","text":"You've hit your limit · resets 10pm (UTC)"}`, lines[5])
	assert.JSONEq(t, `{"event":"resumed","time":"2026-07-01T22:00:00Z"}`, lines[6])
	assert.JSONEq(t, `{"event":"step","time":"2026-07-01T22:00:00Z","outcome":"blocked"}`, lines[7])
}

func TestSinksStampEventsWithoutATime(t *testing.T) {
	var plain, lines bytes.Buffer
	before := time.Now()
	drive.NewPlain(&plain).Emit(drive.Event{Kind: drive.EventResumed})
	drive.NewJSONLines(&lines).Emit(drive.Event{Kind: drive.EventResumed})
	var e struct{ Time time.Time }
	require.NoError(t, json.Unmarshal(lines.Bytes(), &e))
	assert.WithinDuration(t, before, e.Time, time.Minute)
	assert.Regexp(t, `^\d\d:\d\d:\d\d resumed after the usage limit\n$`, plain.String())
}

func TestSinksAreSafeForConcurrentUse(t *testing.T) {
	var b bytes.Buffer
	sink := drive.NewJSONLines(&b)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				sink.Emit(drive.Event{Kind: drive.EventOutput, Job: "claims", Text: strings.Repeat("x", 100)})
			}
		})
	}
	wg.Wait()
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		require.True(t, json.Valid([]byte(line)), "lines do not mix: %q", line)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestSinkReportsTheFirstWriteError(t *testing.T) {
	for _, sink := range []drive.Sink{drive.NewPlain(failingWriter{}), drive.NewJSONLines(failingWriter{})} {
		sink.Emit(course[0])
		sink.Emit(course[1])
		assert.ErrorIs(t, sink.Close(), os.ErrClosed)
	}
}

func TestNewSink(t *testing.T) {
	var b bytes.Buffer
	assert.IsType(t, &drive.JSONLines{}, drive.NewSink(&b, true))
	assert.IsType(t, &drive.Plain{}, drive.NewSink(&b, false))
	f, err := os.Create(filepath.Join(t.TempDir(), "progress"))
	require.NoError(t, err)
	defer f.Close()
	assert.IsType(t, &drive.Plain{}, drive.NewSink(f, false), "a file is no terminal")
}

// What a step decided is one line, alike refusals and blocks once, with a
// few of their names.
func TestEventDecidedSaysAlikeThingsOnce(t *testing.T) {
	dec := &engine.Decisions{Step: 3, Outcome: engine.KindBlocked, Accepted: []string{"join"}}
	for i := range 30 {
		name := fmt.Sprintf("audit-%02d", i)
		dec.Refused = append(dec.Refused, engine.Refusal{Job: name, Kind: engine.BlockNoOutput})
		dec.Blocks = append(dec.Blocks, engine.BlockBrief{Subject: engine.JobSubject(name), Kind: engine.BlockNoOutput})
	}
	dec.Refused = append(dec.Refused, engine.Refusal{Job: "check", Kind: engine.BlockRefused})
	dec.Spared = []string{"lint"}
	dec.HandedOut = []string{"lint"}
	dec.Effects = []engine.EffectRun{{Name: "publish", Status: "completed"}}
	assert.Equal(t, "step 3 decided: accepted 1; refused 30 (no-output): audit-00, audit-01, audit-02 and 27 more; "+
		"refused 1 (validator-refused): check; not charged 1 (no worker attempted them): lint; handed out 1: lint; "+
		"effect publish completed; blocked 30 (no-output): audit-00, audit-01, audit-02 and 27 more",
		drive.Event{Kind: drive.EventDecided, Decided: dec}.String())
}

// A step's hand-outs are in the line of what it decided; only those taken
// over from before the drive get a line of their own.
func TestPlainSinkNamesHandoutsOnce(t *testing.T) {
	var b strings.Builder
	p := drive.NewPlain(&b)
	t0 := time.Date(2026, 7, 1, 15, 0, 0, 0, time.UTC)
	p.Emit(drive.Event{Kind: drive.EventRound, Time: t0, Round: 0, Jobs: []string{"claims"}})
	p.Emit(drive.Event{Kind: drive.EventRound, Time: t0, Round: 2, Jobs: []string{"reconcile"}})
	require.NoError(t, p.Close())
	assert.Equal(t, "15:00:00 taking over 1 job handed out before this drive: claims\n", b.String())
}

func TestFlowLineSaysWhatIsInFlight(t *testing.T) {
	e := drive.Event{Kind: drive.EventFlow, Flow: &drive.Flow{Running: []string{"a", "b"}, Queued: 1, Judged: 3}}
	assert.Equal(t, "flow: 2 running, 1 ready to launch, 3 judged", e.String())
	data, err := json.Marshal(drive.Event{Kind: drive.EventFlow, Time: time.Date(2026, 7, 1, 15, 0, 0, 0, time.UTC), Flow: e.Flow})
	require.NoError(t, err)
	assert.JSONEq(t, `{"event":"flow","time":"2026-07-01T15:00:00Z","flow":{"running":["a","b"],"queued":1,"judged":3}}`, string(data))
}
