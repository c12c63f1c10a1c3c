package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Kind names what a step's outcome is. Each step gives exactly one: the
// first that applies of uncertain, blocked, launch, done.
type Kind string

// The outcomes of a step.
const (
	// KindUncertain: an effect may or may not have taken place; only the
	// operator can establish which.
	KindUncertain Kind = "uncertain"
	// KindBlocked: code cannot get past something; a repair within scope may
	// help, or only stopping.
	KindBlocked Kind = "blocked"
	// KindLaunch: the agent orchestrator launches one worker per job.
	KindLaunch Kind = "launch"
	// KindDone: the definition ran to its end with every job accepted.
	KindDone Kind = "done"
)

// Outcome is what a step decided.
type Outcome struct {
	Kind    Kind      // which outcome this is
	Jobs    []Handout // launch: the jobs to launch, sorted by name
	Blocks  []Block   // blocked, uncertain: every block, in a stable order
	Effects []EffectState
	// Running are the jobs a drive's step left running, sorted: only
	// custodian drive's own steps leave any (launch).
	Running []string
}

// Handout is one job handed out for launch: one attempt.
type Handout struct {
	Name    string          `json:"name"`
	Attempt int             `json:"attempt"`
	Prompt  string          `json:"prompt"`  // absolute path of the prompt file
	Output  string          `json:"output"`  // absolute path the worker writes
	Problem string          `json:"problem"` // absolute path of a problem report
	Launch  json.RawMessage `json:"launch"`  // canonical JSON; {} when none
}

// Permission is what a block lets the agent orchestrator do.
type Permission string

// What a block permits.
const (
	PermitRepair Permission = "repair"
	PermitStop   Permission = "stop"
)

// BlockKind is a block's stable kind, from a closed set; scripts branch on it.
type BlockKind string

// The kinds of block. docs/blocks.md describes each and what to do.
const (
	// BlockNoOutput: the job's attempts ended without an output.
	BlockNoOutput BlockKind = "no-output"
	// BlockRefused: the job's validator refused its output.
	BlockRefused BlockKind = "validator-refused"
	// BlockValidatorFailed: the job's validator panicked or failed to judge.
	BlockValidatorFailed BlockKind = "validator-failed"
	// BlockInputChanged: a declared input, the prompt or the launch
	// parameters changed between hand-out and judgment.
	BlockInputChanged BlockKind = "input-changed"
	// BlockProblemReport: the worker wrote a problem report.
	BlockProblemReport BlockKind = "problem-report"
	// BlockPromptChanged: the prompt file was edited after it was handed out.
	BlockPromptChanged BlockKind = "prompt-changed"
	// BlockOutputNotRegular: the output is a symbolic link, a directory, a
	// pipe or anything else than a regular file.
	BlockOutputNotRegular BlockKind = "output-not-regular"
	// BlockOutputTooLarge: the output is larger than the job's limit.
	BlockOutputTooLarge BlockKind = "output-too-large"
	// BlockWorkflowError: the definition's own code returned an error or panicked.
	BlockWorkflowError BlockKind = "workflow-error"
	// BlockWorkflowStop: the definition stopped the run.
	BlockWorkflowStop BlockKind = "workflow-stop"
	// BlockStalled: the definition ended with nothing to hand out and not at its end.
	BlockStalled BlockKind = "stalled"
	// BlockEffectInputsChanged: a completed effect's inputs changed since.
	BlockEffectInputsChanged BlockKind = "effect-inputs-changed"
	// BlockEffectUnreached: a completed effect the definition no longer reaches.
	BlockEffectUnreached BlockKind = "effect-unreached"
	// BlockDefinitionChanged: the definition changed the task of accepted
	// jobs, no longer names them, or removed a patch the run lacks.
	BlockDefinitionChanged BlockKind = "definition-changed"
	// BlockBadParameter: the definition no longer takes a parameter of the
	// run as it is.
	BlockBadParameter BlockKind = "bad-parameter"
	// BlockAwaitingDecision: the definition asks the operator a question
	// (Context.Decide) that has no recorded choice.
	BlockAwaitingDecision BlockKind = "awaiting-decision"
)

// Block is what code cannot get past, and what it permits.
type Block struct {
	Subject   Subject    `json:"subject"`
	Kind      BlockKind  `json:"kind"`
	Reason    string     `json:"reason"`
	Record    string     `json:"record"` // absolute path of the block record
	Permitted Permission `json:"permitted"`
	Scope     string     `json:"scope"` // the repair scope; with PermitStop too
}

// EffectState is an effect whose fate is uncertain.
type EffectState struct {
	Name   string `json:"name"`
	Detail string `json:"detail"` // what is known
	Record string `json:"record"` // absolute path of the effect's record
}

// MarshalJSON renders the outcome as the one object `step --json` prints.
func (o Outcome) MarshalJSON() ([]byte, error) {
	switch o.Kind {
	case KindLaunch:
		return json.Marshal(struct {
			Outcome Kind      `json:"outcome"`
			Jobs    []Handout `json:"jobs"`
			Running []string  `json:"running,omitempty"`
		}{o.Kind, nonNil(o.Jobs), o.Running})
	case KindBlocked:
		return json.Marshal(struct {
			Outcome Kind    `json:"outcome"`
			Blocks  []Block `json:"blocks"`
		}{o.Kind, nonNil(o.Blocks)})
	case KindUncertain:
		return json.Marshal(struct {
			Outcome Kind          `json:"outcome"`
			Effects []EffectState `json:"effects"`
			Blocks  []Block       `json:"blocks"`
		}{o.Kind, nonNil(o.Effects), nonNil(o.Blocks)})
	default:
		return json.Marshal(struct {
			Outcome Kind `json:"outcome"`
		}{o.Kind})
	}
}

// known says whether k is one of the four outcomes.
func (k Kind) known() bool {
	switch k {
	case KindUncertain, KindBlocked, KindLaunch, KindDone:
		return true
	}
	return false
}

// UnmarshalJSON reads the object MarshalJSON writes, strictly: an unknown
// field or outcome word means a reader and a writer disagree on the format.
// Empty lists read as nil, as Step returns them.
func (o *Outcome) UnmarshalJSON(data []byte) error {
	var v struct {
		Outcome Kind          `json:"outcome"`
		Jobs    []Handout     `json:"jobs"`
		Blocks  []Block       `json:"blocks"`
		Effects []EffectState `json:"effects"`
		Running []string      `json:"running"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if !v.Outcome.known() {
		return fmt.Errorf("unknown outcome %q", v.Outcome)
	}
	*o = Outcome{Kind: v.Outcome, Jobs: nilIfEmpty(v.Jobs), Blocks: nilIfEmpty(v.Blocks), Effects: nilIfEmpty(v.Effects), Running: nilIfEmpty(v.Running)}
	return nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// paths returns a copy of the outcome with every path it names (prompt
// files, outputs, problem reports, block records) passed through f: made
// relative to the run for the history, and absolute again when read.
func (o Outcome) paths(f func(string) string) Outcome {
	c := o
	c.Jobs = slices.Clone(o.Jobs)
	for i := range c.Jobs {
		h := &c.Jobs[i]
		h.Prompt, h.Output, h.Problem = applyPath(f, h.Prompt), applyPath(f, h.Output), applyPath(f, h.Problem)
	}
	c.Blocks = slices.Clone(o.Blocks)
	for i := range c.Blocks {
		c.Blocks[i].Record = applyPath(f, c.Blocks[i].Record)
	}
	c.Effects = slices.Clone(o.Effects)
	for i := range c.Effects {
		c.Effects[i].Record = applyPath(f, c.Effects[i].Record)
	}
	return c
}

// pathList lists the paths the outcome names.
func (o Outcome) pathList() []string {
	var list []string
	for _, h := range o.Jobs {
		list = append(list, h.Prompt, h.Output, h.Problem)
	}
	for _, b := range o.Blocks {
		list = append(list, b.Record)
	}
	for _, e := range o.Effects {
		list = append(list, e.Record)
	}
	return slices.DeleteFunc(list, func(p string) bool { return p == "" })
}

func applyPath(f func(string) string, p string) string {
	if p == "" {
		return ""
	}
	return f(p)
}
