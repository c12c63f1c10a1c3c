package web_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/internal/snapshot"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/web"
	"github.com/custodian-run/custodian/workflow/engine"
)

// served is a server of a directory that holds one trial run, stepped
// once, and the run.
func served(t *testing.T) (*httptest.Server, *engine.Run) {
	t.Helper()
	return servedAs(t, &web.Server{})
}

// servedAs is served with the settings of s.
func servedAs(t *testing.T, s *web.Server) (*httptest.Server, *engine.Run) {
	t.Helper()
	root := t.TempDir()
	reg := definitions.Builtin()
	dir, err := trial.Setup(reg, trial.SetupOptions{Scenario: "clean", Dir: filepath.Join(root, "runs", "clean")})
	require.NoError(t, err)
	o, err := engine.Open(reg, dir)
	require.NoError(t, err)
	t.Cleanup(o.Close)
	out, err := o.Step()
	require.NoError(t, err)
	require.Equal(t, engine.KindLaunch, out.Kind)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hostile.md"), []byte("<script>alert(1)</script>\n"), 0o644))
	s.Registry, s.Dirs = reg, []string{root}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, o
}

func get(t *testing.T, srv *httptest.Server, route string) (*http.Response, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + route)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestEveryRouteAnswersGetAndRefusesTheRest(t *testing.T) {
	srv, o := served(t)
	q := url.Values{"path": {o.Dir()}}.Encode()
	routes := []string{"/", "/main", "/runs.json", "/run?" + q, "/run/main?" + q, "/run/status.json?" + q,
		"/run/file?" + q + "&rel=hostile.md", "/run/events?" + q}
	before := snapshot.Take(t, filepath.Dir(filepath.Dir(o.Dir())))
	for _, route := range routes {
		t.Run(route, func(t *testing.T) {
			if strings.HasPrefix(route, "/run/events") {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+route, nil)
				require.NoError(t, err)
				resp, err := srv.Client().Do(req)
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
				resp.Body.Close()
			} else {
				resp, _ := get(t, srv, route)
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			}
			for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
				req, err := http.NewRequest(method, srv.URL+route, strings.NewReader("x"))
				require.NoError(t, err)
				resp, err := srv.Client().Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
				assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
			}
		})
	}
	assert.Equal(t, before, snapshot.Take(t, filepath.Dir(filepath.Dir(o.Dir()))), "a request changed a file")
}

func TestOnlyItsOwnNamesAreAnswered(t *testing.T) {
	loopback := map[string]int{
		"127.0.0.1:8080": http.StatusOK, "localhost:8080": http.StatusOK, "[::1]:8080": http.StatusOK, "LocalHost": http.StatusOK,
		"evil.example": http.StatusForbidden, "custodian.example:8080": http.StatusForbidden, "10.0.0.1": http.StatusForbidden,
	}
	// On another address, any address literal, and the names given: a
	// name a web page points at the server is not one of them.
	wide := map[string]int{
		"127.0.0.1:8080": http.StatusOK, "localhost": http.StatusOK, "10.0.0.1:8080": http.StatusOK, "[fe80::1]:8080": http.StatusOK,
		"runs.lan:8080": http.StatusOK, "RUNS.LAN": http.StatusOK,
		"evil.example": http.StatusForbidden, "runs.lan.evil.example": http.StatusForbidden,
	}
	for _, tt := range []struct {
		name  string
		srv   *web.Server
		hosts map[string]int
	}{
		{"on loopback", &web.Server{}, loopback},
		{"on another address", &web.Server{AnyIP: true, Hosts: []string{"runs.lan"}}, wide},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := servedAs(t, tt.srv)
			for host, code := range tt.hosts {
				req, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
				require.NoError(t, err)
				req.Host = host
				resp, err := srv.Client().Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, code, resp.StatusCode, host)
			}
		})
	}
}

func TestARunIsServedOnlyWhenTheIndexListsIt(t *testing.T) {
	srv, o := served(t)
	other := t.TempDir()
	for _, path := range []string{other, "/etc", o.Dir() + "/.custodian", ""} {
		resp, _ := get(t, srv, "/run?"+url.Values{"path": {path}}.Encode())
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
	q := url.Values{"path": {o.Dir()}}
	for _, rel := range []string{"../x", "/etc/passwd", ".custodian/../../x", ""} {
		q.Set("rel", rel)
		resp, _ := get(t, srv, "/run/file?"+q.Encode())
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, rel)
	}
}

func TestAFileOfTheRunIsText(t *testing.T) {
	srv, o := served(t)
	q := url.Values{"path": {o.Dir()}, "rel": {"hostile.md"}}
	resp, body := get(t, srv, "/run/file?"+q.Encode())
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "default-src 'none'; sandbox", resp.Header.Get("Content-Security-Policy"))
	assert.Equal(t, "<script>alert(1)</script>\n", body)

	q.Set("rel", ".custodian/jobs")
	_, body = get(t, srv, "/run/file?"+q.Encode())
	assert.Equal(t, ".custodian/jobs: a directory of the run, holding:\n  assumptions\n  claims\n", body)

	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(o.Dir(), "link.md")))
	q.Set("rel", "link.md")
	resp, body = get(t, srv, "/run/file?"+q.Encode())
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, "link.md is a symbolic link, which is not shown")

	// Nor through a linked directory on the way, nor out of the run.
	require.NoError(t, os.Symlink("/etc", filepath.Join(o.Dir(), "etc")))
	for _, rel := range []string{"etc/passwd", "../../../../../../etc/passwd", "/etc/passwd"} {
		q.Set("rel", rel)
		resp, body = get(t, srv, "/run/file?"+q.Encode())
		assert.GreaterOrEqual(t, resp.StatusCode, 400, rel)
		assert.NotContains(t, body, "root:", rel)
	}
}

func TestTheIndexAndTheRunsPages(t *testing.T) {
	srv, o := served(t)
	resp, body := get(t, srv, "/")
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'nonce-")
	assert.Contains(t, body, `<a href="/run?path=`+url.QueryEscape(o.Dir())+`">`+o.Dir()+`</a>`)

	_, body = get(t, srv, "/run?"+url.Values{"path": {o.Dir()}}.Encode())
	for _, job := range []string{"assumptions", "claims"} {
		assert.Contains(t, body, `data-job="`+job+`" data-state="awaited"`)
	}
	assert.Contains(t, body, "<svg")
	_, main := get(t, srv, "/run/main?"+url.Values{"path": {o.Dir()}}.Encode())
	assert.True(t, strings.HasPrefix(main, `<main id="run" data-step="1"`), "%.80s", main)
}

// A run's event stream says when the run commits.
func TestTheEventsFollowTheRun(t *testing.T) {
	srv, o := served(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/run/events?"+url.Values{"path": {o.Dir()}}.Encode(), nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "data: ") {
				return l
			}
		}
		require.NoError(t, lines.Err())
		return ""
	}
	assert.Equal(t, "data: 1", next(), "the history so far")
	_, err = o.Step()
	require.NoError(t, err)
	assert.Equal(t, "data: 2", next(), "the step it saw committed")
}
