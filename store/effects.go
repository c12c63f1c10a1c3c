package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// EffectFormat is the format of an effect journal this version reads and writes.
const EffectFormat = 1

// Effect statuses.
const (
	// EffectStarted: the effect was journaled before it ran, and its
	// completion was not recorded (yet).
	EffectStarted = "started"
	// EffectCompleted: the effect ran to its end, or the operator or a
	// recognizer established that it did.
	EffectCompleted = "completed"
	// EffectAbsent: the operator established that it did not take place; it
	// runs when the definition reaches it again. The journal is kept as
	// evidence instead of being deleted.
	EffectAbsent = "absent"
)

// Effect is an effect's journal, effects/<name>.json.
type Effect struct {
	Format int    `json:"format"`
	Name   string `json:"name"`
	Status string `json:"status"`
	// Inputs are the declared inputs, run-relative when inside the run, with
	// their hashes when the effect started (or was last resolved).
	Inputs []FileHash `json:"inputs"`
	// State is the digest of Inputs.
	State string `json:"state"`
	// Required is false once the operator let an effect that the definition
	// no longer reaches stand.
	Required bool `json:"required"`
	// Runs counts the times the effect was started.
	Runs int    `json:"runs"`
	At   string `json:"at"` // when Status was last set
	By   string `json:"by"` // "step", "recognizer" or "operator"
}

// Effects reads every effect journal, by name. A journal that cannot be
// trusted, including one whose name does not match its file, fails the
// whole read: an effect must never be repeated because its record was
// misread.
func (r *Run) Effects() (map[string]*Effect, error) {
	dir := r.path("effects")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*Effect{}, nil
	}
	if err != nil {
		return nil, &RecordError{Path: dir, Err: err}
	}
	out := map[string]*Effect{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") {
			continue // renameio's temporary files, left by a crash
		}
		path := r.path("effects", e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, &RecordError{Path: path, Err: err}
		}
		var eff Effect
		if err := decodeRecord(path, data, &eff, EffectFormat, func() int { return eff.Format }); err != nil {
			return nil, err
		}
		switch {
		case eff.Name != name:
			return nil, untrusted(path, "it journals effect %q, not %q", eff.Name, name)
		case eff.Status != EffectStarted && eff.Status != EffectCompleted && eff.Status != EffectAbsent:
			return nil, untrusted(path, "its status %q is not started, completed or absent", eff.Status)
		}
		out[name] = &eff
	}
	return out, nil
}

// SaveEffect replaces the effect's journal. label names the write point.
func (r *Run) SaveEffect(label string, e *Effect) error {
	e.Format = EffectFormat
	data, err := encode(e)
	if err != nil {
		return fmt.Errorf("journal effect %s: %w", e.Name, err)
	}
	return writeFile(label, r.path("effects", e.Name+".json"), data)
}

// EffectNames returns the names of effects, sorted.
func EffectNames(effects map[string]*Effect) []string {
	names := make([]string, 0, len(effects))
	for n := range effects {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
