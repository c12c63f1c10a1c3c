package workflow_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// exampleRun starts a run of def in a fresh directory holding files, and
// returns the run and a function that removes it.
func exampleRun(def *workflow.Definition, files map[string]string) (*engine.Run, func()) {
	dir, err := os.MkdirTemp("", "custodian-example-")
	if err != nil {
		log.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	reg, err := workflow.NewRegistry(def)
	if err != nil {
		log.Fatal(err)
	}
	o, err := engine.Start(reg, def.Name, dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	return o, func() { os.RemoveAll(dir) }
}

// step runs one step and prints its outcome in a line: the outcome word and
// the jobs it hands out, or the subjects it blocks on.
func step(o *engine.Run) engine.Outcome {
	out, err := o.Step()
	if err != nil {
		log.Fatal(err)
	}
	line := []string{string(out.Kind)}
	for _, h := range out.Jobs {
		line = append(line, h.Name)
	}
	for _, b := range out.Blocks {
		line = append(line, fmt.Sprintf("%s (%s)", b.Subject, b.Kind))
	}
	fmt.Println(strings.Join(line, " "))
	return out
}

// work plays the workers of a launch: each writes text to its output.
func work(out engine.Outcome, text string) {
	for _, h := range out.Jobs {
		if err := os.WriteFile(h.Output, []byte(text), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// A job is named with Agent, and Wait ends the path until it is accepted:
// the first step hands out the lens, the second the summary that reads it.
func ExampleContext_Agent() {
	review := &workflow.Definition{Name: "review", Run: func(ctx *workflow.Context) error {
		lens := ctx.Agent(workflow.Job{Name: "lens", Prompt: "Review the paper.",
			Output: "lens.md", Inputs: []string{"paper.md"}})
		ctx.Wait(lens)
		ctx.Agent(workflow.Job{Name: "summary", Prompt: "Summarize the review.",
			Output: "summary.md", Inputs: []string{"lens.md"}}).Wait()
		return nil
	}}
	o, remove := exampleRun(review, map[string]string{"paper.md": "A paper.\n"})
	defer remove()

	work(step(o), "# Review\n\nGood.\n")
	work(step(o), "# Summary\n\nGood.\n")
	step(o)
	// Output:
	// launch lens
	// launch summary
	// done
}

// Paths given to Gather run one after another, each to its first wait that
// does not pass, so both lenses are handed out in the first step; the
// reconciliation that reads their outputs waits for both.
func ExampleGather() {
	review := &workflow.Definition{Name: "review", Run: func(ctx *workflow.Context) error {
		lens := func(name string) func() string {
			return func() string {
				return ctx.Agent(workflow.Job{Name: name, Prompt: "Review the paper as " + name + ".",
					Output: name + ".md", Inputs: []string{"paper.md"}}).Wait()
			}
		}
		outputs := workflow.Gather(ctx, lens("methods"), lens("claims"))
		ctx.Agent(workflow.Job{Name: "reconcile", Prompt: "Reconcile the reviews.",
			Output: "review.md", Inputs: outputs}).Wait()
		return nil
	}}
	o, remove := exampleRun(review, map[string]string{"paper.md": "A paper.\n"})
	defer remove()

	work(step(o), "# Lens\n")
	work(step(o), "# Review\n")
	step(o)
	// Output:
	// launch claims methods
	// launch reconcile
	// done
}

// An effect runs once in the run. When it did not finish (here its do
// wrote the copy and then failed, as a lost connection would make it), the
// next step asks its recognizer what took place: the published copy is
// there, so the effect completed and is not run again.
func ExampleContext_Effect() {
	target, err := os.MkdirTemp("", "custodian-published-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(target)
	published := filepath.Join(target, "notes.md")
	runs := 0
	notes := &workflow.Definition{Name: "notes", Run: func(ctx *workflow.Context) error {
		ctx.Effect("publish", func() error {
			runs++
			data, err := os.ReadFile(ctx.Path("notes.md"))
			if err != nil {
				return err
			}
			if err := os.WriteFile(published, data, 0o644); err != nil {
				return err
			}
			return errors.New("the connection was reset before the server answered")
		},
			workflow.EffectInputs("notes.md"),
			workflow.Recognize(func() (workflow.Recognition, error) {
				switch _, err := os.Stat(published); {
				case err == nil:
					return workflow.Completed, nil
				case errors.Is(err, fs.ErrNotExist):
					return workflow.Absent, nil
				default:
					return workflow.Unknown, err
				}
			}))
		return nil
	}}
	o, remove := exampleRun(notes, map[string]string{"notes.md": "# Notes\n"})
	defer remove()

	step(o)
	step(o)
	fmt.Println("publish ran", runs, "time")
	// Output:
	// blocked workflow (workflow-error)
	// done
	// publish ran 1 time
}

// A validator refuses an output with Refuse, one message per point to fix;
// the job is handed out again with the messages in its prompt, and blocks
// when its retries are used up.
func ExampleRefuse() {
	hasHeading := func(output string) error {
		data, err := os.ReadFile(output)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(data), "# ") {
			return workflow.Refuse("start with a level-one heading")
		}
		return nil
	}
	summary := &workflow.Definition{Name: "summary", Run: func(ctx *workflow.Context) error {
		ctx.Agent(workflow.Job{Name: "summary", Prompt: "Summarize the notes.",
			Output: "summary.md", Inputs: []string{"notes.md"}, Validate: hasHeading}).Wait()
		return nil
	}}
	o, remove := exampleRun(summary, map[string]string{"notes.md": "Some notes.\n"})
	defer remove()

	work(step(o), "no heading\n")
	retry := step(o)
	prompt, err := os.ReadFile(retry.Jobs[0].Prompt)
	if err != nil {
		log.Fatal(err)
	}
	p, err := engine.ParsePrompt(prompt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the retry's prompt says:", p.Refusals[0])
	work(retry, "still no heading\n")
	step(o)
	// Output:
	// launch summary
	// launch summary
	// the retry's prompt says: start with a level-one heading
	// blocked summary (validator-refused)
}
