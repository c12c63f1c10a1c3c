// Package workflow is custodian's engine and its authoring API.
//
// A workflow is an ordinary Go function, a [Definition]'s Run. Each step of a
// run ([Orchestrator.Step]) replays it from the top against the run's records
// on disk. [Context.Agent] names a job and returns a [Handle] at once;
// [Context.Wait] returns the accepted outputs of jobs, or ends the calling
// path for this step when one is not accepted. When no path can go on, the
// step hands out every named job that is not accepted, commits its records,
// and the process exits. Workers run between steps; the next step replays
// the definition again, and accepted outputs carry it past the waits that
// stopped it before. Acceptance is memoization.
//
// The package has two faces: the names an author writes a definition with,
// and the names a program drives a run with.
//
// # Writing a definition
//
// A [Definition] names the workflow (Name, Doc), bounds retries and repairs
// ([Limits], [DefaultLimits]), says what a repair may touch (RepairScope,
// [DefaultRepairScope]) and holds Run, which gets a [*Context]:
//
//   - [Context.Agent] names a [Job] (Name, Prompt, Output, Inputs, Launch,
//     Validate) and returns its [Handle] ([Handle.Wait], [Handle.Path],
//     [Handle.Accepted], [Handle.Name]);
//   - [Context.Wait] waits on handles; [Context.Parallel] and [Gather] run
//     paths that each name their jobs;
//   - [Context.Effect] runs a step once in the run, with [EffectInputs] and
//     a [Recognizer] given by [Recognize], which answers [Completed],
//     [Absent] or [Unknown];
//   - [Context.Stop] and [Stopf] stop the run; [Context.Fail] fails a path;
//   - [Context.RunDir], [Context.Path] and [Context.Params] ([Params]) say
//     where the run is and what it was started with.
//
// A [Validator] judges an output: nil accepts it, [Refuse] refuses it with
// messages for the next attempt. [ProblemPath] is where a worker reports a
// problem. A binary carries its definitions in a [Registry] ([NewRegistry]).
//
// # Replay rules
//
// A definition must follow these rules, because it runs again, from the top,
// at every step:
//
//  1. Name the same jobs when replayed on the same records. A job's name is
//     chosen by the definition and must not depend on the order in which
//     paths run, on the clock, on randomness, or on anything but the run's
//     parameters and the files a step may read.
//  2. Make every mechanical step (plain code that is not a job) safe to
//     repeat: the same files give the same result, and running it again
//     changes nothing further. It runs at every replay.
//  3. Read only declared inputs. A job's output is judged against the hashes
//     of its prompt, its launch parameters and its declared input files; a
//     worker or validator that reads an undeclared file makes the judgment
//     blind to that file's changes.
//  4. Wait before reading. A job may not declare as an input the output of a
//     job named in the same step and not accepted: wait on the producer
//     before naming the consumer. The engine refuses the definition
//     otherwise, whichever of the two is named first.
//  5. Give every path one owner. Each job owns its output and its problem
//     path (<stem>.problem.md beside the output); two jobs may not own one
//     path, and no job owns anything under .custodian/.
//  6. Do not catch the end of a path. Wait ends a path with runtime.Goexit on
//     the path's own goroutine: deferred calls run, but recover() cannot stop
//     it. Call Context methods only from the goroutine that Run or a Parallel
//     path runs on.
//  7. Do not start goroutines that call the Context, and do not rely on
//     Parallel running paths at the same time: it runs them one after
//     another, in order, so that every path names its jobs deterministically.
//     A path that goes on after a wait ended a goroutine of its own fails
//     the step with a DefinitionError.
//  8. Judge only the output and the job's declared inputs in a validator,
//     and choose a job's validator by nothing but the run's parameters and
//     the files a step may read: the same bytes made from the same inputs
//     get the same verdict. A
//     registry with a build ([Registry.WithBuild], which the shell sets to
//     [ExecutableBuild]) remembers which outputs its validators accepted,
//     and does not ask again until the bytes, the inputs or the build
//     change.
//  9. Never write a job's output from the definition's own code. A step
//     looks at the files its records name on the machine's other cores
//     while it reads its records, and takes what it found of an output for
//     the rest of the step: only workers write outputs, and they have
//     finished (a step that owes moves of outputs makes them first, and
//     looks anew). Any other file is looked at again after a job read it,
//     and one that a mechanical step wrote in between makes the step replay
//     the definition again, from the top, before it writes anything: a
//     mechanical step's writes are seen in the step that made them, as an
//     effect's are. A mechanical step that writes only what differs spares
//     its steps that second replay.
//
// # Failures
//
// An error returned by Run, an error given to [Context.Fail], or a panic in
// the definition's code blocks the run on the subject workflow. Failures are
// counted by place: the innermost line of the definition's own package, so a
// failure inside a shared helper or the standard library counts at the
// definition's line that called it (an error Run returns has no stack and is
// counted by its message). Two unrelated failures each get their repair; a
// step without failures starts every count over. [Context.Stop] and an error
// made by [Stopf] stop the run: the block permits only stopping.
//
// A definition that breaks a rule of the engine (two jobs own a path, a job
// reads an unaccepted output, a name is reused for another task) fails the
// step with a [DefinitionError], wrapping [ErrDefinition], and the step
// changes nothing. No recover() in the definition can hide it.
//
// # Driving a run
//
// [Start] starts a run of a registered definition and [Open] opens one; both
// return an [*Orchestrator], which reads the records anew at every call:
//
//   - [Orchestrator.Step] gives one [Outcome] of a [Kind]: [KindUncertain]
//     ([EffectState]), [KindBlocked] ([Block], with its [BlockKind],
//     [Subject] and [Permission]), [KindLaunch] ([Handout]) or [KindDone].
//     [Outcome.WriteText] prints it as `custodian step` does and
//     [ParseOutcome] reads that text back; its JSON is `step --json`'s.
//   - [Orchestrator.Report] records what only the agent orchestrator sees
//     ([ReportEvents]); [Orchestrator.Release] and [Orchestrator.Resolve]
//     are the operator's.
//   - [Orchestrator.Status] ([Status]) and [Orchestrator.Log] ([Event]) read
//     without writing.
//
// A [Prompt] is a prompt file's parts; [ParsePrompt] reads one. Every error
// maps to one exit code ([ExitCode], the table [ExitStatuses]) and a hint
// ([Hint]); callers branch on [ErrBusy], [ErrNotRun], [ErrUntrusted],
// [ErrDefinition], [ErrRefused] and [ErrUsage].
package workflow
