// Package web serves custodian's pages over HTTP: the index of the runs
// under some directories and each run's page, which follow the runs live
// while they are stepped or driven. It is what `custodian serve` runs.
//
// It reads runs as `status` does and changes nothing: every route answers
// GET and HEAD only, and no handler writes. A run is served only when the
// index lists it, and its files only through the store's confined tree, as
// text. A server on a loopback address answers only requests addressed to a
// loopback name, so that a web page in the operator's browser cannot reach
// it through a name of its own that resolves to 127.0.0.1.
package web

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/custodian-run/custodian/page"
	"github.com/custodian-run/custodian/picture"
	"github.com/custodian-run/custodian/runlist"
	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// Server serves the runs under Dirs, of the definitions in Registry.
type Server struct {
	Registry *workflow.Registry
	Dirs     []string
	// AnyIP answers requests to any IP address, not only a loopback one:
	// for a server on an address other than loopback, which the operator
	// chose. A name is answered only when it is loopback's or in Hosts: a
	// web page can point a name of its own at any address (DNS
	// rebinding), never an address literal.
	AnyIP bool
	// Hosts are the names, besides localhost, that the server answers
	// requests to (serve's --allow-host), lower-case.
	Hosts []string

	mu    sync.Mutex
	found time.Time
	runs  []runlist.Entry
}

// listAge is how long a listing of the runs serves before the directories
// are walked again: a new run shows within a second or two.
const listAge = time.Second

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", s.index)
	mux.HandleFunc("/main", s.indexMain)
	mux.HandleFunc("/runs.json", s.runsJSON)
	mux.HandleFunc("/run", s.withRun(s.runPage))
	mux.HandleFunc("/run/main", s.withRun(s.runMain))
	mux.HandleFunc("/run/status.json", s.withRun(s.status))
	mux.HandleFunc("/run/events", s.withRun(s.events))
	mux.HandleFunc("/run/file", s.withRun(s.file))
	return s.guard(mux)
}

// guard refuses what a read-only local server must not answer: a method
// that could change something, and a request to a name that is not the
// server's.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "custodian serve is read-only: it answers GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		if !s.answers(r.Host) {
			http.Error(w, "this server answers requests to its addresses, to localhost and to the names custodian serve --allow-host gives only", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// answers says whether the server answers a request whose Host is host:
// a loopback name or address; with AnyIP any address; a name of Hosts.
func (s *Server) answers(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || s.AnyIP
	}
	return host == "localhost" || slices.Contains(s.Hosts, host)
}

// list returns the runs under the directories, walked again when the last
// walk is older than listAge.
func (s *Server) list() ([]runlist.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs != nil && time.Since(s.found) < listAge {
		return s.runs, nil
	}
	runs, err := runlist.Find(s.Registry, s.Dirs...)
	if err != nil {
		return nil, err
	}
	s.runs, s.found = runs, time.Now()
	return runs, nil
}

func (s *Server) indexData(r *http.Request, live bool) (page.Index, error) {
	runs, err := s.list()
	if err != nil {
		return page.Index{}, err
	}
	x := page.Index{Dirs: s.Dirs, Entries: runs, Made: time.Now(),
		Link: func(path string) string { return "/run?" + url.Values{"path": {path}}.Encode() }}
	if live {
		x.Live = &page.Live{Fragment: "/main", Nonce: nonce()}
	}
	return x, nil
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	x, err := s.indexData(r, true)
	if err != nil {
		fail(w, err)
		return
	}
	html(w, x.Live, func(b *bytes.Buffer) error { return page.WriteIndex(b, x) })
}

func (s *Server) indexMain(w http.ResponseWriter, r *http.Request) {
	x, err := s.indexData(r, false)
	if err != nil {
		fail(w, err)
		return
	}
	html(w, nil, func(b *bytes.Buffer) error { return page.WriteIndexMain(b, x) })
}

func (s *Server) runsJSON(w http.ResponseWriter, r *http.Request) {
	runs, err := s.list()
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, runs)
}

// withRun opens the run that the query's path names, when the index lists
// it, for the handler.
func (s *Server) withRun(h func(w http.ResponseWriter, r *http.Request, o *engine.Run)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Query().Get("path")
		runs, err := s.list()
		if err != nil {
			fail(w, err)
			return
		}
		if !slices.ContainsFunc(runs, func(e runlist.Entry) bool { return e.Path == path && e.State != runlist.Unreadable }) {
			http.Error(w, "no run the index lists is at that path", http.StatusNotFound)
			return
		}
		o, err := engine.Open(s.Registry, path)
		if err != nil {
			fail(w, err)
			return
		}
		defer o.Close()
		h(w, r, o)
	}
}

// runData reads the run's page, with links to the server's own routes.
func runData(o *engine.Run, live bool) (page.Run, error) {
	ov, err := o.Overview()
	if err != nil {
		return page.Run{}, err
	}
	var svg bytes.Buffer
	if err := picture.SVG(&svg, ov.Graph, picture.Options{}); err != nil {
		return page.Run{}, err
	}
	q := url.Values{"path": {o.Dir()}}.Encode()
	p := page.Run{Status: ov.Status, Graph: ov.Graph, Stories: ov.Stories, SVG: svg.Bytes(), Made: time.Now(),
		Link: func(abs string) string {
			rel, err := filepath.Rel(o.Dir(), abs)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				return ""
			}
			return "/run/file?" + url.Values{"path": {o.Dir()}, "rel": {filepath.ToSlash(rel)}}.Encode()
		}}
	if live {
		p.Live = &page.Live{Events: "/run/events?" + q, Fragment: "/run/main?" + q, Nonce: nonce()}
	}
	return p, nil
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request, o *engine.Run) {
	p, err := runData(o, true)
	if err != nil {
		fail(w, err)
		return
	}
	html(w, p.Live, func(b *bytes.Buffer) error { return page.WriteRun(b, p) })
}

func (s *Server) runMain(w http.ResponseWriter, r *http.Request, o *engine.Run) {
	p, err := runData(o, false)
	if err != nil {
		fail(w, err)
		return
	}
	html(w, nil, func(b *bytes.Buffer) error { return page.WriteRunMain(b, p) })
}

func (s *Server) status(w http.ResponseWriter, r *http.Request, o *engine.Run) {
	st, err := o.Status()
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, st)
}

// events streams one server-sent event for the run's history, then one for
// every command the run commits, each naming the step the run is at, until
// the client goes or the server ends.
func (s *Server) events(w http.ResponseWriter, r *http.Request, o *engine.Run) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "this connection cannot stream events", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, ": following the run\n\n")
	flusher.Flush()
	err := o.Follow(r.Context(), engine.LogFilter{}, func(events []engine.Event) error {
		if _, err := fmt.Fprintf(w, "data: %d\n\n", events[len(events)-1].Step); err != nil {
			return err
		}
		flusher.Flush()
		return nil
	})
	if err != nil && r.Context().Err() == nil {
		// The stream has begun: say why it ends, as an event of its own.
		// A line break of any kind would end the data line.
		fmt.Fprintf(w, "event: failed\ndata: %s\n\n", strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(err.Error()))
		flusher.Flush()
	}
}

// file shows a file of the run as plain text, or a directory's names: never
// as HTML, which a worker's output would otherwise be free to be.
func (s *Server) file(w http.ResponseWriter, r *http.Request, o *engine.Run) {
	rel := r.URL.Query().Get("rel")
	if !store.Clean(rel) {
		http.Error(w, "rel is not a clean path inside the run", http.StatusBadRequest)
		return
	}
	f, err := o.File(rel)
	if err != nil {
		fail(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	var b bytes.Buffer
	switch {
	case f.Names != nil || f.Kind == "a directory":
		fmt.Fprintf(&b, "%s: a directory of the run, holding:\n", f.Rel)
		for _, n := range f.Names {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	case f.Text != nil || f.Kind == "a regular file":
		b.Write(f.Text)
		if f.Cut {
			fmt.Fprintf(&b, "\n[custodian: the file goes on past the first %d bytes shown]\n", engine.MaxFileShown)
		}
	default:
		http.Error(w, fmt.Sprintf("%s is %s, which is not shown", f.Rel, f.Kind), http.StatusNotFound)
		return
	}
	_, _ = w.Write(b.Bytes())
}

// html writes a page made in full first, so that a failure is an error
// response and not half a page; a live page's policy lets its script run.
func html(w http.ResponseWriter, live *page.Live, write func(*bytes.Buffer) error) {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		fail(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	policy := "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
	if live != nil {
		policy += "; script-src 'nonce-" + live.Nonce + "'; connect-src 'self'"
	}
	h.Set("Content-Security-Policy", policy)
	_, _ = w.Write(b.Bytes())
}

func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(data, '\n'))
}

// fail answers with what went wrong: a run that cannot be trusted or read
// is the server's to report, not the client's fault.
func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var usage *engine.UsageError
	if errors.As(err, &usage) {
		code = http.StatusBadRequest
	}
	http.Error(w, err.Error(), code)
}

// nonce is a fresh value for a page's one script.
func nonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
