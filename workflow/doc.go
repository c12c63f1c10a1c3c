// Package workflow is what an author writes a custodian workflow with.
//
// A workflow is an ordinary Go function, a [Definition]'s Run. The engine
// (package workflow/engine) replays it from the top at every step of a run,
// against the run's records on disk. [Context.Agent] names a job and
// returns a [Handle] at once; [Context.Wait] returns the accepted outputs
// of jobs, or ends the calling path for this step when one is not accepted.
// When no path can go on, the step hands out every named job that is not
// accepted, commits its records, and the process exits. Workers run between
// steps; the next step replays the definition again, and accepted outputs
// carry it past the waits that stopped it before. Acceptance is
// memoization.
//
// # Writing a definition
//
// A [Definition] names the workflow (Name, Doc), bounds retries and repairs
// ([Limits], [DefaultLimits]), says what a repair may touch (RepairScope,
// [DefaultRepairScope]), declares its parameters ([Param]) and patches, and
// holds Run, which gets a [*Context]:
//
//   - [Context.Agent] names a [Job] (Name, Prompt, Output, Inputs, Launch,
//     Validate) and returns its [Handle] ([Handle.Wait], [Handle.Path],
//     [Handle.Accepted], [Handle.Name]); [JobName] makes a job's name from
//     data;
//   - [Context.Wait] waits on handles; [Context.Parallel] and [Gather] run
//     paths that each name their jobs;
//   - [Context.Effect] runs a step once in the run, with [EffectInputs] and
//     a [Recognizer] given by [Recognize], which answers [Completed],
//     [Absent] or [Unknown];
//   - [Context.Decide] asks the operator a question and returns their
//     recorded choice, or ends the calling path until there is one;
//   - [Context.Stop] and [Stopf] stop the run; [Context.Fail] fails a path;
//   - [Context.RunDir], [Context.Path], [Context.Param] and
//     [Context.Patched] say where the run is and what it was started with.
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
//     blind to that file's changes. A validator runs at every judgment.
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
package workflow
