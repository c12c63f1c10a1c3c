package engine

import "strings"

// Subject is what a block, a release, a resolve or a decision is about: a
// job, the definition's own code (workflow), an effect, or a question the
// definition asks the operator. Its text is the job's name, "workflow",
// "effect NAME" or "decision NAME": a job's name has no space, so they
// cannot be mistaken for one another.
type Subject string

// WorkflowSubject is the definition's own code: the subject of its failures
// and its stops.
const WorkflowSubject Subject = "workflow"

// effectWord begins the text of an effect's subject.
const effectWord = "effect "

// decisionWord begins the text of a question's subject.
const decisionWord = "decision "

// JobSubject is the subject of the job name.
func JobSubject(name string) Subject { return Subject(name) }

// EffectSubject is the subject of the effect name.
func EffectSubject(name string) Subject { return Subject(effectWord + name) }

// DecisionSubject is the subject of the question name (Context.Decide).
func DecisionSubject(name string) Subject { return Subject(decisionWord + name) }

// Decision returns the question's name when s is a question.
func (s Subject) Decision() (string, bool) {
	name, ok := strings.CutPrefix(string(s), decisionWord)
	return name, ok && name != ""
}

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
