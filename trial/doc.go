// Package trial is custodian's harness trial kit: it sets up runs of the
// trial definition, one per scenario, and drives them the way an agent
// orchestrator would, so that the loop instruction can be tried in real
// harnesses (Claude Code, Codex) and the whole path tested end to end.
//
// [Setup] creates a run directory for a scenario, writes source.md (the text
// the two lenses analyse) and whatever the scenario needs, and starts the
// run. The scenarios are the trial definition's: clean, retry, problem, stop,
// stop-only, parameters, uncertain and busy; docs/trial.md describes what
// each one makes the agent orchestrator go through.
//
// The package does not import the definitions it sets up: the caller passes
// the registry and the trial definition's scenario list, so that a binary
// with a registry of its own can carry the kit too.
package trial
