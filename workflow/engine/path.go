package engine

import (
	"errors"
	"runtime"
	"runtime/debug"
)

// A path is a strand of the definition that can end at a wait: Run's own, or
// one given to Parallel or Gather. Each runs on a goroutine of its own, and
// ends with runtime.Goexit: deferred calls run, but no recover() in the
// definition can stop it, so a wait that did not pass cannot be caught and
// carried on from.

// runPath runs fn on a goroutine of its own, so that a path that ends with
// runtime.Goexit ends there and a panic is caught here, never by the
// definition. It reports whether fn returned.
func (r *replay) runPath(fn func() any) (value any, finished bool) {
	p, outer := &runningPath{}, r.active
	r.active = p
	defer func() {
		r.active = outer
		if finished && p.ended {
			// The end was called on a goroutine the definition started, and
			// the path went on: it caught what nothing may catch.
			if r.ruleErr == nil {
				r.ruleErr = r.rule("a path ended on a goroutine the definition started, and the path went on; " +
					"call Context methods only on the goroutine of Run or of a Parallel path")
			}
			finished = false
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if finished {
				return
			}
			if v := recover(); v != nil {
				r.fail(r.panicFailure(v, callers(0), debug.Stack()))
			}
		}()
		value = fn()
		finished = true
	}()
	<-done
	return value, finished
}

// runningPath is a path that runs: Run's, or one given to Parallel or Gather.
type runningPath struct {
	ended bool // the engine ended it
}

// endPath ends the calling path. It marks the running path first, so that
// an end called on a goroutine the definition started, which ends only
// that goroutine, is found when the path returns.
func (r *replay) endPath() {
	if r.active != nil {
		r.active.ended = true
	}
	runtime.Goexit()
}

// breakRule records the first rule the definition broke and ends the path.
// The step then fails with it, whatever the definition does after.
func (r *replay) breakRule(err error) {
	if r.ruleErr == nil {
		r.ruleErr = err
	}
	r.endPath()
}

// stopOn ends the calling path with err. An input that is no regular file
// is a failure where the definition named it, which a repair may mend (a
// file replaced by a folder or a link) or the definition must (a folder
// declared as an input); any other error is a broken rule or an I/O error, and ends the
// step.
func (r *replay) stopOn(err error) {
	var kind inputKindError
	if errors.As(err, &kind) {
		r.fail(r.errorFailure(err, r.place(callers(2))))
		r.endPath()
	}
	r.breakRule(err)
}
