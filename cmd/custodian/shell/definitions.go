package shell

import (
	"fmt"
	"strings"

	"github.com/custodian-run/custodian/workflow"
	"github.com/urfave/cli/v2"
)

func definitionsCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:  "definitions",
		Usage: "list the definitions this binary carries, with their parameters and patches",
		Action: withArgs(nil, func(c *cli.Context, _ []string) error {
			defs := reg.Definitions()
			width := 0
			for _, d := range defs {
				width = max(width, len(d.Name))
			}
			var b strings.Builder
			for _, d := range defs {
				doc, _, _ := strings.Cut(d.Doc, "\n")
				b.WriteString(strings.TrimRight(fmt.Sprintf("%-*s  %s", width, d.Name, doc), " ") + "\n")
				for _, p := range d.Params {
					fmt.Fprintf(&b, "  --param %s: %s\n", p.Name, paramNote(p))
				}
				if len(d.Patches) > 0 {
					fmt.Fprintf(&b, "  patches: %s\n", strings.Join(d.Patches, ", "))
				}
			}
			_, err := fmt.Fprint(c.App.Writer, b.String())
			return err
		}),
	}
}

// paramNote says what a parameter is, and whether it is required or what
// its default is.
func paramNote(p workflow.Param) string {
	note := p.Doc
	switch {
	case p.Required:
		note += " (required)"
	case p.Default != "":
		note += " (default " + p.Default + ")"
	}
	return strings.TrimSpace(note)
}
