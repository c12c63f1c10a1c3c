package shell_test

import (
	"fmt"
	"os"

	"github.com/custodian-run/custodian/cmd/custodian/shell"
	"github.com/custodian-run/custodian/workflow"
)

// Summary is an author's own definition.
var Summary = &workflow.Definition{
	Name: "summary",
	Doc:  "summarizes notes.md",
	Run: func(ctx *workflow.Context) error {
		ctx.Agent(workflow.Job{Name: "summary", Prompt: "Summarize the notes.",
			Output: "summary.md", Inputs: []string{"notes.md"}}).Wait()
		return nil
	},
}

// An author's binary registers its own definitions and runs the same
// command line as the custodian binary. Its main is these lines, with
// os.Args for the arguments and os.Exit(code) at the end; here it runs
// `custodian definitions`.
func Example() {
	reg, err := workflow.NewRegistry(Summary)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := shell.Main(reg, []string{"custodian", "definitions"}, os.Stdout, os.Stderr)
	fmt.Println("exit status", code)
	// Output:
	// summary  summarizes notes.md
	// exit status 0
}
