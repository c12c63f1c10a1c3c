package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// InputStateVersion is the version of the input-state algorithm below. A run
// records it in state.json; a run hashed by another version is refused
// rather than judged, because every acceptance in it would read as changed.
// Changing the algorithm in any way means a new version. docs/hashing.md
// states the algorithm for other implementations.
const InputStateVersion = 1

// inputState computes a job's input state now: the SHA-256 of its prompt, of
// its canonical launch parameters, and of each declared input's bytes. The
// hashes come from hs, which may be nil.
func inputState(runDir string, s *spec, hs *hashes) (store.Inputs, error) {
	in := store.Inputs{
		Prompt: sha256Hex([]byte(s.job.Prompt)),
		Launch: sha256Hex(s.launch),
		Files:  make([]store.FileHash, 0, len(s.inputs)),
	}
	for _, key := range s.inputs {
		p := key
		if !filepath.IsAbs(filepath.FromSlash(key)) {
			p = filepath.Join(runDir, filepath.FromSlash(key))
		}
		sum, err := hs.of(p)
		if err != nil {
			return in, fmt.Errorf("hash input %s: %w", key, err)
		}
		if sum == "" {
			if info, err := os.Stat(p); err == nil && info.IsDir() {
				return in, directoryInputError{key}
			}
		}
		in.Files = append(in.Files, store.FileHash{Path: key, SHA256: sum})
	}
	in.Digest = digest(in)
	return in, nil
}

// hashes remembers, for one step, the hash of each file it read, so that an
// input many jobs share is read once, not once per job. A file is hashed
// again when its size, time or identity changed since, as when the
// definition's own code rewrote it during the replay.
type hashes struct {
	files map[string]hashed
}

type hashed struct {
	info os.FileInfo
	sum  string
}

// of returns the SHA-256 of the regular file at path, or "" when there is
// none. A nil *hashes hashes every time.
func (hs *hashes) of(path string) (string, error) {
	if hs == nil {
		return store.FileSHA256(path)
	}
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		return store.FileSHA256(path)
	}
	if h, ok := hs.files[path]; ok && h.info.Size() == info.Size() &&
		h.info.ModTime().Equal(info.ModTime()) && os.SameFile(h.info, info) {
		return h.sum, nil
	}
	sum, err := store.FileSHA256(path)
	if err != nil {
		return "", err
	}
	if hs.files == nil {
		hs.files = map[string]hashed{}
	}
	hs.files[path] = hashed{info: info, sum: sum}
	return sum, nil
}

// digest hashes the parts of an input state with length-prefixed fields, so
// that no two different states share an encoding:
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
	field("launch", in.Launch)
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

// directoryInputError is an input that names a directory: its state cannot be
// hashed, so the definition must declare the files in it.
type directoryInputError struct{ key string }

func (e directoryInputError) Error() string {
	return fmt.Sprintf("input %s is a directory; declare the files in it", e.key)
}
