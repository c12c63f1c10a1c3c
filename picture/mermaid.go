package picture

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/workflow/engine"
)

// Mermaid writes g as a Mermaid flowchart, left to right, one node per job
// and effect (or group of alike jobs), coloured by where it stands. Each
// label is a quoted string in which every character but letters, digits
// and a few plain marks is written as an entity (#60; for <), so that no
// text of the run can end the string or reach Mermaid's syntax.
func Mermaid(w io.Writer, g engine.Graph, opt Options) error {
	d := draw(g, opt)
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	var states []string
	for _, n := range d.nodes {
		lines := make([]string, len(n.lines))
		for i, l := range n.lines {
			lines[i] = mermaidText(l)
		}
		fmt.Fprintf(&b, "  %s[\"%s\"]:::%s\n", n.id, strings.Join(lines, "<br/>"), className(n.state))
		if !slices.Contains(states, n.state) {
			states = append(states, n.state)
		}
	}
	for _, e := range d.edges {
		fmt.Fprintf(&b, "  %s --> %s\n", e.from, e.to)
	}
	slices.SortFunc(states, func(a, b string) int { return strings.Compare(className(a), className(b)) })
	for _, s := range states {
		fill, line := colour(s)
		fmt.Fprintf(&b, "  classDef %s fill:%s,stroke:%s,color:#111827\n", className(s), fill, line)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// className is a state as a Mermaid class name: letters and hyphens only.
func className(state string) string {
	if state == "" || strings.Trim(state, "abcdefghijklmnopqrstuvwxyz") != "" {
		return "other"
	}
	return state
}

// mermaidText writes s for a quoted Mermaid label: plain characters as
// they are, a control character as a space, and anything else as an
// entity code.
func mermaidText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', strings.ContainsRune(" .,:-_/+*()", r):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "#%d;", r)
		}
	}
	return b.String()
}
