// Command fanout is custodian-temporal with one more definition, fanout:
// its parameter jobs names how many jobs j1, j2, ... it hands out at
// once, each writing jN.md, which must not be empty; then it is done. The
// server tests drive it and the trial definition with it.
package main

import (
	"errors"
	"os"
	"strconv"

	"github.com/custodian-run/custodian/cmd/custodian-temporal/command"
	"github.com/custodian-run/custodian/cmd/custodian/shell"
	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow"
)

func main() {
	reg, err := workflow.NewRegistry(trial.Definition, definitions.Review, fanout)
	if err != nil {
		panic(err)
	}
	os.Exit(shell.Main(reg, os.Args, os.Stdout, os.Stderr, command.Commands(reg)...))
}

var fanout = &workflow.Definition{
	Name:   "fanout",
	Doc:    "hands out jobs j1, j2, ... at once, each writing jN.md, then is done",
	Params: []workflow.Param{{Name: "jobs", Doc: "how many jobs to hand out", Default: "40"}},
	Run: func(ctx *workflow.Context) error {
		n, err := strconv.Atoi(ctx.Param("jobs"))
		if err != nil || n < 1 {
			return errors.New("jobs is not a number of jobs")
		}
		handles := make([]*workflow.Handle, n)
		for i := range handles {
			name := "j" + strconv.Itoa(i+1)
			handles[i] = ctx.Agent(workflow.Job{Name: name, Prompt: "Write anything to the output file.",
				Output: name + ".md", Validate: notEmpty})
		}
		ctx.Wait(handles...)
		return nil
	},
}

func notEmpty(output string) error {
	info, err := os.Stat(output)
	if err != nil {
		return err
	}
	if info.Size() == 0 {
		return workflow.Refuse("write something: the output is empty")
	}
	return nil
}
