package shell

import (
	"fmt"

	"github.com/custodian-run/custodian/picture"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

// graphFormats are the formats graph writes, by name.
var graphFormats = map[string]func(c *cli.Context, g engine.Graph, opt picture.Options) error{
	"mermaid": func(c *cli.Context, g engine.Graph, opt picture.Options) error {
		return picture.Mermaid(c.App.Writer, g, opt)
	},
	"dot": func(c *cli.Context, g engine.Graph, opt picture.Options) error {
		return picture.DOT(c.App.Writer, g, opt)
	},
}

func graphCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "graph",
		Usage:     "draw the run's jobs and effects, and which feeds which, as Mermaid or DOT; read-only",
		ArgsUsage: "RUN [--format mermaid|dot] [--all]",
		Description: "Graph draws the run as its records give it: the jobs the last step named and the effects the run\n" +
			"journaled or owes, each with where it stands and its attempts, and an edge from each job to every job\n" +
			"or effect that declared its output as an input. Mermaid renders in GitHub Markdown; DOT is Graphviz's.\n" +
			fmt.Sprintf("A fan-out of more than %d alike jobs is one node with their count, unless --all. ", picture.Wide) +
			"It takes no lock and writes nothing.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Usage: "the picture's format, `mermaid` or dot", Value: "mermaid"},
			&cli.BoolFlag{Name: "all", Usage: "draw every job as a node of its own"},
		},
		Action: withRun(reg, nil, func(c *cli.Context, _ []string) (func(*engine.Run) error, error) {
			write, ok := graphFormats[c.String("format")]
			if !ok {
				return nil, &engine.UsageError{Message: fmt.Sprintf("graph: %q is not a format", c.String("format")), Hint: "give --format mermaid or --format dot"}
			}
			return func(o *engine.Run) error {
				g, err := o.Graph()
				if err != nil {
					return err
				}
				return write(c, g, picture.Options{All: c.Bool("all")})
			}, nil
		}),
	}
}
