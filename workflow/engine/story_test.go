package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// story reads a job's story through a freshly opened run, as a new
// `custodian status --job` process would.
func (h *harness) story(job string) (engine.JobStory, error) {
	h.t.Helper()
	o, err := engine.Open(h.reg, h.dir)
	require.NoError(h.t, err)
	defer o.Close()
	return o.Story(job)
}

// storyLines renders a story as compact lines, with paths relative to the
// run: what a test compares. A hand-out's events are indented under it,
// and each of its launches after them.
func storyLines(t *testing.T, dir string, s engine.JobStory) []string {
	t.Helper()
	rel := func(p string) string {
		if p == "" {
			return ""
		}
		require.True(t, strings.HasPrefix(p, dir+"/"), "path %q is not an absolute path inside the run", p)
		return strings.TrimPrefix(p, dir+"/")
	}
	events := func(events []engine.Event) []string {
		var lines []string
		for _, e := range events {
			e.Path = rel(e.Path)
			lines = append(lines, "  "+historyLines([]engine.Event{e})[0])
		}
		return lines
	}
	var lines []string
	if s.Status != nil {
		lines = append(lines, fmt.Sprintf("%s: %s, %d attempts, output %s", s.Job, s.Status.State, s.Status.Attempts, rel(s.Output)))
	} else {
		lines = append(lines, s.Job+": no record")
	}
	if len(s.Before) > 0 {
		lines = append(lines, "before")
		lines = append(lines, events(s.Before)...)
	}
	for _, ho := range s.Handouts {
		lines = append(lines, fmt.Sprintf("handout #%d step %d %s", ho.Attempt, ho.Step, rel(ho.Prompt)))
		lines = append(lines, events(ho.Events)...)
		for _, l := range ho.Launches {
			line := fmt.Sprintf("  launch %d #%d %s", l.Launch, l.Attempt, l.Outcome)
			if l.Recorded {
				line += fmt.Sprintf(" recorded by step %d", l.Step)
			} else {
				line += " not recorded"
			}
			if l.Evidence != "" {
				line += fmt.Sprintf(" evidence %s, %s, %s", rel(l.Evidence), rel(l.Stdout), rel(l.Stderr))
			}
			if l.Record != nil {
				line += fmt.Sprintf(" record %s %s", l.Record.Worker, l.Record.Outcome)
			}
			lines = append(lines, line)
		}
	}
	for _, w := range s.Workers {
		lines = append(lines, fmt.Sprintf("running launch %d #%d pid %d", w.Launch, w.Attempt, w.Process.Pid))
	}
	return lines
}

// storyLaunch is a launch of job by custodian drive that ended as outcome
// with status, for the hand-out attempt.
func storyLaunch(job string, attempt, n int, outcome string, status int) *engine.Launch {
	return &engine.Launch{Job: job, Attempt: attempt, Launch: n, Worker: "exec", Command: []string{"worker", "prompt"},
		Host: "h", StartedAt: "2026-01-01T00:00:00Z", EndedAt: "2026-01-01T00:00:01Z", Outcome: outcome, ExitStatus: status}
}

// A job's story: every hand-out with what followed it (its launches, its
// verdict, the files kept aside, its block, the reports that name it),
// each launch with its evidence, and where the job stands.
func TestStory_tellsEveryHandoutAndWhatFollowedIt(t *testing.T) {
	h := startRun(t, statusTwoJobs, source)
	d := h.o.Driver(engine.Process{})
	jobs := h.launch("a", "b")
	_, err := d.RecordLaunch(storyLaunch("b", 1, 1, "finished", 0), []byte("wrote b.md\n"), []byte{})
	require.NoError(t, err)
	h.work(jobs, map[string]reply{"b": {output: invalidText}})
	h.launch("b")
	_, err = d.RecordLaunch(storyLaunch("b", 2, 2, "finished", 1), []byte{}, []byte("gave up\n"))
	require.NoError(t, err)
	h.blocked()
	_, err = h.o.Report(engine.ReportRepair, "b", "made the task clearer")
	require.NoError(t, err)
	h.launch("b")
	// A drive that ended after it kept a launch's evidence and before it
	// recorded the launch left a record the history lacks.
	run, err := store.Open(h.dir)
	require.NoError(t, err)
	unlock, err := run.Lock()
	require.NoError(t, err)
	_, err = run.SaveLaunch(storyLaunch("b", 3, 3, "finished", 0), []byte("done\n"), []byte{})
	require.NoError(t, err)
	unlock()
	run.Close()
	h.write("b.md", validText)
	h.done()

	s, err := h.story("b")
	require.NoError(t, err)
	assert.Equal(t, h.dir, s.Run)
	refused, noOutput := string(engine.BlockRefused), string(engine.BlockNoOutput)
	assert.Equal(t, []string{
		"b: accepted, 3 attempts, output b.md",
		"handout #1 step 1 .custodian/jobs/b/prompt-1.md",
		"  launch b #1 finished .custodian/jobs/b/launch-1",
		"  refuse b #1 " + refused,
		"  keep b b.md -> .custodian/jobs/b/kept/1-b.md",
		"  launch 1 #1 finished recorded by step 1 evidence .custodian/jobs/b/launch-1, " +
			".custodian/jobs/b/launch-1/stdout, .custodian/jobs/b/launch-1/stderr record exec finished",
		"handout #2 step 2 .custodian/jobs/b/prompt-2.md",
		"  launch b #2 finished .custodian/jobs/b/launch-2",
		"  refuse b #2 " + noOutput,
		"  block b " + noOutput + " .custodian/jobs/b/block-1.md: no output, attempt 2 of 2 (permits repair)",
		"  report 1 repair b after step 3: made the task clearer",
		"  launch 2 #2 finished recorded by step 2 evidence .custodian/jobs/b/launch-2, " +
			".custodian/jobs/b/launch-2/stdout, .custodian/jobs/b/launch-2/stderr record exec finished",
		"handout #3 step 4 .custodian/jobs/b/prompt-3.md",
		"  accept b #3",
		"  launch 3 #3 finished not recorded evidence .custodian/jobs/b/launch-3, " +
			".custodian/jobs/b/launch-3/stdout, .custodian/jobs/b/launch-3/stderr record exec finished",
	}, storyLines(t, h.dir, s))
	require.NotNil(t, s.Status.LastLaunch)
	assert.Equal(t, 2, s.Status.LastLaunch.Attempt, "the status's last launch is the last the history records")
	assert.Equal(t, "gave up\n", h.read(".custodian/jobs/b/launch-2/stderr"))

	a, err := h.story("a")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"a: accepted, 1 attempts, output a.md",
		"handout #1 step 1 .custodian/jobs/a/prompt-1.md",
		"  accept a #1",
	}, storyLines(t, h.dir, a))
	assert.Equal(t, []engine.Event{}, a.Before)
	assert.Equal(t, []engine.LaunchStory{}, a.Handouts[0].Launches)
	assert.Equal(t, []engine.Lease{}, a.Workers)
}

// A refusal's messages, a reopening and a release are the job's story too.
func TestStory_refusalsReopeningsAndReleases(t *testing.T) {
	h := historyScripted(t)
	s, err := h.story("a")
	require.NoError(t, err)
	lines := storyLines(t, h.dir, s)
	assert.Contains(t, lines, "  refuse a #4 "+string(engine.BlockRefused))
	assert.Contains(t, lines, "  report 3 stop a after step 7: a stopped")
	assert.Contains(t, lines, "  release a")
	require.Len(t, s.Handouts, 5)
	for _, e := range s.Handouts[0].Events {
		if e.Type == engine.EventRefuse {
			assert.Equal(t, []string{headingMsg}, e.Messages, "a refusal carries its messages")
		}
	}

	// A changed input reopens the accepted job: the reopening, and the
	// accepted output kept aside, end the story of the hand-out it was
	// accepted from.
	h.write("source.md", "changed\n")
	h.launch("a")
	s, err = h.story("a")
	require.NoError(t, err)
	require.Len(t, s.Handouts, 6)
	lines = storyLines(t, h.dir, s)
	at := slices.Index(lines, "handout #6 step 12 .custodian/jobs/a/prompt-6.md")
	require.Greater(t, at, 3, "%q", lines)
	assert.Equal(t, []string{
		"  accept a #5",
		"  reopen a: input source.md changed",
		"  keep a a.md -> .custodian/jobs/a/kept/6-a.md",
	}, lines[at-3:at])
}

// A worker a drive has in flight for the job shows while it runs.
func TestStory_showsTheJobsLiveWorkers(t *testing.T) {
	h := leased(t, process(t, true))
	s, err := h.story("a")
	require.NoError(t, err)
	require.Len(t, s.Workers, 1)
	assert.Equal(t, 1, s.Workers[0].Attempt)
}

// A former name keeps its story after its output carried over: the state
// no longer has it, the history does.
func TestStory_ofAFormerName(t *testing.T) {
	v := newVersioned()
	h := finished(t, v)
	v.nameB, v.formerly = "brief", []string{"b"}
	h.reg = registryOf(t, v.definition())
	h.reopen()
	h.done()

	b, err := h.story("b")
	require.NoError(t, err)
	assert.Nil(t, b.Status)
	lines := storyLines(t, h.dir, b)
	assert.Equal(t, "handout #1 step 2 .custodian/jobs/b/prompt-1.md", lines[1], "b waits for a")
	assert.Equal(t, "  carry brief from b", lines[len(lines)-1])

	brief, err := h.story("brief")
	require.NoError(t, err)
	require.NotNil(t, brief.Status)
	assert.Equal(t, engine.JobAccepted, brief.Status.State)
	assert.Empty(t, brief.Handouts)
	require.Len(t, brief.Before, 1)
	assert.Equal(t, engine.EventCarry, brief.Before[0].Type)
}

// An unknown job is refused as log refuses it; a launch record that is not
// the launch's cannot be trusted.
func TestStory_refusesAnUnknownJobAndAnUntrustedLaunch(t *testing.T) {
	h := startRun(t, statusTwoJobs, source)
	h.launch("a", "b")
	_, err := h.story("c")
	var refused *engine.RefusedError
	require.True(t, errors.As(err, &refused), "%v", err)
	assert.Equal(t, "name one of the run's jobs (a, b); custodian status "+h.dir+" lists them", refused.Hint)

	_, err = h.o.Driver(engine.Process{}).RecordLaunch(storyLaunch("a", 1, 1, "finished", 0), nil, nil)
	require.NoError(t, err)
	record := ".custodian/jobs/a/launch-1/launch.json"
	h.write(record, strings.Replace(h.read(record), `"job":"a"`, `"job":"b"`, 1))
	_, err = h.story("a")
	require.ErrorIs(t, err, store.ErrUntrusted)
	_, err = h.story("b")
	require.NoError(t, err, "another job's story reads no record of a's")
}

// Stories tells every named job's story in one read, each as Story tells
// it alone.
func TestStories_tellEachJobAsStoryDoes(t *testing.T) {
	h := startRun(t, newVersioned().definition(), source)
	h.work(h.launch("a"), map[string]reply{"a": {output: "no heading\n"}})
	h.work(h.launch("a"), nil)
	h.launch("b")
	o, err := engine.Open(h.reg, h.dir)
	require.NoError(t, err)
	defer o.Close()
	stories, err := o.Stories()
	require.NoError(t, err)
	require.Len(t, stories, 2)
	for _, s := range stories {
		alone, err := h.story(s.Job)
		require.NoError(t, err)
		assert.Equal(t, alone, s, s.Job)
	}
	assert.Equal(t, []string{"a", "b"}, []string{stories[0].Job, stories[1].Job})
	assert.Len(t, stories[0].Handouts, 2)
}
