// Package drive is the process layer of `custodian drive`: everything a
// worker process needs, and nothing about the run it works for.
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
// [UsageLimit]) and the tails of stdout and stderr.
//
// [ProcessStart], [Alive] and [EndGroup] identify a worker by its pid and
// its start time, so that a lease recorded by one custodian process can be
// checked, and its workers ended, by another: a pid alone may have been
// reused.
//
// A [Sink] shows a drive's [Event]s: a live view redrawn in place on a
// terminal, plain lines otherwise, or JSON lines; [NewSink] picks one.
//
// The package runs on Unix, and knows a process by its start time on Linux
// only (see ProcessStart).
//
// The loop that steps the run, holds the leases and records the evidence is
// the caller's. The package decides nothing about the run: a worker's exit
// status and final message are evidence, and acceptance stays with the step.
package drive
