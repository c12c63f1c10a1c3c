package main

import (
	"bytes"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var screenshot = flag.Bool("screenshot", false, "write docs/view.png, the README's picture of custodian view, anew")

// hostileReply is a worker's final message, which its run keeps and its
// pages show: a worker is an AI agent writing what it likes.
const hostileReply = `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`

// fanoutRun starts a run of the fanout variant with jobs jobs, in a
// directory of its own under root.
func fanoutRun(t *testing.T, root string, jobs int) string {
	t.Helper()
	dir := filepath.Join(root, "fanout")
	r := run(t, variantBinaries["fanout"], nil, "start", "fanout", "--run", dir, "--param", "jobs="+strconv.Itoa(jobs))
	require.Equal(t, 0, r.code, r.stderr)
	return dir
}

// jobsInDOM reads the job parts of a page's DOM: name → state.
func jobsInDOM(dom string) map[string]string {
	jobs := map[string]string{}
	for _, m := range regexp.MustCompile(`<details class="job" id="job-[^"]*" data-job="([^"]*)" data-state="([^"]*)"`).FindAllStringSubmatch(dom, -1) {
		jobs[m[1]] = m[2]
	}
	return jobs
}

func TestViewWritesOnePageThatABrowserShows(t *testing.T) {
	root := t.TempDir()
	dir := fanoutRun(t, root, 4)
	h := newHarness(t, map[string][]string{"j1": {"say:" + hostileReply}, "j2": {"nothing", "valid"}})
	r := driveRun(t, variantBinaries["fanout"], h, dir, "claude")
	require.Equal(t, 0, r.code, "drive: %s", r.stderr)

	out := filepath.Join(root, "pages", "run.html")
	require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
	before := files(t, dir)
	assert.Equal(t, out+"\n", redefOK(t, "fanout", "view", dir, "-o", out))
	assert.Equal(t, before, files(t, dir), "view wrote in the run")
	html := fileText(t, out)
	assert.NotContains(t, html, "<script", "a page that does not follow its run has no script, and a worker's none")
	assert.Contains(t, html, `&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;`)
	assert.Contains(t, html, `<a href="../fanout/.custodian/jobs/j1/prompt-1.md">prompt</a>`, "links are relative to the page")

	dom := browse(t, "file://"+out, "--dump-dom")
	assert.Equal(t, map[string]string{"j1": "accepted", "j2": "accepted", "j3": "accepted", "j4": "accepted"}, jobsInDOM(dom))
	assert.Contains(t, dom, "<title>fanout: 4 jobs: 4 accepted</title>", "no worker's text ran as script")
	assert.Contains(t, dom, `&lt;script&gt;document.title="pwned"&lt;/script&gt;`, "the worker's reply stays text in the DOM")
	assert.Regexp(t, `data-job="j2"[^>]*>(?s:.*?)<b>attempt 2</b>`, dom, "j2's second attempt is on the page")
}

// The README's picture: the page of the trial's problem scenario, driven
// by trial demo. go test ./cmd/custodian -run Picture -screenshot writes it
// to docs/view.png.
func TestTheREADMEPictureOfView(t *testing.T) {
	chromium(t)
	dir := filepath.Join(t.TempDir(), "problem")
	r := run(t, binary, nil, "trial", "demo", "--scenario", "problem", "--run", dir)
	require.Equal(t, 0, r.code, r.stderr)
	out := filepath.Join(t.TempDir(), "run.html")
	ok(t, "view", dir, "-o", out)
	shot := filepath.Join(t.TempDir(), "view.png")
	browse(t, "file://"+out, "--screenshot="+shot, "--window-size=1200,1100", "--hide-scrollbars")
	data, err := os.ReadFile(shot)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Equal(t, 1200, img.Bounds().Dx())
	if *screenshot {
		require.NoError(t, os.WriteFile(filepath.Join("..", "..", "docs", "view.png"), data, 0o644))
	}
}

func TestViewNeedsAPageFile(t *testing.T) {
	dir := trialRun(t, "clean")
	r := run(t, binary, nil, "view", dir)
	assert.Equal(t, 2, r.code)
	assert.Equal(t, "custodian: view: name the page's file with -o FILE\ncustodian: hint: custodian view RUN -o run.html\n", r.stderr)
	page := ok(t, "view", dir, "-o", "-")
	assert.True(t, strings.HasPrefix(page, "<!DOCTYPE html>"), "%.40s", page)
}

// No command writes beside the run, nor reads code from a shared place:
// a library that caches in $TMPDIR (go-graphviz compiled its WebAssembly
// there in every process) would show here.
func TestCommandsWriteNothingInTheTemporaryDirectory(t *testing.T) {
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}
	dir := filepath.Join(t.TempDir(), "run")
	for _, args := range [][]string{
		{"trial", "setup", "clean", "--run", dir},
		{"step", dir},
		{"status", dir},
		{"graph", dir},
		{"view", dir, "-o", "-"},
		{"version"},
	} {
		r := run(t, binary, env, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
	}
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries)
}
