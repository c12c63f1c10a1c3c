package workflow

import (
	"path"
	"strings"
)

// Job is work for a worker: a prompt, the one output it writes, the input
// files its result depends on, and the launch parameters the agent
// orchestrator applies. Code judges the output; the worker's word counts for
// nothing.
type Job struct {
	// Name identifies the job in the run: a plain lower-case identifier,
	// chosen by the definition. "workflow" is reserved.
	Name string
	// Prompt is the task. It is part of the input state: changing it reopens
	// an accepted output.
	Prompt string
	// Output is the file the worker writes, relative to the run directory.
	// Beside it, <stem>.problem.md is where the worker reports a problem.
	// A hand-out makes the directory that holds both inside the run.
	Output string
	// Inputs are the files whose bytes the result depends on, relative to the
	// run directory or absolute. Their order does not matter.
	Inputs []string
	// Launch holds parameters for the agent orchestrator (a model, a tool
	// scope). They must be JSON; they are part of the input state and pass
	// through to the launch line unchanged.
	Launch map[string]any
	// Validate judges the output. Nil accepts any output that exists. It is
	// not part of the input state: it runs whenever the job is judged, so a
	// stricter validator reopens an output it now refuses.
	Validate Validator
	// MaxOutput is the largest output of this job, in bytes, that is read
	// and judged. Zero means the definition's Limits.MaxOutput.
	MaxOutput int64
	// Formerly are names the job had before: the accepted output of a
	// former name carries over to this one, without being made again, when
	// its prompt, launch parameters, inputs and output path are unchanged.
	Formerly []string
}

// Validator judges an output file, given its absolute path. It returns nil to
// accept it, an error made by Refuse to refuse it with messages for the next
// attempt, or any other error when it could not judge, which refuses the
// output too, as a failure of the validator.
type Validator func(output string) error

// Refusal is a validator's verdict against an output.
type Refusal struct {
	Messages []string // what the next attempt must fix, one point each
}

func (r *Refusal) Error() string { return strings.Join(r.Messages, "; ") }

// Refuse returns a validator's refusal with one message per point to fix.
func Refuse(messages ...string) error {
	if len(messages) == 0 {
		messages = []string{"the output was refused"}
	}
	return &Refusal{Messages: messages}
}

// ProblemPath returns where the worker of a job with this output reports a
// problem: the output's last extension replaced by .problem.md.
func ProblemPath(output string) string {
	ext := path.Ext(output)
	return strings.TrimSuffix(output, ext) + ".problem.md"
}
