// Package relay carries custodian drive's loop on Temporal, so that a
// run's workers can run on any number of hosts and its loop outlives the
// process that drives it.
//
// custodian keeps deciding: every step is taken on the run's host, by the
// custodian binary, against the run's records. Temporal carries the loop:
// [Loop] is a Temporal workflow that takes a step (an activity of [Host],
// on a task queue only the run's host serves), launches one worker per
// hand-out as an activity of [Launcher] on the workers' task queue, which
// any host may serve, and steps again as workers end, until the run is
// done, blocked or uncertain. The workflow's history is its memory: a
// coordinator that dies is replaced by the next one, which goes on where
// the history stands.
//
// Temporal memoizes by the order of events, not by what a step judged, so
// nothing of custodian's judging moves into the workflow. Each activity is
// idempotent by the run's own records: a step is asked for by its number
// and taken once, a launch's evidence is recorded once, a lease that comes
// after its launch's end is not taken.
//
// A worker whose activity Temporal has given up on may still run: Temporal
// does not end the processes of a lost worker host. So the job stays held
// until its attempt can write no more: the lease the worker host gave
// ([LeasedSignal]) ends when the run's host sees the worker's processes
// gone, or when it expires, a bound past which the worker host's own
// watchdog has ended the worker (LeaseBound). Only then is the launch
// recorded lost and the job handed out again, not charged.
package relay
