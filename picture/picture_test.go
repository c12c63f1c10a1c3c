package picture_test

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-graphviz"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/picture"
	"github.com/custodian-run/custodian/workflow/engine"
)

var update = flag.Bool("update", false, "write the golden pictures anew")

// audit is an audit of n packages: a gate job, n audits that read its
// output, a join that reads theirs and an effect that files its ticket;
// the audits in the given states, the rest accepted.
func audit(n int, states map[int]string) engine.Graph {
	g := engine.Graph{Run: "/runs/audit", Definition: "audit"}
	g.Nodes = append(g.Nodes, engine.GraphNode{Subject: "gate", State: engine.NodeAccepted, Attempts: 1, Output: "gate.md"})
	for i := range n {
		name := engine.Subject(fmt.Sprintf("audit-%02d", i))
		state := engine.NodeAccepted
		if s, ok := states[i]; ok {
			state = s
		}
		g.Nodes = append(g.Nodes, engine.GraphNode{Subject: name, State: state, Attempts: 1 + i%2, Output: string(name) + ".md"})
		g.Edges = append(g.Edges, engine.GraphEdge{From: "gate", To: name}, engine.GraphEdge{From: name, To: "summary"})
	}
	g.Nodes = append(g.Nodes, engine.GraphNode{Subject: "summary", State: engine.NodePending, Output: "summary.md"},
		engine.GraphNode{Subject: engine.EffectSubject("file-ticket"), State: engine.NodeOwed})
	g.Edges = append(g.Edges, engine.GraphEdge{From: "summary", To: engine.EffectSubject("file-ticket")})
	return g
}

// golden compares got with testdata/name, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./picture -update to write it")
	assert.Equal(t, string(want), got, "%s differs; if the change is meant, run go test ./picture -update", path)
}

func draw(t *testing.T, write func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, write(&b))
	return b.String()
}

func TestGoldenPictures(t *testing.T) {
	wide := audit(30, map[int]string{3: engine.NodeRunning, 7: engine.NodeRefused, 12: engine.NodeAwaited})
	narrow := audit(3, map[int]string{1: engine.NodeBlocked})
	for _, tc := range []struct {
		name string
		g    engine.Graph
		opt  picture.Options
	}{
		{"fanout-30", wide, picture.Options{}},
		{"fanout-30-all", wide, picture.Options{All: true}},
		{"fanout-3", narrow, picture.Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mermaid := draw(t, func(b *bytes.Buffer) error { return picture.Mermaid(b, tc.g, tc.opt) })
			dot := draw(t, func(b *bytes.Buffer) error { return picture.DOT(b, tc.g, tc.opt) })
			golden(t, tc.name+".mmd", mermaid)
			golden(t, tc.name+".dot", dot)
			golden(t, tc.name+".svg", draw(t, func(b *bytes.Buffer) error { return picture.SVG(b, tc.g, tc.opt) }))
			assert.Equal(t, mermaid, draw(t, func(b *bytes.Buffer) error { return picture.Mermaid(b, tc.g, tc.opt) }), "the same graph, the same picture")
		})
	}
}

func TestAWideFanOutIsOneNode(t *testing.T) {
	g := audit(30, map[int]string{3: engine.NodeRunning, 7: engine.NodeRefused})
	mermaid := draw(t, func(b *bytes.Buffer) error { return picture.Mermaid(b, g, picture.Options{}) })
	assert.Contains(t, mermaid, `n2["audit-* (30 jobs)<br/>1 refused, 1 running, 28 accepted"]:::refused`)
	assert.Equal(t, 4, strings.Count(mermaid, `"]:::`), "gate, the audits, summary and the effect")
	assert.Contains(t, mermaid, "  n1 --> n2\n  n2 --> n3\n  n3 --> n4\n", "one edge each way, not thirty")

	all := draw(t, func(b *bytes.Buffer) error { return picture.Mermaid(b, g, picture.Options{All: true}) })
	assert.Equal(t, 33, strings.Count(all, `"]:::`))

	// At most Wide alike jobs are drawn one by one.
	g = audit(picture.Wide, nil)
	assert.Equal(t, picture.Wide+3, strings.Count(draw(t, func(b *bytes.Buffer) error { return picture.Mermaid(b, g, picture.Options{}) }), `"]:::`))
}

// hostile are names a worker or an author might give, with characters
// Mermaid, DOT, HTML or SVG give a meaning to.
var hostile = []string{
	`a"]; click n1 "javascript:alert(1)"; x["`,
	"<script>alert(1)</script>",
	`back\slash \N \G \l`,
	"new\nline\rand\ttab",
	"amp & ampersand &lt; entity #35; hash",
	"}; digraph evil { a -> b",
	"--> n1",
	"%% comment",
	"\x00\x7f\xff invalid utf-8",
	"", "[brackets] (parens) {braces} |pipes| `ticks`",
}

// named is a graph of two jobs named a and b, a feeding b.
func named(a, b string) engine.Graph {
	return engine.Graph{Nodes: []engine.GraphNode{{Subject: engine.Subject(a), State: engine.NodeAccepted, Attempts: 1},
		{Subject: engine.Subject(b), State: engine.NodeRefused, Attempts: 2}}, Edges: []engine.GraphEdge{{From: engine.Subject(a), To: engine.Subject(b)}}}
}

// plain is what a label shows of s: control characters as spaces,
// invalid UTF-8 as the replacement character.
func plain(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			r = ' '
		}
		b.WriteRune(r)
	}
	return b.String()
}

var (
	mermaidNode   = regexp.MustCompile(`^  (n\d+)\["((?:[A-Za-z0-9 .,:_/+*()-]|#\d+;|<br/>)*)"\]:::([a-z]+)$`)
	mermaidEdge   = regexp.MustCompile(`^  n\d+ --> n\d+$`)
	mermaidClass  = regexp.MustCompile(`^  classDef [a-z]+ fill:#[0-9a-f]{6},stroke:#[0-9a-f]{6},color:#111827$`)
	mermaidEntity = regexp.MustCompile(`#(\d+);`)
)

// FuzzMermaid holds every name to the grammar of the lines Mermaid writes:
// whatever it holds, it is one quoted label, which reads back as the name.
func FuzzMermaid(f *testing.F) {
	for _, s := range hostile {
		f.Add(s, "b")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b {
			t.Skip("a graph names each job once")
		}
		out := draw(t, func(w *bytes.Buffer) error { return picture.Mermaid(w, named(a, b), picture.Options{}) })
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Equal(t, "flowchart LR", lines[0])
		var labels []string
		for _, l := range lines[1:] {
			if m := mermaidNode.FindStringSubmatch(l); m != nil {
				labels = append(labels, m[2])
				continue
			}
			require.True(t, mermaidEdge.MatchString(l) || mermaidClass.MatchString(l), "a line outside the grammar: %q", l)
		}
		require.Len(t, labels, 2)
		first, _, _ := strings.Cut(labels[0], "<br/>")
		decoded := mermaidEntity.ReplaceAllStringFunc(first, func(e string) string {
			n, _ := strconv.Atoi(e[1 : len(e)-1])
			return string(rune(n))
		})
		assert.Equal(t, plain(a), decoded)
	})
}

// FuzzDOT parses what DOT writes with Graphviz itself: whatever a name
// holds, the graph has the two nodes and the one edge, and the label reads
// back as the name.
func FuzzDOT(f *testing.F) {
	for _, s := range hostile {
		f.Add(s, "b")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b {
			t.Skip("a graph names each job once")
		}
		out := draw(t, func(w *bytes.Buffer) error { return picture.DOT(w, named(a, b), picture.Options{}) })
		g, err := graphviz.ParseBytes([]byte(out))
		require.NoError(t, err, "%s", out)
		defer g.Close()
		nodes, err := g.NodeNum()
		require.NoError(t, err)
		edges, err := g.EdgeNum()
		require.NoError(t, err)
		require.Equal(t, []int{2, 1}, []int{nodes, edges}, "%s", out)
		n, err := g.FirstNode()
		require.NoError(t, err)
		name, err := n.Name()
		require.NoError(t, err)
		require.Equal(t, "n1", name)
		first, _, _ := strings.Cut(n.GetStr("label"), `\n`)
		assert.Equal(t, plain(a), dotLabel(first))
	})
}

// dotLabel reads a label as Graphviz shows it: its escapes undone.
func dotLabel(s string) string {
	s = strings.ReplaceAll(s, `\\`, "\x00")
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, "&amp;", "&")
	return strings.ReplaceAll(s, "\x00", `\`)
}

func TestSVGWritesEveryNameAsText(t *testing.T) {
	g := named("<script>alert(1)</script>", "b")
	g.Nodes = append(g.Nodes, engine.GraphNode{Subject: "plain-job", State: engine.NodeAccepted, Attempts: 1})
	svg := draw(t, func(b *bytes.Buffer) error { return picture.SVG(b, g, picture.Options{}) })
	assert.True(t, strings.HasPrefix(svg, "<svg "), "%.80s", svg)
	assert.NotContains(t, svg, "<script")
	assert.Contains(t, svg, "&lt;script&gt;alert(1)&lt;/script&gt;")
	ids, hrefs := svgAttributes(t, []byte(svg))
	assert.Contains(t, ids, "job-node-plain-job", "a job's node can be found by its name")
	assert.Equal(t, []string{"#job-b", "#job-plain-job"}, hrefs, "only a name the engine allows is linked")
}

// svgAttributes reads an SVG as XML and returns its elements' ids and its
// links, as a browser reads them.
func svgAttributes(t *testing.T, svg []byte) (ids, hrefs []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	dec.Strict = false
	for {
		tok, err := dec.Token()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			return ids, hrefs
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		require.NotEqual(t, "script", strings.ToLower(el.Name.Local), "an SVG holds no script")
		for _, a := range el.Attr {
			switch {
			case a.Name.Local == "id":
				ids = append(ids, a.Value)
			case a.Name.Local == "href":
				hrefs = append(hrefs, a.Value)
			case strings.HasPrefix(strings.ToLower(a.Name.Local), "on"):
				t.Errorf("an SVG element carries an event handler: %s=%q", a.Name.Local, a.Value)
			}
		}
	}
}

// svgElements are the only elements an SVG of a run holds.
var svgElements = map[string]bool{"svg": true, "defs": true, "marker": true, "path": true, "a": true, "g": true, "title": true, "rect": true, "text": true}

// FuzzSVG reads what SVG writes as a browser's XML parser would: whatever a
// name holds, the picture is well-formed, holds only its own elements and
// no handler, and the name reads back as its text.
func FuzzSVG(f *testing.F) {
	for _, s := range hostile {
		f.Add(s, "b")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b {
			t.Skip("a graph names each job once")
		}
		out := draw(t, func(w *bytes.Buffer) error { return picture.SVG(w, named(a, b), picture.Options{}) })
		dec := xml.NewDecoder(strings.NewReader(out))
		var texts []string
		inText := false
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, "%s", out)
			switch tok := tok.(type) {
			case xml.StartElement:
				require.True(t, svgElements[tok.Name.Local], "an element of its own: %s", tok.Name.Local)
				for _, attr := range tok.Attr {
					require.False(t, strings.HasPrefix(strings.ToLower(attr.Name.Local), "on"), "a handler: %s", attr.Name.Local)
				}
				if inText = tok.Name.Local == "text"; inText {
					texts = append(texts, "")
				}
			case xml.CharData:
				if inText {
					texts[len(texts)-1] += string(tok)
				}
			case xml.EndElement:
				inText = false
			}
		}
		require.Len(t, texts, 4, "two lines for each job")
		assert.Equal(t, xmlText(a), texts[0])
	})
}

// xmlText is what an SVG's text shows of s: a character XML cannot hold,
// or invalid UTF-8, as the replacement character.
func xmlText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if !(r == 0x09 || r == 0x0a || r == 0x0d || r >= 0x20 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff) {
			r = '\ufffd'
		}
		b.WriteRune(r)
	}
	return b.String()
}
