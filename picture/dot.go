package picture

import (
	"fmt"
	"io"
	"strings"

	"github.com/custodian-run/custodian/internal/names"
	"github.com/custodian-run/custodian/workflow/engine"
)

// DOT writes g as a Graphviz digraph, left to right, one box per job and
// effect (or group of alike jobs), filled by where it stands. Identifiers
// are the drawing's own (n1, n2, ...); every text of the run is a quoted
// label in which a quote and a backslash are escaped, so that it can
// neither end the string nor become one of Graphviz's label escapes.
func DOT(w io.Writer, g engine.Graph, opt Options) error {
	_, err := io.WriteString(w, dotText(draw(g, opt), false))
	return err
}

// dotText is the drawing d in DOT; with links, each job's node links to
// its part of the run's page and carries an id a page can find it by.
func dotText(d drawing, links bool) string {
	var b strings.Builder
	b.WriteString("digraph run {\n  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11];\n  edge [color=\"#6b7280\"];\n")
	for _, n := range d.nodes {
		fill, line := colour(n.state)
		lines := make([]string, len(n.lines))
		for i, l := range n.lines {
			lines[i] = dotString(l)
		}
		fmt.Fprintf(&b, "  %s [label=\"%s\", fillcolor=\"%s\", color=\"%s\"", n.id, strings.Join(lines, `\n`), fill, line)
		if job, ok := n.subject.Job(); ok && links && names.Valid(job) {
			// A link to the job's part of its page, where there is one:
			// only a name the engine allows, which needs no escaping.
			fmt.Fprintf(&b, ", URL=\"#job-%s\", id=\"job-node-%s\", class=\"%s\"", job, job, className(n.state))
		}
		b.WriteString("];\n")
	}
	for _, e := range d.edges {
		fmt.Fprintf(&b, "  %s -> %s;\n", e.from, e.to)
	}
	b.WriteString("}\n")
	return b.String()
}

// dotString writes s for a quoted DOT label: a backslash and a quote
// escaped, an ampersand as the entity Graphviz reads back as one (it reads
// &lt; as <), and a control character as a space.
func dotString(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
