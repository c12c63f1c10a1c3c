package shell

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/custodian-run/custodian/workflow"
	"github.com/urfave/cli/v2"
)

func definitionsCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:  "definitions",
		Usage: "list the definitions this binary carries",
		Action: withArgs(nil, func(c *cli.Context, _ []string) error {
			w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
			for _, d := range reg.Definitions() {
				doc, _, _ := strings.Cut(d.Doc, "\n")
				fmt.Fprintf(w, "%s\t%s\n", d.Name, doc)
			}
			return w.Flush()
		}),
	}
}
