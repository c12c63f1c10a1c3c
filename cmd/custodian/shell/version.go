package shell

import (
	"fmt"
	"runtime"

	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

// versionInfo is what `custodian version --json` prints.
type versionInfo struct {
	Version string       `json:"version"`
	Build   engine.Build `json:"build"`
	// Text names the build as status and the stops of a changed definition
	// name it.
	Text string `json:"text"`
	Go   string `json:"go"`
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "say which build of custodian this binary is, as runs record it",
		Description: "A run records the build that started it and the build that last stepped it. A change of an\n" +
			"accepted job's task by that same build is data the definition reads; by another build it waits\n" +
			"for the operator. The build is Go's build ID of the binary (go tool buildid), which any change\n" +
			"of its code changes; a binary without one is of an unknown build and matches none.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the version as one JSON object"},
		},
		Action: withArgs(nil, func(c *cli.Context, _ []string) error {
			b := engine.ThisBuild()
			v := versionInfo{Version: engine.Version, Build: b, Text: engine.BuildText(b),
				Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
			if c.Bool("json") {
				return printJSON(c, v)
			}
			id := b.ID
			if id == "" {
				id = "none"
			}
			_, err := fmt.Fprintf(c.App.Writer, "custodian version %s\nbuild: %s\nbuild id: %s\ngo: %s\n", v.Version, v.Text, id, v.Go)
			return err
		}),
	}
}
