package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/custodian-run/custodian/store"
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

// spec is a job as the engine sees it: paths normalized, launch canonical.
type spec struct {
	job     Job
	output  string   // run-relative, slash-separated
	problem string   // run-relative, slash-separated
	inputs  []string // keys: run-relative when inside the run, sorted, unique
	listed  []string // the same keys in the order the definition declared them
	launch  []byte   // canonical JSON
}

// ProblemPath returns where the worker of a job with this output reports a
// problem: the output's last extension replaced by .problem.md.
func ProblemPath(output string) string {
	ext := path.Ext(output)
	return strings.TrimSuffix(output, ext) + ".problem.md"
}

func newSpec(defName, runDir string, maps []Map, j Job) (*spec, error) {
	bad := func(format string, args ...any) error {
		return &DefinitionError{Definition: defName, Rule: fmt.Sprintf("job %s: ", j.Name) + fmt.Sprintf(format, args...)}
	}
	switch {
	case j.Name == "workflow":
		return nil, bad("the name workflow is reserved for the definition's own code")
	case nameProblem("job", j.Name) != "":
		return nil, &DefinitionError{Definition: defName, Rule: nameProblem("job", j.Name)}
	}
	out, ok := insideRun(runDir, j.Output)
	if !ok {
		return nil, bad("output %q is not a path inside the run directory", j.Output)
	}
	if inStateDir(out) {
		return nil, bad("output %s lies in %s/, which belongs to the engine", out, store.StateDir)
	}
	s := &spec{job: j, output: out, problem: ProblemPath(out), inputs: make([]string, 0, len(j.Inputs))}
	seen := map[string]bool{}
	for _, in := range j.Inputs {
		key := inputKey(runDir, maps, in)
		if key == "" {
			return nil, bad("input %q is not a file path", in)
		}
		if key == s.output || key == s.problem {
			return nil, bad("it may not read its own output or problem path %s", key)
		}
		if !seen[key] {
			seen[key] = true
			s.inputs = append(s.inputs, key)
		}
	}
	s.listed = slices.Clone(s.inputs)
	sort.Strings(s.inputs)
	launch, err := canonicalJSON(j.Launch)
	if err != nil {
		return nil, bad("launch parameters are not JSON: %v", err)
	}
	s.launch = launch
	return s, nil
}

// sameTask says whether two declarations name the same task: prompt, output,
// inputs and launch parameters agree. Name and validator are not compared.
func (s *spec) sameTask(o *spec) bool {
	return s.job.Prompt == o.job.Prompt && s.output == o.output &&
		strings.Join(s.inputs, "\x00") == strings.Join(o.inputs, "\x00") &&
		bytes.Equal(s.launch, o.launch)
}

// insideRun normalizes p, relative to the run or absolute inside it, to a
// clean slash-separated run-relative path. It fails for anything else.
func insideRun(runDir, p string) (string, bool) {
	if p == "" {
		return "", false
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(runDir, p)
		if err != nil {
			return "", false
		}
		p = rel
	}
	clean := path.Clean(filepath.ToSlash(p))
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || path.IsAbs(clean) {
		return "", false
	}
	return clean, true
}

// inputKey is how an input enters the input state: run-relative when it lies
// inside the run, so that no absolute run path is hashed and a moved run
// keeps its acceptances; otherwise its clean absolute path.
func inputKey(runDir string, maps []Map, p string) string {
	if rel, ok := insideRun(runDir, p); ok {
		return rel
	}
	if filepath.IsAbs(p) {
		return unmapPath(maps, filepath.ToSlash(filepath.Clean(p)))
	}
	return ""
}

func inStateDir(rel string) bool {
	return rel == store.StateDir || strings.HasPrefix(rel, store.StateDir+"/")
}

// canonicalJSON renders v as compact JSON with sorted keys and no HTML
// escaping; numbers keep their decimal text. nil renders as {}.
func canonicalJSON(v map[string]any) ([]byte, error) {
	if v == nil {
		return []byte("{}"), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
