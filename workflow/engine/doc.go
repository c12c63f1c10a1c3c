// Package engine drives custodian runs: it starts and opens them, steps
// them, and carries out what the operator and the agent orchestrator
// record. The author's side, the definitions it runs, is package workflow.
//
// [Start] starts a run of a registered definition and [Open] opens one;
// both return a [*Run], which reads the records anew at every call:
//
//   - [Run.Step] replays the definition from the top, judges every job it
//     names and commits, then gives one [Outcome] of a [Kind]:
//     [KindUncertain] ([EffectState]), [KindBlocked] ([Block], with its
//     [BlockKind], [Subject] and [Permission]), [KindLaunch] ([Handout]) or
//     [KindDone]. [Outcome.WriteText] prints it as `custodian step` does and
//     [ParseOutcome] reads that text back; its JSON is `step --json`'s.
//   - [Run.Report] records what only the agent orchestrator sees
//     ([ReportEvents]); [Run.Release], [Run.Resolve] and [Run.Abandon] are
//     the operator's.
//   - [Run.Status] ([Status]), [Run.Log] ([Event]) and [Run.Check]
//     ([Check]) read without writing.
//   - [Run.Driver] is the run as a custodian drive holds it ([Driver]):
//     its round of workers, their leases and the evidence of each launch.
//
// A step is two halves: a decision, which replays the definition and plans
// what to write, and its application, which writes the plan in the order
// docs/crash-points.md gives. Only an effect's journal is written while the
// definition runs, because the process may end inside the effect.
//
// A [Prompt] is a prompt file's parts; [ParsePrompt] reads one. Every error
// maps to one exit code ([ExitCode], the table [ExitStatuses]) and a hint
// ([Hint]); callers branch on [ErrBusy], [ErrNotRun], [ErrUntrusted],
// [workflow.ErrDefinition], [ErrRefused] and [ErrUsage].
package engine
