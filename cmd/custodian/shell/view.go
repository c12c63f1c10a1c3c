package shell

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/custodian-run/custodian/page"
	"github.com/custodian-run/custodian/picture"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func viewCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "view",
		Usage:     "write the run's page: one self-contained HTML file with its graph, timeline and every job's attempts; read-only",
		ArgsUsage: "RUN -o FILE [--all]",
		Description: "The page needs no network and no other file: its style is inline and its graph is SVG, laid out in\n" +
			"layers as Graphviz's dot lays graphs out. It links to the run's prompt files, kept files and launch\n" +
			"evidence by paths relative to FILE. Everything from the run is written as text. -o - writes the page to stdout, with links\n" +
			"relative to the working directory. View takes no lock and writes nothing in the run.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the page's file, `FILE`; - for stdout"},
			&cli.BoolFlag{Name: "all", Usage: "draw every job as a node of its own"},
		},
		Action: withRun(reg, nil, func(c *cli.Context, _ []string) (func(*engine.Run) error, error) {
			out := c.String("output")
			if out == "" {
				return nil, &engine.UsageError{Message: "view: name the page's file with -o FILE", Hint: "custodian view RUN -o run.html"}
			}
			base, err := os.Getwd()
			if err != nil {
				return nil, err
			}
			if out != "-" {
				abs, err := filepath.Abs(out)
				if err != nil {
					return nil, err
				}
				out, base = abs, filepath.Dir(abs)
			}
			return func(o *engine.Run) error {
				r, err := runPage(o, picture.Options{All: c.Bool("all")})
				if err != nil {
					return err
				}
				r.Link = relativeLink(base)
				var b bytes.Buffer
				if err := page.WriteRun(&b, r); err != nil {
					return err
				}
				if out == "-" {
					_, err := c.App.Writer.Write(b.Bytes())
					return err
				}
				if err := renameio.WriteFile(out, b.Bytes(), 0o644); err != nil {
					return fmt.Errorf("write the page: %w", err)
				}
				_, err = fmt.Fprintln(c.App.Writer, out)
				return err
			}, nil
		}),
	}
}

// runPage reads what the run's page shows, and lays out its graph.
func runPage(o *engine.Run, opt picture.Options) (page.Run, error) {
	ov, err := o.Overview()
	if err != nil {
		return page.Run{}, err
	}
	var svg bytes.Buffer
	if err := picture.SVG(&svg, ov.Graph, opt); err != nil {
		return page.Run{}, err
	}
	return page.Run{Status: ov.Status, Graph: ov.Graph, Stories: ov.Stories, SVG: svg.Bytes(), Made: time.Now()}, nil
}

// relativeLink makes links to a run's files relative to the directory
// base, each name escaped for a URL: a page and the run it shows can move
// together.
func relativeLink(base string) func(abs string) string {
	return func(abs string) string {
		if abs == "" {
			return ""
		}
		rel, err := filepath.Rel(base, abs)
		if err != nil {
			return ""
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		for i, p := range parts {
			parts[i] = url.PathEscape(p)
		}
		if parts[0] != ".." {
			// A first name such as a:b would read as a URL's scheme.
			parts = append([]string{"."}, parts...)
		}
		return strings.Join(parts, "/")
	}
}
