package store

import (
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/custodian-run/custodian/internal/names"
)

// StateFormat is the format of state.json this version reads and writes.
//
// Format 2 is compact and stores each job's input state once; runs started
// by a custodian that wrote format 1 are refused with the format named, to
// be finished by that custodian (run.json names its version). A reader of
// format 1 would have to carry a second copy of every rule about jobs for
// runs that a redeploy can finish with the binary that started them.
//
// Format 3 adds the paths the definition looked at (Looked). Format 4 adds
// what custodian drive recorded of each hand-out's launches
// (Handout.Launches, Worked, Spare) and the hand-outs each job was not
// charged for (Trouble.Spared). Format 5 adds the build that last stepped
// the run and the one every accepted job was held against (Build,
// Checked), the last step's outcome (Last), and the questions the
// definition asked the operator and the choices made (Questions,
// Decisions). A state of an earlier format from 2 on is read as this one
// with what the custodian that wrote it knew (olderStates), and the next
// command writes it in this format.
const StateFormat = 5

// olderStates are the formats of state.json this version reads besides its
// own, with the fields, by struct type, that each lacks.
var olderStates = older{
	2: {
		reflect.TypeFor[State]():   {"looked", "build", "checked", "last", "questions", "decisions"},
		reflect.TypeFor[Handout](): {"launches", "worked", "spare"},
		reflect.TypeFor[Trouble](): {"spared"},
	},
	3: {
		reflect.TypeFor[State]():   {"build", "checked", "last", "questions", "decisions"},
		reflect.TypeFor[Handout](): {"launches", "worked", "spare"},
		reflect.TypeFor[Trouble](): {"spared"},
	},
	4: {reflect.TypeFor[State](): {"build", "checked", "last", "questions", "decisions"}},
}

// State is state.json: every job's record, the workflow's failure counts and
// the moves a step still owes. A command that changes the run replaces it
// whole; its rename is that command's commit point.
type State struct {
	Format int `json:"format"`
	// Run is the id of the run (run.json's): a state copied in from another
	// run is refused.
	Run string `json:"run"`
	// InputState is the version of the algorithm that computed every input
	// state in this record; a run hashed another way cannot be judged.
	InputState int `json:"input_state"`
	// Steps counts the steps that gave an outcome; the n-th is step n.
	Steps int `json:"steps"`
	// Replayed is the last step that ran the definition, and Named the jobs
	// it named, sorted: a job with a record and not named is no longer part
	// of the run's course.
	Replayed int      `json:"replayed"`
	Named    []string `json:"named"`
	// Looked holds, for each path the definition asked Context.Path for
	// at the last replay that ran to its end, what it held (a file's
	// hash, a directory's names, another kind's name): a job no longer
	// named while they, and every
	// job's standing, are as they were was dropped by the definition's
	// code, not by the run's course.
	Looked map[string]string `json:"looked"`
	// Seq counts the commands whose history is committed: history/1.jsonl
	// to history/<Seq>.jsonl. A history file numbered above it belongs to a
	// command that ended before its commit, and is not history.
	Seq int `json:"seq"`
	// Reports counts the committed lines of reports.jsonl; a line past them
	// belongs to a report that ended before its commit.
	Reports int `json:"reports"`
	// Effects is what the history has recorded of each effect's journal, so
	// that a journal that changed without a committed history (a process
	// that ended inside an effect) is recorded by the next command.
	Effects   map[string]EffectSeen `json:"effects"`
	Jobs      map[string]*JobState  `json:"jobs"`
	Workflow  WorkflowState         `json:"workflow"`
	Unreached []string              `json:"unreached"`
	// Patches are the patches the definition declared at the run's last
	// replay: one it no longer declares, and the run lacks, took away the
	// code the run relies on.
	Patches []string `json:"patches"`
	Moves   []Move   `json:"moves"`
	Kept    int      `json:"kept"`
	// Resolving is the journal record of an effect that a committed resolve
	// still owes: the next command writes it first.
	Resolving *Effect `json:"resolving"`
	// Abandoned is set when the operator ended the run for good.
	Abandoned *Abandon `json:"abandoned"`
	// Build is the build that took the last step that replayed the
	// definition; unknown before.
	Build Build `json:"build"`
	// Checked is the build against whose definition every accepted job was
	// last held: a step that ends before it reaches some of them leaves it
	// as it was, so that a later change of their tasks is not taken for
	// data the new build reads.
	Checked Build `json:"checked"`
	// Last is the outcome word of the last step that carried out a replay
	// (not a stop of the workflow, not an uncertain step): a run that was
	// done stays done under another build's code.
	Last string `json:"last"`
	// Questions are what the definition asked the operator at the last
	// step (Context.Decide) and has no choice for, by name; Decisions the
	// choices the operator recorded, by name.
	Questions map[string]Question `json:"questions"`
	Decisions map[string]Decision `json:"decisions"`
}

// Question is what a definition asks the operator, and the choices it
// takes.
type Question struct {
	Text    string   `json:"text"`
	Choices []string `json:"choices"`
}

// check refuses a question that Context.Decide would not ask: a text with
// control characters other than line breaks and tabs, or choices that are
// not names.
func (q Question) check() error {
	if strings.TrimSpace(q.Text) == "" || !utf8.ValidString(q.Text) ||
		strings.ContainsFunc(q.Text, func(r rune) bool { return isControl(r) && r != '\n' && r != '\t' }) {
		return fmt.Errorf("its text is not a question")
	}
	if len(q.Choices) == 0 {
		return fmt.Errorf("it has no choices")
	}
	for i, c := range q.Choices {
		if !names.Valid(c) || slices.Contains(q.Choices[:i], c) {
			return fmt.Errorf("choice %q is not a name, or is given twice", c)
		}
	}
	return nil
}

// Decision is the operator's choice on a question, and why.
type Decision struct {
	Choice string `json:"choice"`
	Text   string `json:"text"`
	At     string `json:"at"`
}

// JobState is one job's record.
type JobState struct {
	// Handouts counts the job's hand-outs in the run and numbers their
	// prompt files. A hand-out not charged as an attempt (Trouble.Spared)
	// is not one: the current one is attempt Handouts - Spared.
	Handouts int `json:"handouts"`
	// Input is the input state of the job's last hand-out, which is also
	// the one its accepted output was accepted against: an output in place
	// is judged against it. Nil before the first hand-out.
	Input *Inputs `json:"input"`
	// Outstanding is the last hand-out while it is not yet judged.
	Outstanding *Handout `json:"outstanding"`
	// Accepted is the SHA-256 of the accepted output; empty when the job is
	// not accepted.
	Accepted string `json:"accepted"`
	// Trouble is what went wrong with the job; nil while nothing has.
	Trouble *Trouble `json:"trouble"`
}

// Handout is a hand-out not yet judged.
type Handout struct {
	// Prompt is the SHA-256 of the prompt file the hand-out wrote: a prompt
	// file edited after it was handed out refuses the output made from it.
	Prompt string `json:"prompt"`
	// Launches say how each launch custodian drive made for the hand-out
	// ended, in words, for its block record; none when no drive launched
	// it.
	Launches []string `json:"launches"`
	// Worked says a worker launched for the hand-out ended on its own: a
	// missing output is its failed attempt.
	Worked bool `json:"worked"`
	// Spare says why no worker's attempt is to be charged for a missing
	// output, when nothing worked on it: it was not launched, its launch
	// failed, custodian drive ended its worker, or the harness session
	// was cut. Empty when nothing said so.
	Spare string `json:"spare"`
}

// Trouble is what went wrong with a job: its failed attempts, its blocks
// and its stop.
type Trouble struct {
	// Failures counts failed attempts since the last acceptance, block or
	// reopening.
	Failures int `json:"failures"`
	// BlocksTowardLimit counts blocks since the last acceptance or release.
	BlocksTowardLimit int `json:"blocks_toward_limit"`
	// Blocks counts the job's blocks in the run and numbers their records.
	Blocks int `json:"blocks"`
	// UsageLimited counts the launches of the job that ended at an
	// account's usage limit, which charge no attempt up to a bound.
	UsageLimited int `json:"usage_limited"`
	// Spared counts the job's hand-outs in the run that were not charged
	// as attempts (Handout.Spare), which is bounded too.
	Spared int `json:"spared"`
	// Messages say why the last attempt failed; the next prompt carries them.
	Messages []string `json:"messages"`
	// History lists failed attempts since the last block, for the block record.
	History []string `json:"history"`
	// LastFailure is the most recent failure of the job, kept across blocks.
	LastFailure *Failure `json:"last_failure"`
	// Stopped is set while a block that permits only stopping stands.
	Stopped *Stop `json:"stopped"`
}

// EffectSeen is an effect's journal as the history last recorded it.
type EffectSeen struct {
	Status string `json:"status"`
	Runs   int    `json:"runs"`
}

// Inputs is an input state: what a job's output is judged against, in
// parts, so that a change can be named. Its digest (docs/hashing.md) is
// computed from the parts.
type Inputs struct {
	// Output is the job's output path, run-relative. It is not hashed: a
	// job is one task with one output, and a changed output path is a
	// changed definition.
	Output string `json:"output"`
	// Prompt is the SHA-256 of the job's prompt.
	Prompt string `json:"prompt"`
	// Launch is the job's canonical launch parameters, a JSON object.
	Launch string     `json:"launch"`
	Files  []FileHash `json:"files"`
}

// FileHash is a declared input file and the SHA-256 of its bytes; SHA256 is
// empty when there was no regular file there.
type FileHash struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Failure is a refused or missing attempt, or a block.
type Failure struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// Stop is a standing block that permits only stopping.
type Stop struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Record string `json:"record"` // run-relative path of its block record
	// Changes are, for a stop of a changed definition, what changed, by
	// what it changed (a job, or "patch NAME"): the operator's release
	// lets exactly these through.
	Changes map[string]string `json:"changes"`
}

// WorkflowState is the record of the definition's own code: its failures
// and its stop.
type WorkflowState struct {
	// Places counts, per place in the definition, the consecutive steps that
	// failed there.
	Places  map[string]int `json:"places"`
	Blocks  int            `json:"blocks"`
	Stopped *Stop          `json:"stopped"`
	// Allowed are the changes of the definition that the operator released:
	// a job whose change is allowed is reopened as the course of the run
	// would reopen it.
	Allowed map[string]string `json:"allowed"`
}

// Move is a file the engine moves aside. A step lists its moves in the state
// it commits and performs them after; an existing target is the receipt of
// a finished move.
type Move struct {
	Source string `json:"source"` // run-relative
	Target string `json:"target"` // run-relative, under .custodian/jobs/<job>/kept/
	// Identity says which file the move is of: the SHA-256 of a regular
	// file's bytes, or, for a file that is not read (a link, a pipe, a file
	// over the size limit), its kind and inode. A source that is another
	// file now is not moved.
	Identity string `json:"identity"`
}

// Abandon is the operator's end of a run.
type Abandon struct {
	At   string `json:"at"`
	Text string `json:"text"`
}

// NewState returns the state of a run on which no command has committed.
func NewState(inputState int) *State {
	return &State{
		Format:     StateFormat,
		InputState: inputState,
		Named:      []string{},
		Looked:     map[string]string{},
		Effects:    map[string]EffectSeen{},
		Jobs:       map[string]*JobState{},
		Workflow:   WorkflowState{Places: map[string]int{}, Allowed: map[string]string{}},
		Unreached:  []string{},
		Patches:    []string{},
		Moves:      []Move{},
		Questions:  map[string]Question{},
		Decisions:  map[string]Decision{},
	}
}

// LoadState reads state.json. Every run has one from its start, so a
// missing one cannot be trusted either; nor can one of another run.
func (r *Run) LoadState() (*State, error) {
	rel := statePath("state.json")
	var s State
	found, err := r.readRecordOf(rel, &s, StateFormat, func() int { return s.Format }, olderStates)
	s.Format = StateFormat
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, untrusted(r.abs(rel), "it is missing; a run has one from its start")
	}
	if err := s.check(); err != nil {
		return nil, &RecordError{Path: r.abs(rel), Err: err}
	}
	if s.Run != r.Record.ID {
		return nil, untrusted(r.abs(rel), "it belongs to run %s, not to this run (%s)", s.Run, r.Record.ID)
	}
	return &s, nil
}

// SaveState replaces state.json with s. label names the write point.
func (r *Run) SaveState(label string, s *State) error {
	rel := statePath("state.json")
	// A job's record takes a few hundred bytes.
	data, err := encodeSized(s, 4096+512*len(s.Jobs))
	if err != nil {
		return fmt.Errorf("write %s: %w", r.abs(rel), err)
	}
	return r.write(label, rel, data)
}

// check holds every name, path and count of the state to its rules: a
// state written by hand, or by a worker, names nothing outside the run.
func (s *State) check() error {
	if !isHex(s.Run, 32) {
		return fmt.Errorf("run %q is not a run's id", s.Run)
	}
	for _, n := range []struct {
		what string
		v    int
	}{{"steps", s.Steps}, {"replayed", s.Replayed}, {"seq", s.Seq}, {"reports", s.Reports}, {"kept", s.Kept}, {"workflow.blocks", s.Workflow.Blocks}} {
		if n.v < 0 {
			return fmt.Errorf("%s is negative", n.what)
		}
	}
	if s.Replayed > s.Steps {
		return fmt.Errorf("replayed %d is past steps %d", s.Replayed, s.Steps)
	}
	for _, rel := range slices.Sorted(maps.Keys(s.Looked)) {
		if strings.ContainsFunc(rel+s.Looked[rel], isControl) {
			return fmt.Errorf("looked: %q holds a control character", rel)
		}
	}
	for _, name := range s.Named {
		if !names.Valid(name) {
			return fmt.Errorf("named: %q is not a job's name", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Jobs)) {
		if err := s.Jobs[name].check(name); err != nil {
			return fmt.Errorf("jobs[%q]: %w", name, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Effects)) {
		if !names.Valid(name) {
			return fmt.Errorf("effects: %q is not an effect's name", name)
		}
	}
	for _, name := range s.Unreached {
		if !names.Valid(name) {
			return fmt.Errorf("unreached: %q is not an effect's name", name)
		}
	}
	for _, name := range s.Patches {
		if !names.Valid(name) {
			return fmt.Errorf("patches: %q is not a patch's name", name)
		}
	}
	if err := s.Build.check(); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	if err := s.Checked.check(); err != nil {
		return fmt.Errorf("checked: %w", err)
	}
	switch s.Last {
	case "", "uncertain", "blocked", "launch", "done":
	default:
		return fmt.Errorf("last %q is not an outcome", s.Last)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Questions)) {
		if err := s.Questions[name].check(); !names.Valid(name) || err != nil {
			return fmt.Errorf("questions: %q is not a question a definition asks: %v", name, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Decisions)) {
		d := s.Decisions[name]
		if !names.Valid(name) || !names.Valid(d.Choice) || !utf8.ValidString(d.Text) || strings.ContainsFunc(d.Text+d.At, isControl) {
			return fmt.Errorf("decisions: %q is not a decision the operator recorded", name)
		}
	}
	if err := s.Workflow.Stopped.check(); err != nil {
		return fmt.Errorf("workflow.stopped: %w", err)
	}
	for i, m := range s.Moves {
		if err := m.check(); err != nil {
			return fmt.Errorf("moves[%d]: %w", i, err)
		}
	}
	if e := s.Resolving; e != nil {
		if err := e.check(); err != nil {
			return fmt.Errorf("resolving: %w", err)
		}
	}
	return nil
}

func (j *JobState) check(name string) error {
	switch {
	case !names.Valid(name):
		return fmt.Errorf("%q is not a job's name", name)
	case j == nil:
		return fmt.Errorf("the job has no record")
	case j.Handouts < 0:
		return fmt.Errorf("handouts is negative")
	case j.Accepted != "" && !isHex(j.Accepted, 64):
		return fmt.Errorf("accepted %q is not a SHA-256", j.Accepted)
	case (j.Accepted != "" || j.Outstanding != nil) && j.Input == nil:
		return fmt.Errorf("it is accepted or handed out without an input state")
	}
	if j.Input != nil {
		if err := j.Input.check(); err != nil {
			return fmt.Errorf("input: %w", err)
		}
	}
	if o := j.Outstanding; o != nil {
		if !isHex(o.Prompt, 64) {
			return fmt.Errorf("outstanding.prompt %q is not a SHA-256", o.Prompt)
		}
		for _, l := range append([]string{o.Spare}, o.Launches...) {
			if strings.ContainsFunc(l, isControl) {
				return fmt.Errorf("outstanding: %q holds a control character", l)
			}
		}
	}
	if t := j.Trouble; t != nil {
		if t.Failures < 0 || t.BlocksTowardLimit < 0 || t.Blocks < 0 || t.UsageLimited < 0 || t.Spared < 0 || t.Spared > j.Handouts {
			return fmt.Errorf("trouble: a count is negative")
		}
		if err := t.Stopped.check(); err != nil {
			return fmt.Errorf("trouble.stopped: %w", err)
		}
	}
	return nil
}

func (in *Inputs) check() error {
	if !Clean(in.Output) || inStateDir(in.Output) {
		return fmt.Errorf("output %q is not a path inside the run", in.Output)
	}
	if !isHex(in.Prompt, 64) {
		return fmt.Errorf("prompt %q is not a SHA-256", in.Prompt)
	}
	for i, f := range in.Files {
		if err := f.check(); err != nil {
			return fmt.Errorf("files[%d]: %w", i, err)
		}
	}
	return nil
}

func (f FileHash) check() error {
	if !ValidKey(f.Path) {
		return fmt.Errorf("path %q is neither a clean path inside the run nor a clean absolute path", f.Path)
	}
	if f.SHA256 != "" && !isHex(f.SHA256, 64) {
		return fmt.Errorf("sha256 %q is not a SHA-256", f.SHA256)
	}
	return nil
}

// ValidKey says whether key names an input the way records do: a clean
// path inside the run, or a clean absolute path outside it.
func ValidKey(key string) bool {
	if strings.HasPrefix(key, "/") {
		return path.Clean(key) == key && !strings.ContainsFunc(key, isControl)
	}
	return Clean(key)
}

func (s *Stop) check() error {
	if s == nil {
		return nil
	}
	if !Clean(s.Record) || !inStateDir(s.Record) {
		return fmt.Errorf("record %q is not a path in %s/", s.Record, StateDir)
	}
	return nil
}

func (m Move) check() error {
	if !Clean(m.Source) || inStateDir(m.Source) {
		return fmt.Errorf("source %q is not a path inside the run", m.Source)
	}
	parts := strings.Split(m.Target, "/")
	if !Clean(m.Target) || len(parts) != 5 || parts[0] != StateDir || parts[1] != "jobs" || !names.Valid(parts[2]) || parts[3] != "kept" {
		return fmt.Errorf("target %q is not a path in %s/jobs/<job>/kept/", m.Target, StateDir)
	}
	if m.Identity == "" {
		return fmt.Errorf("it has no identity")
	}
	return nil
}

func inStateDir(rel string) bool {
	return rel == StateDir || strings.HasPrefix(rel, StateDir+"/")
}

// Clone returns a deep copy of s, for a decision that changes a state it
// must not share.
func (s *State) Clone() *State {
	data, err := encode(s)
	if err != nil {
		panic(fmt.Sprintf("clone a state: %v", err)) // a State holds only what encode writes
	}
	var c State
	if err := decodeStrict(data, &c); err != nil {
		panic(fmt.Sprintf("clone a state: %v", err))
	}
	return &c
}
