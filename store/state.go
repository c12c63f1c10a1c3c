package store

import (
	"errors"
	"io/fs"
	"os"
)

// StateFormat is the format of state.json this version reads and writes.
const StateFormat = 1

// State is state.json: every job's record, the workflow's failure counts and
// the moves a step still owes. A step replaces it whole.
type State struct {
	Format int `json:"format"`
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
	// Seq counts the commands whose history is committed: history/1.jsonl
	// to history/<Seq>.jsonl. A history file numbered above it belongs to a
	// command that ended before its commit, and is not history.
	Seq int `json:"seq"`
	// Effects is what the history has recorded of each effect's journal, so
	// that a journal that changed without a committed history (a process
	// that ended inside an effect) is recorded by the next command.
	Effects   map[string]EffectSeen `json:"effects"`
	Jobs      map[string]*JobState  `json:"jobs"`
	Workflow  WorkflowState         `json:"workflow"`
	Unreached []string              `json:"unreached"`
	Moves     []Move                `json:"moves"`
	Kept      int                   `json:"kept"`
	// Resolving is the journal record of an effect that a committed resolve
	// still owes: the next command writes it first.
	Resolving *Effect `json:"resolving"`
}

// JobState is one job's record.
type JobState struct {
	// Handouts counts the job's hand-outs in the run; the n-th is attempt n.
	Handouts int `json:"handouts"`
	// Failures counts failed attempts since the last acceptance, block or reopening.
	Failures int `json:"failures"`
	// BlocksTowardLimit counts blocks since the last acceptance or release.
	BlocksTowardLimit int `json:"blocks_toward_limit"`
	// Blocks counts the job's blocks in the run and numbers their records.
	Blocks int `json:"blocks"`
	// Outstanding is the input state of a hand-out not yet judged.
	Outstanding *Inputs `json:"outstanding"`
	// LastInput is the input state of the last hand-out; an output in place
	// with nothing outstanding is judged against it.
	LastInput *Inputs `json:"last_input"`
	// Accepted is the input state and output hash of the accepted output.
	Accepted *Acceptance `json:"accepted"`
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

// Inputs is an input state: what a job's output is judged against. Digest
// hashes the rest; the parts are kept so that a change can be named.
type Inputs struct {
	Digest string     `json:"digest"`
	Prompt string     `json:"prompt"`
	Launch string     `json:"launch"`
	Files  []FileHash `json:"files"`
}

// FileHash is a declared input file and the SHA-256 of its bytes; SHA256 is
// empty when the file did not exist.
type FileHash struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Acceptance ties one input state to one output.
type Acceptance struct {
	Input  Inputs `json:"input"`
	Output string `json:"output"`
	At     string `json:"at"`
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
}

// WorkflowState is the record of failures in the definition's own code.
type WorkflowState struct {
	// Places counts, per place in the definition, the consecutive steps that
	// failed there.
	Places  map[string]int `json:"places"`
	Blocks  int            `json:"blocks"`
	Stopped *Stop          `json:"stopped"`
}

// Move is a file the engine moves aside. A step lists its moves in the state
// it commits and performs them after; an existing target is the receipt of
// a finished move.
type Move struct {
	Source string `json:"source"` // run-relative
	Target string `json:"target"` // run-relative
	SHA256 string `json:"sha256"` // of the source when the move was planned
}

// NewState returns the state of a run on which no step has committed.
func NewState(inputState int) *State {
	return &State{
		Format:     StateFormat,
		InputState: inputState,
		Named:      []string{},
		Effects:    map[string]EffectSeen{},
		Jobs:       map[string]*JobState{},
		Workflow:   WorkflowState{Places: map[string]int{}},
		Unreached:  []string{},
		Moves:      []Move{},
	}
}

// LoadState reads state.json. Every run has one from its start, so a
// missing one cannot be trusted either.
func (r *Run) LoadState() (*State, error) {
	path := r.path("state.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, untrusted(path, "it is missing; a run has one from its start")
	}
	if err != nil {
		return nil, &RecordError{Path: path, Err: err}
	}
	var s State
	if err := decodeRecord(path, data, &s, StateFormat, func() int { return s.Format }); err != nil {
		return nil, err
	}
	if s.Jobs == nil {
		s.Jobs = map[string]*JobState{}
	}
	for name, j := range s.Jobs {
		if j == nil {
			return nil, untrusted(path, "job %s has no record", name)
		}
	}
	if s.Effects == nil {
		s.Effects = map[string]EffectSeen{}
	}
	if s.Workflow.Places == nil {
		s.Workflow.Places = map[string]int{}
	}
	return &s, nil
}

// SaveState replaces state.json with s. label names the write point.
func (r *Run) SaveState(label string, s *State) error {
	data, err := encode(s)
	if err != nil {
		return err
	}
	return writeFile(label, r.path("state.json"), data)
}
