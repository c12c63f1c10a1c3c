// Package drive is `custodian drive`: the agent orchestrator's loop carried
// out in code, with a worker process per hand-out.
//
// [Drive] steps the run, each step in a process of its own
// (`custodian step RUN --json`), launches one worker per hand-out within
// [Config.MaxParallel], waits for the round, and steps again, until the
// run is done, blocked or uncertain, or an interrupt ends it. It holds the
// run through an engine.Driver: the round in flight, a lease for each
// worker as it starts, and the evidence of every launch. It reports the
// stop as the loop instruction says, and never repairs.
//
// A [Profile] (claude, codex or exec) turns a hand-out into a [Command]: the
// command line that gives the worker the fixed [Instruction] and applies
// every launch parameter, the run directory to work in, and an environment
// scrubbed of the variables that make a nested agent misbehave. A launch
// parameter the profile cannot map is a [*LaunchError], never a launch
// without it.
//
// [Start] runs a Command in a process group of its own, with stdin on
// /dev/null, and watches it: a wall-clock timeout and an idle timeout end
// the whole group (SIGTERM, a grace period, SIGKILL), and so does
// [Worker.Kill]. [Worker.Wait] returns a [Result]: the [Outcome] word, the
// exit status, what the output says (the session id, the final message, a
// [UsageLimit]) and the tails of stdout and stderr. [EndGroup] ends the
// group of a worker another drive leased, by its pid and start time
// (internal/proc), so that a reused pid is never signalled.
//
// A [Sink] shows a drive's [Event]s: a live view redrawn in place on a
// terminal, plain lines otherwise, or JSON lines; [NewSink] picks one.
//
// The package runs on Unix, and knows a process by its start time on Linux
// only. A worker's exit status and final message are evidence: acceptance
// stays with the step.
package drive
