// Command variant is an author's custodian binary, shipped in several
// versions the way a team ships a new binary: one definition, notes, whose
// code depends on the string variant, set when the binary is built:
//
//	go build -ldflags "-X main.variant=prompt" -o custodian-prompt ./cmd/custodian/testdata/variant
//
// The process tests of cmd/custodian (redefine_test.go) and the transcripts
// under testdata/e2e (custodian@VARIANT) build one binary per variant and
// step and check one run with several of them. The variants:
//
//	base       summary (reads notes.md, writes summary.md), then risks (reads summary.md, writes risks.md)
//	prompt     summary's prompt reworded
//	launch     risks launched with {"model":"large"}
//	rename     risks renamed risk-list, without Formerly
//	formerly   risks renamed risk-list, Formerly: risks
//	removed    risks no longer named
//	patched    declares the patch asks-for-owners: a run started with it asks summary for owners too
//	unpatched  the patch removed again, with its old branch: summary always asks for owners
//	clock      summary's prompt reads the clock: a non-deterministic definition
//	fanout     the base notes, and a second definition, fanout: its parameter jobs
//	           (default 200) names how many jobs j1, j2, ... it hands out at once,
//	           each writing jN.md, which must not be empty; then it is done
//	           (the process tests of custodian drive, drive_test.go); and a
//	           third, pipelines: for each of its parameter items (default
//	           16) an audit-NN job, then a follow-NN job that reads its
//	           output, and a join that reads every follow-up (drive's
//	           benchmark, bench_drive_test.go); its parameter model, when
//	           given, is each follow-up's launch parameter model; and a
//	           fourth, sideeffect: jobs slow and quick at once, then, after
//	           quick, an effect that ends the step's process with status 9,
//	           as a crash inside an effect would (flow_test.go)
//
// Every variant also carries the audit definition: one job audit-PACKAGE
// per line "PACKAGE FROM TO" of the run's manifest.txt, read through
// ctx.Path, whose prompt names the package and its versions, as the guide's
// data-in-prompt example does; the prompt variant words its prompts
// differently ("Audit carefully" for "Audit"). And every variant carries
// the approval definition: a draft job, then a question to the operator
// (ctx.Decide) whether to publish it; publish writes published.md in an
// effect, hold stops the run.
//
// Besides the command line, the binary carries two commands of its own for
// courses that must act without a shell; the custodian binary has neither:
//
//	worker PROMPT...   do what a worker does with each prompt file: write a valid output where it says
//	write FILE TEXT    write TEXT to FILE, making its directory, as a person editing a file would
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/custodian-run/custodian/cmd/custodian/shell"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// variant is the version of the notes definition this binary carries; the
// build sets it with -ldflags "-X main.variant=NAME".
var variant string

// variants are the versions a build may name. A binary built with another
// name (or none) refuses to run, so that a misspelt build fails at once
// instead of passing for the base.
var variants = []string{"base", "prompt", "launch", "rename", "formerly", "removed", "patched", "unpatched", "clock", "fanout"}

// The prompts and paths of the notes definition.
const (
	summaryPrompt  = "Summarize the notes in notes.md under a level-one heading."
	rewordedPrompt = "Summarize the notes in notes.md under a level-one heading, one bullet per note."
	ownersPrompt   = "Summarize the notes in notes.md under a level-one heading, and name the owner of each note."
	risksPrompt    = "List the risks in summary.md under a level-one heading, one bullet per risk."

	// ownersPatch is the patch of the patched variant: a run started
	// with it asks summary for owners too, a run started before it does not.
	ownersPatch = "asks-for-owners"
)

func main() {
	if !slices.Contains(variants, variant) {
		fmt.Fprintf(os.Stderr, "variant: built with variant %q; build with -ldflags \"-X main.variant=NAME\", NAME one of %s\n",
			variant, strings.Join(variants, ", "))
		os.Exit(2)
	}
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "worker":
			os.Exit(tool(worker, os.Args[2:]))
		case "write":
			os.Exit(tool(write, os.Args[2:]))
		}
	}
	defs := []*workflow.Definition{notes(), audit(), approval()}
	if variant == "fanout" {
		defs = append(defs, fanout(), pipelines(), sideEffect())
	}
	reg, err := workflow.NewRegistry(defs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(shell.Main(reg, os.Args, os.Stdout, os.Stderr))
}

// notes is this variant's notes definition.
func notes() *workflow.Definition {
	d := &workflow.Definition{
		Name: "notes",
		Doc:  "summarizes notes.md, then lists the risks the summary names",
		Run:  run,
	}
	if variant == "patched" {
		d.Patches = []string{ownersPatch}
	}
	return d
}

func run(ctx *workflow.Context) error {
	prompt := summaryPrompt
	switch variant {
	case "prompt":
		prompt = rewordedPrompt
	case "patched":
		// Runs started before the patch keep the prompt they were handed.
		if ctx.Patched(ownersPatch) {
			prompt = ownersPrompt
		}
	case "unpatched":
		// The patch and its old branch removed, as if every run without
		// it were done.
		prompt = ownersPrompt
	case "clock":
		// A definition must not read the clock: every replay gives
		// summary another prompt.
		prompt = fmt.Sprintf("%s Asked at %d.", summaryPrompt, time.Now().UnixNano())
	}
	ctx.Agent(workflow.Job{Name: "summary", Prompt: prompt, Output: "summary.md",
		Inputs: []string{"notes.md"}, Validate: hasHeading}).Wait()

	risks := workflow.Job{Name: "risks", Prompt: risksPrompt, Output: "risks.md",
		Inputs: []string{"summary.md"}, Validate: hasHeading}
	switch variant {
	case "launch":
		risks.Launch = map[string]any{"model": "large"}
	case "rename":
		risks.Name = "risk-list"
	case "formerly":
		risks.Name, risks.Formerly = "risk-list", []string{"risks"}
	case "removed":
		return nil
	}
	ctx.Agent(risks).Wait()
	return nil
}

// audit is the audit definition: one audit job per line of the run's
// manifest.txt.
func audit() *workflow.Definition {
	wording := "Audit"
	if variant == "prompt" {
		wording = "Audit carefully"
	}
	return &workflow.Definition{
		Name: "audit",
		Doc:  "audits each package manifest.txt names, one job per line PACKAGE FROM TO",
		Run: func(ctx *workflow.Context) error {
			data, err := os.ReadFile(ctx.Path("manifest.txt"))
			if err != nil {
				return err
			}
			var handles []*workflow.Handle
			for line := range strings.Lines(string(data)) {
				f := strings.Fields(line)
				if len(f) != 3 {
					return fmt.Errorf("manifest.txt: %q is not a line PACKAGE FROM TO", strings.TrimSpace(line))
				}
				handles = append(handles, ctx.Agent(workflow.Job{Name: "audit-" + f[0],
					Prompt: fmt.Sprintf("Take package %s from %s to %s.\n%s it.", f[0], f[1], f[2], wording),
					Output: "audit-" + f[0] + ".md", Validate: hasHeading}))
			}
			ctx.Wait(handles...)
			return nil
		},
	}
}

// approval is the approval definition: a person decides whether the
// draft is published.
func approval() *workflow.Definition {
	return &workflow.Definition{
		Name: "approval",
		Doc:  "drafts draft.md, then asks the operator whether to publish it",
		Run: func(ctx *workflow.Context) error {
			draft := ctx.Agent(workflow.Job{Name: "draft", Prompt: "Draft a release note under a level-one heading.",
				Output: "draft.md", Validate: hasHeading}).Wait()
			if ctx.Decide("publish", "Publish draft.md as the release note? Read it first.", "publish", "hold") == "hold" {
				ctx.Stop("the operator holds the draft")
			}
			published := ctx.Path("published.md")
			ctx.Effect("publish", func() error {
				data, err := os.ReadFile(draft)
				if err != nil {
					return err
				}
				return os.WriteFile(published, data, 0o644)
			}, workflow.EffectInputs("draft.md"))
			return nil
		},
	}
}

// fanout is the fanout variant's second definition: one round of as many
// jobs as its parameter jobs says, for the tests of drive's --max-parallel.
func fanout() *workflow.Definition {
	return &workflow.Definition{
		Name:   "fanout",
		Doc:    "hands out jobs j1, j2, ... at once, each writing jN.md, then is done",
		Params: []workflow.Param{{Name: "jobs", Doc: "how many jobs to hand out", Default: "200", Validate: isCount}},
		Run: func(ctx *workflow.Context) error {
			n, err := strconv.Atoi(ctx.Param("jobs"))
			if err != nil {
				return err
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
}

func pipelines() *workflow.Definition {
	return &workflow.Definition{
		Name: "pipelines",
		Doc:  "for each item an audit, then a follow-up that reads it, then a join of the follow-ups",
		Params: []workflow.Param{{Name: "items", Doc: "how many items", Default: "16", Validate: isCount},
			{Name: "model", Doc: "the follow-ups' launch parameter model; none when empty"}},
		Run: func(ctx *workflow.Context) error {
			n, err := strconv.Atoi(ctx.Param("items"))
			if err != nil {
				return err
			}
			follow := make([]*workflow.Handle, n)
			paths := make([]func(), n)
			for i := range n {
				item := fmt.Sprintf("%02d", i+1)
				paths[i] = func() {
					ctx.Agent(workflow.Job{Name: "audit-" + item, Prompt: "Audit item " + item + ".",
						Output: "audit-" + item + ".md", Validate: notEmpty}).Wait()
					f := workflow.Job{Name: "follow-" + item, Prompt: "Follow up the audit of item " + item + ".",
						Inputs: []string{"audit-" + item + ".md"}, Output: "follow-" + item + ".md", Validate: notEmpty}
					if m := ctx.Param("model"); m != "" {
						f.Launch = map[string]any{"model": m}
					}
					follow[i] = ctx.Agent(f)
				}
			}
			ctx.Parallel(paths...)
			inputs := make([]string, n)
			for i := range n {
				inputs[i] = fmt.Sprintf("follow-%02d.md", i+1)
			}
			ctx.Wait(follow...)
			ctx.Agent(workflow.Job{Name: "join", Prompt: "Join the follow-ups.", Inputs: inputs, Output: "join.md", Validate: notEmpty}).Wait()
			return nil
		},
	}
}

func sideEffect() *workflow.Definition {
	return &workflow.Definition{
		Name: "sideeffect",
		Doc:  "jobs slow and quick at once; after quick, an effect that ends the process",
		Run: func(ctx *workflow.Context) error {
			slow := ctx.Agent(workflow.Job{Name: "slow", Prompt: "Take your time.", Output: "slow.md", Validate: notEmpty})
			ctx.Agent(workflow.Job{Name: "quick", Prompt: "Be quick.", Output: "quick.md", Validate: notEmpty}).Wait()
			ctx.Effect("crash", func() error {
				os.Exit(9) // as a process that crashed inside the effect
				return nil
			})
			slow.Wait()
			return nil
		},
	}
}

// isCount accepts a whole number of jobs, one or more.
func isCount(s string) error {
	if n, err := strconv.Atoi(s); err != nil || n < 1 {
		return errors.New("give a whole number of jobs, 1 or more")
	}
	return nil
}

// notEmpty accepts an output that holds at least one byte.
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

// hasHeading accepts an output whose first line is a level-one heading.
func hasHeading(output string) error {
	f, err := os.Open(output)
	if err != nil {
		return err
	}
	defer f.Close()
	first, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if !strings.HasPrefix(first, "# ") {
		return workflow.Refuse("begin with a level-one heading: a first line that starts with \"# \"")
	}
	return nil
}

// tool runs one of the binary's own commands and returns its exit status:
// 2 for malformed arguments, 1 when it failed.
func tool(fn func(args []string) (int, error), args []string) int {
	code, err := fn(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "variant: %v\n", err)
	}
	return code
}

// worker reads each prompt file as a worker does and writes a valid output
// at the path the prompt names: a heading that names the job's output, and
// two points.
func worker(args []string) (int, error) {
	if len(args) == 0 {
		return 2, errors.New("usage: worker PROMPT [PROMPT]...: give one prompt file or more")
	}
	for _, path := range args {
		data, err := os.ReadFile(path)
		if err != nil {
			return 1, err
		}
		p, err := engine.ParsePrompt(data)
		if err != nil {
			return 1, fmt.Errorf("%s: %w", path, err)
		}
		title := strings.TrimSuffix(filepath.Base(p.Output), filepath.Ext(p.Output))
		text := fmt.Sprintf("# %s\n\n- a point\n- another point\n", title)
		if err := os.WriteFile(p.Output, []byte(text), 0o644); err != nil {
			return 1, err
		}
		fmt.Printf("wrote %s\n", p.Output)
	}
	return 0, nil
}

// write writes TEXT to FILE, making FILE's directory when needed.
func write(args []string) (int, error) {
	if len(args) != 2 {
		return 2, errors.New("usage: write FILE TEXT")
	}
	if err := os.MkdirAll(filepath.Dir(args[0]), 0o755); err != nil {
		return 1, err
	}
	if err := os.WriteFile(args[0], []byte(args[1]), 0o644); err != nil {
		return 1, err
	}
	return 0, nil
}
