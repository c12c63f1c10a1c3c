package store

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/custodian-run/custodian/internal/names"
)

// EffectFormat is the format of an effect journal this version reads and writes.
const EffectFormat = 2

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
	Run    string `json:"run"` // the run's id
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
// trusted, including one whose name does not match its file or that
// belongs to another run, fails the whole read: an effect must never be
// repeated because its record was misread.
func (r *Run) Effects() (map[string]*Effect, error) {
	dir := statePath("effects")
	names, err := r.tree.names(dir)
	if err != nil {
		return nil, &RecordError{Path: r.abs(dir), Err: err}
	}
	out := map[string]*Effect{}
	for _, file := range names {
		name, ok := strings.CutSuffix(file, ".json")
		if !ok || strings.HasPrefix(file, ".") {
			continue // temporary files, left by a crash
		}
		rel := path.Join(dir, file)
		var eff Effect
		found, err := r.readRecord(rel, &eff, EffectFormat, func() int { return eff.Format })
		if err != nil {
			return nil, err
		}
		if !found {
			continue // gone since the directory was read: a write renamed over it
		}
		if err := eff.check(); err != nil {
			return nil, &RecordError{Path: r.abs(rel), Err: err}
		}
		switch {
		case eff.Name != name:
			return nil, untrusted(r.abs(rel), "it journals effect %q, not %q", eff.Name, name)
		case eff.Run != r.Record.ID:
			return nil, untrusted(r.abs(rel), "it belongs to run %s, not to this run (%s)", eff.Run, r.Record.ID)
		}
		out[name] = &eff
	}
	return out, nil
}

// check holds a journal's fields to their rules.
func (e *Effect) check() error {
	switch {
	case !names.Valid(e.Name):
		return fmt.Errorf("name %q is not an effect's name", e.Name)
	case e.Status != EffectStarted && e.Status != EffectCompleted && e.Status != EffectAbsent:
		return fmt.Errorf("status %q is not started, completed or absent", e.Status)
	case e.Runs < 0:
		return fmt.Errorf("runs is negative")
	case !isHex(e.State, 64):
		return fmt.Errorf("state %q is not a SHA-256", e.State)
	}
	for i, f := range e.Inputs {
		if err := f.check(); err != nil {
			return fmt.Errorf("inputs[%d]: %w", i, err)
		}
	}
	return nil
}

// SaveEffect replaces the effect's journal. label names the write point.
func (r *Run) SaveEffect(label string, e *Effect) error {
	e.Format, e.Run = EffectFormat, r.Record.ID
	if !names.Valid(e.Name) {
		return fmt.Errorf("journal effect %q: not an effect's name", e.Name)
	}
	return r.writeRecord(label, statePath("effects", e.Name+".json"), e)
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
