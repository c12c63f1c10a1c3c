package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow/engine"
)

// contention is how long TestOneWriterWhateverHappensToTheLockFile contends
// for its run: 5 s in the suite, and 60 s in .ci/run's separate soak.
var contention = flag.Duration("contention", 5*time.Second, "how long the lock contention test runs")

// The trial's clean scenario: each job's output, for the steppers that act
// as its workers.
var trialOutputs = map[string]string{"claims": "claims.md", "assumptions": "assumptions.md", "reconcile": "reconciled.md"}

// done is one command the contenders ran, and what came of it.
type done struct {
	args []string
	result
	err error // the process could not be run at all
}

// contenders drives one run from many processes at once.
type contenders struct {
	dir string
	// mu makes the steppers' worker and operator parts one at a time: two
	// workers never write the same output at once, and the source is
	// revised by one at a time. The commands themselves run unguarded.
	mu        sync.Mutex
	revisions int

	logMu sync.Mutex
	ran   []done
}

// exec runs the binary with args, records what came of it and returns it.
// It runs on goroutines of its own, so it reports failure as a value, never
// through t.
func (c *contenders) exec(args ...string) done {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = nil
	}
	d := done{args: args, result: result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}, err: err}
	c.logMu.Lock()
	c.ran = append(c.ran, d)
	c.logMu.Unlock()
	return d
}

// stepper steps the run until the deadline and does what each outcome
// asks: on launch it is every job's worker, writing a valid output; on a
// block that permits a repair it writes the blocked job's output (a repair
// the trial allows only in this test's name); on a stop it is the operator,
// releasing the job; on done it is the operator revising the source, so
// that the run goes round again and acceptances keep happening.
func (c *contenders) stepper(deadline time.Time) {
	for time.Now().Before(deadline) {
		d := c.exec("step", c.dir, "--json")
		if d.err != nil || d.code != 0 {
			continue
		}
		out, err := trial.DecodeOutcome([]byte(d.stdout))
		if err != nil {
			continue // the assertions find the step's output in c.ran
		}
		switch out.Kind {
		case engine.KindLaunch:
			for _, h := range out.Jobs {
				c.work(h.Output)
			}
		case engine.KindBlocked:
			for _, b := range out.Blocks {
				job, ok := b.Subject.Job()
				if !ok {
					continue
				}
				if b.Permitted == engine.PermitStop {
					c.exec("release", c.dir, job)
				} else if rel := trialOutputs[job]; rel != "" {
					c.work(filepath.Join(c.dir, rel))
				}
			}
		case engine.KindDone:
			c.mu.Lock()
			c.revisions++
			f, err := os.OpenFile(filepath.Join(c.dir, "source.md"), os.O_APPEND|os.O_WRONLY, 0)
			if err == nil {
				fmt.Fprintf(f, "Revision %d of the source.\n", c.revisions)
				f.Close()
			}
			c.mu.Unlock()
		}
	}
}

// work writes a valid output at path, as a careful worker does: whole, by
// renaming a written file over it, and not again when it is there already.
func (c *contenders) work(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if data, err := os.ReadFile(path); err == nil && string(data) == validOutput {
		return
	}
	tmp := path + ".writing"
	if os.WriteFile(tmp, []byte(validOutput), 0o644) == nil {
		_ = os.Rename(tmp, path)
	}
}

// reporter reports repairs until the deadline, each with a text of its own.
func (c *contenders) reporter(id int, deadline time.Time) {
	for n := 0; time.Now().Before(deadline); n++ {
		c.exec("report", c.dir, "repair", "--text", fmt.Sprintf("contender %d report %d", id, n))
	}
}

// TestOneWriterWhateverHappensToTheLockFile: eight processes step and
// report one run at once while the lock file is deleted every 5 ms. The
// lock that counts is not the file, so no second writer ever gets in: every
// command either does its work or is refused as busy (exit 3), and nothing
// that a command said it did is lost: every report it recorded is there
// once, with its number, every step that gave an outcome is in the history,
// and no acceptance disappears without a reopening.
func TestOneWriterWhateverHappensToTheLockFile(t *testing.T) {
	t.Parallel()
	const steppers, reporters = 5, 3
	c := &contenders{dir: trialRun(t, "clean")}
	deadline := time.Now().Add(*contention)

	stop := make(chan struct{})
	deleted := make(chan int)
	go func() {
		n := 0
		lock := filepath.Join(c.dir, ".custodian", "lock")
		for {
			select {
			case <-stop:
				deleted <- n
				return
			case <-time.After(5 * time.Millisecond):
				if os.Remove(lock) == nil {
					n++
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for range steppers {
		wg.Go(func() { c.stepper(deadline) })
	}
	for i := range reporters {
		wg.Go(func() { c.reporter(i, deadline) })
	}
	wg.Wait()
	close(stop)
	t.Logf("%d commands in %s; the lock file was deleted %d times", len(c.ran), *contention, <-deleted)

	// Every command did its work or was refused as busy. A release may
	// also find its job released already by another stepper's release.
	recorded := map[string]int{} // report text → the number it was recorded as
	steps := 0
	counts := map[string]map[int]int{}
	for _, d := range c.ran {
		require.NoError(t, d.err, "custodian %s could not be run", strings.Join(d.args, " "))
		if counts[d.args[0]] == nil {
			counts[d.args[0]] = map[int]int{}
		}
		counts[d.args[0]][d.code]++
		released := d.args[0] == "release" && d.code == 1 && strings.Contains(d.stderr, "is not stopped")
		if d.code != 0 && d.code != 3 && !released {
			t.Errorf("custodian %s exited %d: %s", strings.Join(d.args, " "), d.code, d.stderr)
		}
		if d.code == 3 && !strings.Contains(d.stderr, "busy") {
			t.Errorf("custodian %s exited 3 without saying the run is busy: %s", strings.Join(d.args, " "), d.stderr)
		}
		if d.code != 0 {
			continue
		}
		switch d.args[0] {
		case "step":
			steps++
		case "report":
			var number int
			_, err := fmt.Sscanf(d.stdout, "report %d recorded\n", &number)
			require.NoError(t, err, "report printed %q", d.stdout)
			recorded[d.args[4]] = number
		}
	}
	t.Logf("exit statuses by command: %v", counts)
	require.Positive(t, steps, "no step did its work")
	require.NotEmpty(t, recorded, "no report was recorded")

	// Every report that said it was recorded is in reports.jsonl once,
	// with its number, and nothing else is.
	lines := reportLines(t, c.dir)
	assert.Equal(t, len(recorded), len(lines), "reports.jsonl holds another number of reports than were recorded")
	byText, byNumber := map[string][]int{}, map[int]int{}
	for _, l := range lines {
		byText[l.Text] = append(byText[l.Text], l.Number)
		byNumber[l.Number]++
	}
	var lost []string
	for text, number := range recorded {
		if got := byText[text]; len(got) != 1 || got[0] != number || byNumber[number] != 1 {
			lost = append(lost, fmt.Sprintf("%q recorded as %d, found as %v (number %d found %d times)", text, number, got, number, byNumber[number]))
		}
	}
	slices.Sort(lost)
	if len(lost) > 0 {
		t.Errorf("%d of %d recorded reports are lost or renumbered; the first: %s", len(lost), len(recorded), strings.Join(lost[:min(len(lost), 5)], "; "))
	}

	log := ok(t, "log", c.dir)
	ok(t, "status", c.dir)
	events := parseLog(t, log)
	stepEvents := 0
	for _, e := range events {
		if strings.HasPrefix(e, "outcome: ") {
			stepEvents++
		}
	}
	assert.Equal(t, steps, stepEvents, "steps that gave an outcome and step events in the history differ")
	inLog := map[string]bool{}
	for _, e := range events {
		inLog[e] = true
	}
	missing := 0
	for text, number := range recorded {
		if !inLog[fmt.Sprintf("report %d, repair: %s", number, text)] {
			missing++
		}
	}
	assert.Zero(t, missing, "recorded reports that the log does not show")
	accepts := acceptancesStay(t, events)
	assert.Positive(t, accepts, "no job was accepted: the run never got anywhere")
	t.Logf("%d acceptances, %d source revisions", accepts, c.revisions)
}

// reportLine is what the test reads of a line of reports.jsonl.
type reportLine struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

func reportLines(t *testing.T, dir string) []reportLine {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, ".custodian", "reports.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []reportLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l reportLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "reports.jsonl line %q", sc.Text())
		out = append(out, l)
	}
	require.NoError(t, sc.Err())
	return out
}

// logEvent matches a line of `custodian log`: its time, its step and what
// happened.
var logEvent = regexp.MustCompile(`^\S+  (?:start|step \d+)\s+(.*)$`)

// parseLog returns what each line of a log says happened, in order.
func parseLog(t *testing.T, log string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		m := logEvent.FindStringSubmatch(line)
		require.NotNil(t, m, "a log line of another form: %q", line)
		out = append(out, m[1])
	}
	return out
}

// jobEvent matches the events of the history that change whether a job is
// accepted: its name is the second word.
var jobEvent = regexp.MustCompile(`^(handed out|accepted|reopened|blocked|released|refused) ([a-z][a-z0-9-]*)\b`)

// acceptancesStay checks that every acceptance in the history stays until
// the history says why not: once a job is accepted, it is handed out,
// refused or accepted again only after a reopening (or a block, or a
// release of a block). An acceptance that a second writer's commit undid
// shows as a hand-out or an acceptance with nothing between. It returns
// how many acceptances there were.
func acceptancesStay(t assert.TestingT, events []string) int {
	accepted := map[string]bool{}
	count := 0
	var undone []string
	for i, e := range events {
		m := jobEvent.FindStringSubmatch(e)
		if m == nil {
			continue
		}
		job := m[2]
		switch m[1] {
		case "accepted":
			if accepted[job] {
				undone = append(undone, fmt.Sprintf("event %d: %q after an acceptance", i, e))
			}
			accepted[job] = true
			count++
		case "handed out", "refused":
			if accepted[job] {
				undone = append(undone, fmt.Sprintf("event %d: %q after an acceptance", i, e))
			}
		case "reopened", "blocked", "released":
			accepted[job] = false
		}
	}
	if len(undone) > 0 {
		t.Errorf("%d acceptances were undone without a reopening; the first: %s", len(undone), strings.Join(undone[:min(len(undone), 5)], "; "))
	}
	return count
}

// recordingT is an assert.TestingT that notes a failure and prints
// nothing, for testing this file's checks themselves.
type recordingT struct{ failed bool }

func (r *recordingT) Errorf(string, ...any) { r.failed = true }

// TestAcceptancesStayReadsTheLog tests this file's reading of the log: an
// acceptance undone without a reopening is found out, and one that was
// reopened is not.
func TestAcceptancesStayReadsTheLog(t *testing.T) {
	good := []string{"accepted claims, attempt 1", "reopened claims: source.md changed", "handed out claims, attempt 2: p",
		"accepted assumptions, attempt 1", "accepted claims, attempt 2"}
	r := &recordingT{}
	assert.Equal(t, 3, acceptancesStay(r, good))
	assert.False(t, r.failed)
	for _, bad := range [][]string{
		{"accepted claims, attempt 1", "handed out claims, attempt 2: p"},
		{"accepted claims, attempt 1", "accepted claims, attempt 1"},
		{"accepted claims, attempt 1", "refused claims, attempt 1 (no-output): no output"},
	} {
		r := &recordingT{}
		acceptancesStay(r, bad)
		assert.True(t, r.failed, "%q was not found out", bad)
	}
}
