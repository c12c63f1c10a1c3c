package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// InputStateVersion is the version of the input-state algorithm below. A run
// records it in state.json; a run hashed by another version is refused
// rather than judged, because every acceptance in it would read as changed.
// Changing the algorithm in any way means a new version. docs/hashing.md
// states the algorithm for other implementations.
const InputStateVersion = 1

// inputState computes a job's input state now: the SHA-256 of its prompt,
// its canonical launch parameters, and the SHA-256 of each declared
// input's bytes, with its output path beside them.
func inputState(files *store.Files, s *spec) (store.Inputs, error) {
	in := store.Inputs{
		Output: s.output,
		Prompt: sha256Hex([]byte(s.job.Prompt)),
		Launch: string(s.launch),
		Files:  make([]store.FileHash, 0, len(s.inputs)),
	}
	for _, key := range s.inputs {
		c, err := files.Hash(key, -1)
		if err != nil {
			return in, fmt.Errorf("hash input %s: %w", key, err)
		}
		if c.Kind != store.Regular && c.Kind != store.Missing {
			return in, inputKindError{key: key, kind: c.Kind}
		}
		in.Files = append(in.Files, store.FileHash{Path: key, SHA256: c.SHA256})
	}
	return in, nil
}

// digest hashes the parts of an input state with length-prefixed fields, so
// that no two different states share an encoding (the output path is not
// one of them):
//
//	custodian input state v1\n
//	prompt <len>:<hex sha256 of the prompt>\n
//	launch <len>:<hex sha256 of the canonical launch JSON>\n
//	file <len>:<run-relative or absolute path>\n     (sorted by path)
//	sha256 <len>:<hex sha256 of its bytes, or "" when it does not exist>\n
func digest(in store.Inputs) string {
	var b strings.Builder
	b.WriteString("custodian input state v1\n")
	field := func(name, value string) {
		fmt.Fprintf(&b, "%s %d:%s\n", name, len(value), value)
	}
	field("prompt", in.Prompt)
	field("launch", sha256Hex([]byte(in.Launch)))
	for _, f := range in.Files {
		field("file", f.Path)
		field("sha256", f.SHA256)
	}
	return sha256Hex([]byte(b.String()))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sameInputs says whether two input states are the same: the same prompt,
// launch parameters and input bytes.
func sameInputs(a, b store.Inputs) bool {
	return a.Prompt == b.Prompt && a.Launch == b.Launch && slices.Equal(a.Files, b.Files)
}

// changes names what differs between two input states: the prompt, the
// launch parameters, and each input file whose bytes changed, appeared or
// disappeared.
func changes(was, now store.Inputs) []string {
	var out []string
	if was.Prompt != now.Prompt {
		out = append(out, "the prompt")
	}
	if was.Launch != now.Launch {
		out = append(out, "the launch parameters")
	}
	old := map[string]string{}
	for _, f := range was.Files {
		old[f.Path] = f.SHA256
	}
	seen := map[string]bool{}
	for _, f := range now.Files {
		seen[f.Path] = true
		if sum, ok := old[f.Path]; !ok || sum != f.SHA256 {
			out = append(out, "input "+f.Path)
		}
	}
	for _, f := range was.Files {
		if !seen[f.Path] {
			out = append(out, "input "+f.Path)
		}
	}
	return out
}

// inputKindError is an input that is no regular file: a directory, whose
// state cannot be hashed, so the definition must declare the files in it;
// or, inside the run, a symbolic link, a named pipe, a socket or a device,
// which custodian neither follows nor reads.
type inputKindError struct {
	key  string
	kind store.FileKind
}

func (e inputKindError) Error() string {
	if e.kind == store.Directory {
		return fmt.Sprintf("input %s is a directory; declare the files in it", e.key)
	}
	return fmt.Sprintf("input %s is %s, which custodian neither follows nor reads; put a regular file there (a copy, not a link)", e.key, e.kind)
}
