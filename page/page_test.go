package page_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/page"
	"github.com/custodian-run/custodian/runlist"
	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow/engine"
)

// hostile is text a worker writes, which a page must show as text.
const hostile = `<script>document.title="pwned"</script><img src=x onerror=alert(1)>"'&`

// run is a page of a run whose every text from a worker or a validator is
// hostile.
func run() page.Run {
	at := "2026-12-01T10:00:00Z"
	story := engine.JobStory{Run: "/runs/r", Job: "a",
		Status: &engine.JobStatus{Name: "a", State: engine.JobAwaited, Attempts: 2},
		Handouts: []engine.HandoutStory{
			{Attempt: 1, Step: 1, At: at, Prompt: "/runs/r/.custodian/jobs/a/prompt-1.md",
				Events: []engine.Event{
					{Type: engine.EventRefuse, Kind: "validator-refused", Text: hostile, Messages: []string{hostile}, At: "2026-12-01T10:01:00Z"},
					{Type: engine.EventKeep, Text: "a.md", Path: "/runs/r/.custodian/jobs/a/kept/1-a.md"},
				},
				Launches: []engine.LaunchStory{{Launch: 1, Attempt: 1, Outcome: "finished", Text: "finished, exit 0", Evidence: "/runs/r/.custodian/jobs/a/launch-1",
					Record: &store.Launch{StartedAt: "2026-12-01T10:00:10Z", EndedAt: "2026-12-01T10:00:50Z", Message: hostile}}}},
			{Attempt: 2, Step: 2, At: "2026-12-01T10:01:00Z", Prompt: "/runs/r/.custodian/jobs/a/prompt-2.md", Events: []engine.Event{}},
		}}
	return page.Run{
		Status: engine.Status{Run: "/runs/r", Definition: "demo", Agent: "launch the jobs", Operator: hostile,
			Last: &engine.LastStep{Step: 2, At: at, Outcome: engine.Outcome{Kind: engine.KindLaunch}}},
		Graph:   engine.Graph{Nodes: []engine.GraphNode{{Subject: "a", State: engine.NodeRefused, Attempts: 2}}},
		Stories: []engine.JobStory{story},
		SVG:     []byte(`<svg xmlns="http://www.w3.org/2000/svg"><title>n1</title></svg>`),
		Link:    func(abs string) string { return strings.TrimPrefix(abs, "/runs/") },
		Made:    time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC),
	}
}

func write(t testing.TB, f func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, f(&b))
	return b.String()
}

func TestARunsPageShowsEveryTextAsText(t *testing.T) {
	html := write(t, func(b *bytes.Buffer) error { return page.WriteRun(b, run()) })
	assert.NotContains(t, html, "<script>document")
	assert.NotContains(t, html, "<img src=x")
	assert.Contains(t, html, "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;", "the worker's text is shown, escaped")
	assert.Equal(t, 0, strings.Count(html, "<script"), "a page that does not follow its run has no script")
	assert.Contains(t, html, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`)
	assert.Contains(t, html, `<svg xmlns="http://www.w3.org/2000/svg"><title>n1</title></svg>`)
	for _, want := range []string{
		`<details class="job" id="job-a" data-job="a" data-state="refused" open>`,
		`<a href="r/.custodian/jobs/a/prompt-1.md">prompt</a>`,
		`<a href="r/.custodian/jobs/a/launch-1">evidence</a>`,
		`<a href="r/.custodian/jobs/a/kept/1-a.md">kept file</a>`,
		`<main id="run" data-step="2" data-definition="demo">`,
		`data-job="a" data-attempt="1"`,
	} {
		assert.Contains(t, html, want)
	}
	for _, tag := range regexp.MustCompile(`<[a-zA-Z][^>]*>`).FindAllString(html, -1) {
		assert.NotRegexp(t, `\s(src|srcset)=|href="(https?:)?//|^<link`, tag, "the page needs nothing from elsewhere")
	}
	assert.NotContains(t, html, "@import")
	assert.NotContains(t, html, "url(", "the style sheet fetches nothing")
}

func TestALivePageFollowsItsRun(t *testing.T) {
	r := run()
	r.Live = &page.Live{Events: "/run/events?path=%2Fruns%2Fr", Fragment: "/run/main?path=%2Fruns%2Fr", Nonce: "n0nce"}
	html := write(t, func(b *bytes.Buffer) error { return page.WriteRun(b, r) })
	assert.Equal(t, 1, strings.Count(html, "<script"))
	assert.Contains(t, html, `<script nonce="n0nce">`)
	assert.Contains(t, html, `script-src 'nonce-n0nce'; connect-src 'self'`)
	assert.Contains(t, html, `const fragment = "/run/main?path=%2Fruns%2Fr", events = "/run/events?path=%2Fruns%2Fr";`)

	main := write(t, func(b *bytes.Buffer) error { return page.WriteRunMain(b, r) })
	assert.True(t, strings.HasPrefix(main, `<main id="run"`), "the fragment is the main element: %.60s", main)
	assert.NotContains(t, main, "<script")
}

func TestTheTimelineLaysEveryAttemptAlongTheRun(t *testing.T) {
	html := write(t, func(b *bytes.Buffer) error { return page.WriteRun(b, run()) })
	// Attempt 1's worker ran from 10:00:10 to 10:00:50, as drive recorded;
	// attempt 2 was handed out at 10:01:00 and is awaited: the run spans
	// 10:00:10 to 10:01:00.
	assert.Contains(t, html, `<div class="bar refused" style="left: 0.00%; width: 80.00%"`)
	assert.Contains(t, html, `<div class="bar awaited" style="left: 100.00%; width: 0.50%"`)
	assert.Contains(t, html, "2026-12-01T10:00:10Z to 2026-12-01T10:01:00Z")
}

func TestTheIndexShowsEveryRun(t *testing.T) {
	x := page.Index{Dirs: []string{"/runs"}, Made: time.Now(),
		Entries: []runlist.Entry{
			{Path: "/runs/<b>x</b>", Definition: "demo", State: runlist.Done, Summary: "3 jobs: 3 accepted"},
			{Path: "/runs/bad", State: runlist.Unreadable, Reason: hostile},
		},
		Link: func(path string) string { return "/run?path=" + path }}
	html := write(t, func(b *bytes.Buffer) error { return page.WriteIndex(b, x) })
	assert.Contains(t, html, `<tr data-run="/runs/&lt;b&gt;x&lt;/b&gt;" data-state="done">`)
	assert.Contains(t, html, `<a href="/run?path=/runs/%3cb%3ex%3c/b%3e">/runs/&lt;b&gt;x&lt;/b&gt;</a>`)
	assert.NotContains(t, html, `href="/run?path=/runs/bad"`, "an unreadable run has no page")
	assert.NotContains(t, html, "<script>document")
}

// hostileRun is run with text in every place a run's text goes on a page:
// the job's name, a refusal's reason and messages, a worker's last
// message, the operator's advice, a path.
func hostileRun(name, text string) page.Run {
	r := run()
	s := &r.Stories[0]
	s.Job, s.Status.Name = name, name
	ev := &s.Handouts[0].Events[0]
	ev.Text, ev.Messages = text, []string{text}
	s.Handouts[0].Events[1].Text = text
	s.Handouts[0].Launches[0].Record.Message = text
	s.Handouts[1].Prompt = "/runs/r/" + text
	r.Graph.Nodes[0].Subject = engine.Subject(name)
	r.Status.Operator = text
	return r
}

var (
	tag     = regexp.MustCompile(`<(/?[a-zA-Z][a-zA-Z0-9-]*)`)
	element = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	quoted  = regexp.MustCompile(`"[^"]*"`)
)

// tags counts the elements a page opens and closes.
func tags(html string) map[string]int {
	n := map[string]int{}
	for _, m := range tag.FindAllStringSubmatch(html, -1) {
		n[strings.ToLower(m[1])]++
	}
	return n
}

// FuzzRunPage holds a run's page to its own structure: whatever a job's
// name or a worker's text holds, the page has the elements it has with
// plain text, and none of them a script.
func FuzzRunPage(f *testing.F) {
	for _, s := range []string{hostile, "</details><script>x</script>", `" onmouseover="x`, "]]><!--", "\x00\xff", "a\nb"} {
		f.Add("a", s)
		f.Add(s, "plain")
	}
	want := tags(write(f, func(b *bytes.Buffer) error { return page.WriteRun(b, hostileRun("a", "plain")) }))
	f.Fuzz(func(t *testing.T, name, text string) {
		if text == "" {
			t.Skip("a worker's empty message is not shown at all")
		}
		html := write(t, func(b *bytes.Buffer) error { return page.WriteRun(b, hostileRun(name, text)) })
		assert.Equal(t, want, tags(html))
		for _, el := range element.FindAllString(html, -1) {
			// Every value is quoted, and a quote within it escaped: what
			// is left is the element's own names.
			names := quoted.ReplaceAllString(el, `""`)
			assert.NotRegexp(t, `(?i)\son[a-z]+=`, names, "an element carries a handler: %s", el)
		}
	})
}
