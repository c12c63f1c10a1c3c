package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/custodian-run/custodian/internal/names"
	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
)

// spec is a job as the engine sees it: paths normalized, launch canonical.
type spec struct {
	job     workflow.Job
	output  string   // run-relative, slash-separated
	problem string   // run-relative, slash-separated
	inputs  []string // keys: run-relative when inside the run, sorted, unique
	listed  []string // the same keys in the order the definition declared them
	launch  []byte   // canonical JSON
}

func newSpec(defName, runDir string, maps []Map, j workflow.Job) (*spec, error) {
	bad := func(format string, args ...any) error {
		return &workflow.DefinitionError{Definition: defName, Rule: fmt.Sprintf("job %s: ", j.Name) + fmt.Sprintf(format, args...)}
	}
	switch {
	case j.Name == "workflow":
		return nil, bad("the name workflow is reserved for the definition's own code")
	case names.Problem("job", j.Name) != "":
		return nil, &workflow.DefinitionError{Definition: defName, Rule: names.Problem("job", j.Name)}
	}
	out, ok := insideRun(runDir, j.Output)
	if !ok {
		return nil, bad("output %q is not a path inside the run directory", j.Output)
	}
	if inStateDir(out) {
		return nil, bad("output %s lies in %s/, which belongs to the engine", out, store.StateDir)
	}
	s := &spec{job: j, output: out, problem: workflow.ProblemPath(out), inputs: make([]string, 0, len(j.Inputs))}
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
