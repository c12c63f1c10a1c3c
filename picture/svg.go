package picture

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/custodian-run/custodian/internal/names"
	"github.com/custodian-run/custodian/workflow/engine"
)

// SVG lays g out (layout: layered, left to right, as Graphviz's dot draws)
// and writes it as SVG: one box per job and effect, or group of alike
// jobs, filled by where it stands, each job's box linked to #job-NAME and
// marked with the id job-node-NAME. Every text of the run is XML text,
// escaped; the picture holds no script and no style sheet.
func SVG(w io.Writer, g engine.Graph, opt Options) error {
	d := draw(g, opt)
	p := layout(d)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="Helvetica,Arial,sans-serif" font-size="%s">`+"\n",
		num(p.width), num(p.height), num(p.width), num(p.height), num(fontSize))
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#6b7280"/></marker></defs>` + "\n")
	for i, e := range d.edges {
		fmt.Fprintf(&b, `<path class="edge" data-from="%s" data-to="%s" d="%s" fill="none" stroke="#6b7280" marker-end="url(#arrow)"/>`+"\n",
			e.from, e.to, curve(p.routes[i]))
	}
	for i, n := range d.nodes {
		c, s := p.centres[i], p.sizes[i]
		fill, line := colour(n.state)
		job, isJob := n.subject.Job()
		linked := isJob && n.members == nil && names.Valid(job)
		if linked {
			// Only a name the engine allows, which needs no escaping.
			fmt.Fprintf(&b, `<a href="#job-%s" id="job-node-%s" class="%s">`, job, job, className(n.state))
		}
		fmt.Fprintf(&b, `<g class="node" id="%s"><title>`, n.id)
		text(&b, strings.Join(n.lines, ": "))
		fmt.Fprintf(&b, `</title><rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s"/>`,
			num(c.x-s.x/2), num(c.y-s.y/2), num(s.x), num(s.y), fill, line)
		top := c.y - float64(len(n.lines)-1)*lineStep/2
		for k, l := range n.lines {
			fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" dominant-baseline="central" fill="#111827">`, num(c.x), num(top+float64(k)*lineStep))
			text(&b, l)
			b.WriteString(`</text>`)
		}
		b.WriteString(`</g>`)
		if linked {
			b.WriteString(`</a>`)
		}
		b.WriteString("\n")
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// curve is a route as an SVG path: through each of its points, leaving and
// reaching each one level, as the layers run.
func curve(route []point) string {
	var b strings.Builder
	fmt.Fprintf(&b, "M%s,%s", num(route[0].x), num(route[0].y))
	for k := 1; k < len(route); k++ {
		a, z := route[k-1], route[k]
		mid := (a.x + z.x) / 2
		fmt.Fprintf(&b, "C%s,%s %s,%s %s,%s", num(mid), num(a.y), num(mid), num(z.y), num(z.x), num(z.y))
	}
	return b.String()
}

// text writes s as XML character data: markup escaped, and a character XML
// cannot hold replaced.
func text(b *bytes.Buffer, s string) {
	_ = xml.EscapeText(b, []byte(s)) // a bytes.Buffer does not fail
}

// num writes a measure to a tenth of a unit, as short as it goes.
func num(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}
