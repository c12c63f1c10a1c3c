package engine

import "strings"

// Subject is what a block, a release or a resolve is about: a job, the
// definition's own code (workflow), or an effect. Its text is the job's
// name, "workflow", or "effect NAME": a job's name has no space, so the
// three cannot be mistaken for one another.
type Subject string

// WorkflowSubject is the definition's own code: the subject of its failures
// and its stops.
const WorkflowSubject Subject = "workflow"

// effectWord begins the text of an effect's subject.
const effectWord = "effect "

// JobSubject is the subject of the job name.
func JobSubject(name string) Subject { return Subject(name) }

// EffectSubject is the subject of the effect name.
func EffectSubject(name string) Subject { return Subject(effectWord + name) }

// Effect returns the effect's name when s is an effect.
func (s Subject) Effect() (string, bool) {
	name, ok := strings.CutPrefix(string(s), effectWord)
	return name, ok && name != ""
}

// Job returns the job's name when s is a job.
func (s Subject) Job() (string, bool) {
	if s == WorkflowSubject || s == "" || strings.Contains(string(s), " ") {
		return "", false
	}
	return string(s), true
}

// String returns the subject's text, as step prints it.
func (s Subject) String() string { return string(s) }
