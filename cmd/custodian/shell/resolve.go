package shell

import (
	"fmt"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

// answers are the words the operator resolves an effect with, and what each
// says took place. Unknown is what step reports, not an answer.
var answers = map[string]workflow.Recognition{
	"completed": workflow.Completed,
	"absent":    workflow.Absent,
}

func resolveCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "resolve",
		Usage:     "the operator's: record whether an effect whose fate code cannot settle took place",
		ArgsUsage: "RUN EFFECT completed|absent",
		Description: "EFFECT is an effect that step reports as uncertain, or blocks on. completed lets it stand\n" +
			"with its inputs as they are now; absent withdraws it, so that it runs again at the next step that\n" +
			"reaches it: remove any part of it that took place first. Only the operator resolves, once they have\n" +
			"established what took place. Prints nothing.",
		Action: withRun(reg, []string{"EFFECT", "completed|absent"}, func(c *cli.Context, args []string) (func(*engine.Run) error, error) {
			what, ok := answers[args[1]]
			if !ok {
				return nil, &engine.UsageError{
					Message: subject(c) + fmt.Sprintf("%q is not an answer; resolve with completed or absent", args[1]),
					Hint: "the operator establishes whether the effect took place (completed) or not (absent), " +
						"and resolves with that word; until then, leave the run as it is",
				}
			}
			return func(o *engine.Run) error { return o.Resolve(args[0], what) }, nil
		}),
	}
}
