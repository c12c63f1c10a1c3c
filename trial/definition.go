package trial

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/custodian-run/custodian/workflow"
)

// DefinitionName is the name the trial definition is registered under.
const DefinitionName = "trial"

// Scenarios of the trial definition, each a course of the loop that a real
// harness (and the end-to-end tests) must get through.
var Scenarios = []string{"clean", "retry", "problem", "stop", "stop-only", "parameters", "uncertain", "busy"}

// DefaultHold is how many seconds the busy scenario's step holds the run's
// lock when the run's parameter hold does not say.
const DefaultHold = 90

// The marker files beside a run directory that steer the trial definition.
// They lie outside the run, where no job owns a path: the scenario's setup
// places them, and the definition removes each when it acts on it.

// InterruptMarker is <run>.interrupt: while it exists, the uncertain
// scenario's publish effect ends the process halfway.
func InterruptMarker(runDir string) string { return runDir + ".interrupt" }

// HoldMarker is <run>.hold: while it exists, the busy scenario's step holds
// the run's lock.
func HoldMarker(runDir string) string { return runDir + ".hold" }

// HoldLog is <run>.hold.log, where setup sends the output of the busy
// scenario's holding step.
func HoldLog(runDir string) string { return runDir + ".hold.log" }

// Definition is the trial definition: it tries the loop instruction in real
// harnesses and tests the whole path end to end. Its parameter scenario picks
// a course; see docs/trial.md.
var Definition = &workflow.Definition{
	Name: DefinitionName,
	Doc: "tries the agent orchestrator's loop: two lenses on a text, reconciled (scenarios: " +
		strings.Join(Scenarios, ", ") + ")",
	Params: []workflow.Param{
		{Name: "scenario", Doc: "the course the run takes: " + strings.Join(Scenarios, ", "), Default: "clean", Validate: isScenario},
		{Name: "launch", Doc: "the claims job's launch parameters, a JSON object (scenario parameters)", Default: "{}", Validate: isJSONObject},
		{Name: "hold", Doc: "how many seconds the step holds the lock (scenario busy)", Default: strconv.Itoa(DefaultHold), Validate: isSeconds},
	},
	Limits: func(p workflow.Params) workflow.Limits {
		if p["scenario"] == "stop-only" {
			return workflow.Limits{Retries: 1, Repairs: 0}
		}
		return workflow.DefaultLimits
	},
	Run: runTrial,
}

func isScenario(s string) error {
	if !slices.Contains(Scenarios, s) {
		return fmt.Errorf("the scenarios are %s", strings.Join(Scenarios, ", "))
	}
	return nil
}

func isJSONObject(s string) error {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return errors.New(`give a JSON object, such as {"model":"small"}`)
	}
	return nil
}

func isSeconds(s string) error {
	if n, err := strconv.Atoi(s); err != nil || n < 0 {
		return errors.New("give a whole number of seconds")
	}
	return nil
}

const lensPrompt = "Read the text in the input file. %s Write a level-one heading, then one bullet per item."

func runTrial(ctx *workflow.Context) error {
	scenario := ctx.Param("scenario")
	if scenario == "busy" {
		if err := holdIfMarked(ctx); err != nil {
			return err
		}
	}

	var launch map[string]any
	if scenario == "parameters" {
		if err := json.Unmarshal([]byte(ctx.Param("launch")), &launch); err != nil {
			return fmt.Errorf("parameter launch is not a JSON object: %w", err)
		}
	}
	assumptionsValid := hasHeadingAndBody
	if scenario == "stop" || scenario == "stop-only" {
		assumptionsValid = refuseEverything
	}
	claims := ctx.Agent(workflow.Job{
		Name: "claims", Prompt: fmt.Sprintf(lensPrompt, "List the claims it makes."),
		Output: "claims.md", Inputs: []string{"source.md"}, Launch: launch, Validate: hasHeadingAndBody,
	})
	assumptions := ctx.Agent(workflow.Job{
		Name: "assumptions", Prompt: fmt.Sprintf(lensPrompt, "List the assumptions it rests on without stating them."),
		Output: "assumptions.md", Inputs: []string{"source.md"}, Validate: assumptionsValid,
	})
	ctx.Wait(claims, assumptions)

	inputs := []string{"claims.md", "assumptions.md"}
	if scenario == "problem" {
		ctx.Agent(workflow.Job{
			Name: "notes",
			Prompt: "Summarize the notes in the input file under a level-one heading, one bullet per note. " +
				"If you cannot read the input file, do not guess: report the problem instead.",
			Output: "notes-summary.md", Inputs: []string{"notes.md"}, Validate: hasHeadingAndBody,
		}).Wait()
		inputs = append(inputs, "notes-summary.md")
	}

	reconcileValid := hasHeadingAndBody
	if scenario == "retry" {
		reconcileValid = all(hasHeadingAndBody, endsChecked)
	}
	ctx.Agent(workflow.Job{
		Name: "reconcile",
		Prompt: "Reconcile the lenses in the input files: under a level-one heading, say where the claims " +
			"depend on the assumptions, one bullet each.",
		Output: "reconciled.md", Inputs: inputs, Validate: reconcileValid,
	}).Wait()

	if scenario == "uncertain" {
		published := ctx.RunDir() + ".published"
		ctx.Effect("publish", func() error { return publish(ctx, published) },
			workflow.EffectInputs("reconciled.md"),
			workflow.Recognize(func() (workflow.Recognition, error) { return recognizePublished(published) }))
	}
	return nil
}

// PublishInterruptedStatus is the exit status of a process that the
// uncertain scenario ends while publishing.
const PublishInterruptedStatus = 9

// publish copies reconciled.md to <run>.published/ and then writes an index
// there. When the marker <run>.interrupt exists it removes the marker and
// ends the process between the two writes, as a crash would, so that the
// next step finds the effect started and half done.
func publish(ctx *workflow.Context, published string) error {
	data, err := os.ReadFile(ctx.Path("reconciled.md"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(published, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(published, "reconciled.md"), data, 0o644); err != nil {
		return err
	}
	marker := InterruptMarker(ctx.RunDir())
	if _, err := os.Stat(marker); err == nil {
		if err := os.Remove(marker); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "the process ended while publishing")
		os.Exit(PublishInterruptedStatus)
	}
	return os.WriteFile(filepath.Join(published, "index.md"), []byte("# Published\n\n- reconciled.md\n"), 0o644)
}

// recognizePublished establishes what a publish that was cut short did:
// both files mean it completed, neither that it never began, one alone that
// nobody can tell.
func recognizePublished(published string) (workflow.Recognition, error) {
	_, errDoc := os.Stat(filepath.Join(published, "reconciled.md"))
	_, errIndex := os.Stat(filepath.Join(published, "index.md"))
	switch {
	case errDoc == nil && errIndex == nil:
		return workflow.Completed, nil
	case errors.Is(errDoc, fs.ErrNotExist) && errors.Is(errIndex, fs.ErrNotExist):
		return workflow.Absent, nil
	default:
		return workflow.Unknownf("only one of reconciled.md and index.md is in %s", published), nil
	}
}

// holdIfMarked sleeps while holding the run's lock when the marker
// <run>.hold exists, so that the busy scenario can show a second process
// being refused. The marker is removed first, so the hold happens once.
func holdIfMarked(ctx *workflow.Context) error {
	marker := HoldMarker(ctx.RunDir())
	if _, err := os.Stat(marker); err != nil {
		return nil
	}
	hold := ctx.Param("hold")
	seconds, err := strconv.Atoi(hold)
	if err != nil || seconds < 0 {
		return fmt.Errorf("parameter hold is not a whole number of seconds: %q", hold)
	}
	if err := os.Remove(marker); err != nil {
		return err
	}
	time.Sleep(time.Duration(seconds) * time.Second)
	return nil
}

func hasHeadingAndBody(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var problems []string
	if !strings.HasPrefix(lines[0], "# ") {
		problems = append(problems, "start with a level-one heading (a first line that begins with '# ')")
	}
	if len(lines) < 3 {
		problems = append(problems, "write at least three lines: the heading and a body under it")
	}
	if len(problems) > 0 {
		return workflow.Refuse(problems...)
	}
	return nil
}

func endsChecked(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if strings.TrimSpace(lines[len(lines)-1]) != "Checked: yes" {
		return workflow.Refuse("end with the line 'Checked: yes' once every bullet names the assumption it depends on")
	}
	return nil
}

func refuseEverything(string) error {
	return workflow.Refuse("the output must be empty and must also start with a level-one heading")
}

func all(validators ...workflow.Validator) workflow.Validator {
	return func(path string) error {
		var messages []string
		for _, v := range validators {
			var refusal *workflow.Refusal
			err := v(path)
			switch {
			case errors.As(err, &refusal):
				messages = append(messages, refusal.Messages...)
			case err != nil:
				return err
			}
		}
		if len(messages) > 0 {
			return workflow.Refuse(messages...)
		}
		return nil
	}
}
