package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serving is a custodian serve in the background.
type serving struct {
	cmd    *exec.Cmd
	url    string
	stderr bytes.Buffer
}

// startServe starts `serve args...` with bin and returns once it prints
// where it listens.
func startServe(t *testing.T, bin string, args ...string) *serving {
	t.Helper()
	s := &serving{cmd: exec.Command(bin, append([]string{"serve"}, args...)...)}
	stdout, err := s.cmd.StdoutPipe()
	require.NoError(t, err)
	s.cmd.Stderr = &s.stderr
	require.NoError(t, s.cmd.Start())
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "serve printed no address: %s", s.stderr.String())
	m := regexp.MustCompile(`^serving (http://127\.0\.0\.1:\d+/)\n$`).FindStringSubmatch(line)
	require.NotNil(t, m, "serve printed %q", line)
	s.url = m[1]
	return s
}

func TestServeFollowsALiveDriveInABrowser(t *testing.T) {
	t.Parallel()
	chromium(t)
	root := t.TempDir()
	dir := fanoutRun(t, root, 6)
	plan := map[string][]string{}
	for i := 1; i <= 6; i++ {
		plan["j"+strconv.Itoa(i)] = []string{"slow:1"}
	}
	plan["j3"] = []string{"slow:1", "valid"}
	s := startServe(t, variantBinaries["fanout"], root)
	h := newHarness(t, plan)
	d := startDriveWith(t, variantBinaries["fanout"], h, dir, "claude", "--max-parallel", "2")

	// Open the page while the first workers run.
	require.Eventually(t, func() bool {
		st := redefOK(t, "fanout", "status", dir)
		return strings.Contains(st, "last step: 1,")
	}, 20*time.Second, 50*time.Millisecond, "the drive's first step")
	page := s.url + "run?" + url.Values{"path": {dir}}.Encode()
	b := openDevtools(t, page)
	require.True(t, b.await(`document.getElementById("run") !== null`, 20*time.Second), "the page did not load")
	// The step the page was loaded at: the first, or, on a loaded machine,
	// one soon after it.
	loaded := b.eval(`document.getElementById("run").dataset.step`)
	require.Regexp(t, `^"[1-9][0-9]*"$`, loaded)
	assert.Equal(t, "null", b.eval(`document.getElementById("run").dataset.loadedStep ?? null`), "the page as first loaded")

	// The drive's later steps, one as each worker ends, show without a
	// reload: the main element was replaced, and keeps the step it was
	// first loaded at.
	const allAccepted = `document.querySelectorAll('details.job[data-state="accepted"]').length === 6`
	require.True(t, b.await(allAccepted, 40*time.Second),
		"the page never showed every job accepted; the drive printed %s", d.stdout.String())
	assert.Equal(t, loaded, b.eval(`document.getElementById("run").dataset.loadedStep`))
	assert.Equal(t, "true", b.eval(`Number(document.getElementById("run").dataset.step) > Number(document.getElementById("run").dataset.loadedStep)`),
		"no step after the page was loaded shows")
	var jobs map[string]string
	require.NoError(t, json.Unmarshal([]byte(b.eval(
		`Object.fromEntries([...document.querySelectorAll("details.job")].map(e => [e.dataset.job, e.dataset.state]))`)), &jobs))
	assert.Equal(t, map[string]string{"j1": "accepted", "j2": "accepted", "j3": "accepted", "j4": "accepted", "j5": "accepted", "j6": "accepted"}, jobs)

	// The index lists the run, and follows it too.
	b.call(b.session, "Page.navigate", map[string]any{"url": s.url}, nil)
	require.True(t, b.await(`document.querySelector('tr[data-state="done"]') !== null`, 20*time.Second), "the index does not show the run done")
	<-d.done
}

func TestServeListensOnLoopbackUnlessToldAndEndsAtASignal(t *testing.T) {
	root := t.TempDir()
	ok(t, "trial", "setup", "clean", "--run", filepath.Join(root, "clean"))

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		s := startServe(t, binary, root)
		resp, err := http.Get(s.url + "runs.json")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		resp, err = http.Post(s.url, "text/plain", strings.NewReader("x"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		require.NoError(t, s.cmd.Process.Signal(sig))
		require.NoError(t, s.cmd.Wait(), "serve ends at %s with exit 0: %s", sig, s.stderr.String())
		assert.Empty(t, s.stderr.String())
	}

	// A name is answered only when the operator gives it.
	s := startServe(t, binary, root, "--allow-host", "Runs.LAN")
	for host, code := range map[string]int{"runs.lan": http.StatusOK, "other.lan": http.StatusForbidden} {
		req, err := http.NewRequest(http.MethodGet, s.url+"runs.json", nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, code, resp.StatusCode, host)
	}

	r := run(t, binary, nil, "serve", root, "--addr", ":0")
	assert.Equal(t, 2, r.code, "an address without a host would listen on every interface")
	assert.Contains(t, r.stderr, "custodian: serve: --addr \":0\" names no host")

	wide := exec.Command(binary, "serve", root, "--addr", "0.0.0.0:0")
	var stdout, stderr bytes.Buffer
	wide.Stdout, wide.Stderr = &stdout, &stderr
	require.NoError(t, wide.Start())
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), "serving http://") }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, wide.Process.Signal(syscall.SIGINT))
	require.NoError(t, wide.Wait())
	assert.Contains(t, stderr.String(), "custodian: warning: serving on 0.0.0.0:")
	assert.Contains(t, stderr.String(), "anyone who reaches this address can read the runs")
}
