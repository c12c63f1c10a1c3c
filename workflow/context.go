package workflow

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
)

// Context is what a definition's Run gets: the run it replays, and the calls
// that name jobs, wait on them and run paths. Call its methods only from the
// goroutine Run or a Parallel path runs on.
type Context struct {
	r *replay
}

// Handle is a named job. It comes back from Agent at once; whether the job
// is accepted was decided when it was named.
type Handle struct {
	ctx      *Context
	name     string
	path     string
	accepted bool
}

// Name returns the job's name.
func (h *Handle) Name() string { return h.name }

// Path returns the absolute path of the job's output.
func (h *Handle) Path() string { return h.path }

// Accepted says whether the job's output is accepted in this step.
func (h *Handle) Accepted() bool { return h.accepted }

// Wait returns the job's accepted output path, or ends the calling path for
// this step when the job is not accepted.
func (h *Handle) Wait() string { return h.ctx.Wait(h)[0] }

// RunDir returns the run directory, absolute.
func (c *Context) RunDir() string { return c.r.dir }

// Path returns the absolute path of rel inside the run directory.
func (c *Context) Path(rel string) string { return filepath.Join(c.r.dir, filepath.FromSlash(rel)) }

// Params returns the run's parameters.
func (c *Context) Params() Params { return c.r.params }

// Agent names a job and returns its handle at once. A job that is not
// accepted is handed out at the end of the step whether or not anything
// waits on it. Naming a job again in one step returns the first handle, with
// the first declaration's validator; naming another task under the same
// name is a definition error.
func (c *Context) Agent(j Job) *Handle {
	h, err := c.r.agent(c, j)
	if err != nil {
		c.r.stopOn(err)
	}
	return h
}

// stopOn ends the calling path with err. An input that is a directory is a
// failure where the definition named it, which a repair may mend (a file
// replaced by a folder) or the definition must (a folder declared as an
// input); any other error is a broken rule or an I/O error, and ends the
// step.
func (r *replay) stopOn(err error) {
	var dir directoryInputError
	if errors.As(err, &dir) {
		r.fail(r.errorFailure(err, r.place(callers(2))))
		r.endPath()
	}
	r.breakRule(err)
}

// Wait returns the accepted output paths of the handles, in the order given.
// If any of them is not accepted, the calling path ends here for this step:
// nothing in the definition can catch that, not even recover().
func (c *Context) Wait(handles ...*Handle) []string {
	paths := make([]string, len(handles))
	for i, h := range handles {
		if !h.accepted {
			c.r.endPath()
		}
		paths[i] = h.path
	}
	return paths
}

// Parallel runs independent paths one after another, each to its end or to
// its first unsatisfied wait, so that every path names its jobs. When any
// path ended early or failed, the calling path ends after all have run.
func (c *Context) Parallel(paths ...func()) {
	fns := make([]func() any, len(paths))
	for i, p := range paths {
		fns[i] = func() any { p(); return nil }
	}
	c.gather(fns)
}

// Gather runs paths as Parallel does and returns each path's value, in
// order.
func Gather[T any](c *Context, paths ...func() T) []T {
	fns := make([]func() any, len(paths))
	for i, p := range paths {
		fns[i] = func() any { return p() }
	}
	values := c.gather(fns)
	out := make([]T, len(values))
	for i, v := range values {
		out[i], _ = v.(T) // a nil interface value stays the zero T
	}
	return out
}

func (c *Context) gather(paths []func() any) []any {
	values := make([]any, len(paths))
	all := true
	for i, p := range paths {
		v, finished := c.r.runPath(p)
		values[i] = v
		all = all && finished
	}
	if !all {
		c.r.endPath()
	}
	return values
}

// Stop ends the calling path and stops the run: a block on workflow that
// permits only stopping, until the operator releases it. Use it when no
// repair within the scope can help.
func (c *Context) Stop(reason string) {
	c.r.fail(failure{stop: true, message: reason, place: "stop"})
	c.r.endPath()
}

// Fail ends the calling path with err as a failure of the definition's code,
// counted at the line that called Fail. It is Run's `return err` for code
// deep in a path.
func (c *Context) Fail(err error) {
	c.r.fail(c.r.errorFailure(err, c.r.place(callers(2))))
	c.r.endPath()
}

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

// failure is a failure of the definition's own code in one step.
type failure struct {
	kind     BlockKind // empty for an error or a panic
	stop     bool
	returned bool   // an error Run returned, counted by its message
	message  string // one line
	place    string // where it is counted
	detail   string // the stack or the error's text, for the block record
}

func (r *replay) fail(f failure) { r.failures = append(r.failures, f) }

// errorFailure is a failure for an error counted at place. An error that
// Run returns carries no stack, so it is counted by its message.
func (r *replay) errorFailure(err error, place string) failure {
	if stop, ok := asStop(err); ok {
		return failure{stop: true, message: stop, place: "stop"}
	}
	msg := firstLine("error: " + err.Error())
	f := failure{message: msg, place: place, detail: err.Error()}
	if place == "" {
		f.place, f.returned = "returned "+msg, true
	}
	return f
}

func asStop(err error) (string, bool) {
	var s *stopError
	if errors.As(err, &s) {
		return s.reason, true
	}
	if errors.Is(err, ErrStop) {
		return err.Error(), true
	}
	return "", false
}

func (r *replay) panicFailure(v any, pcs []uintptr, stack []byte) failure {
	if err, ok := v.(error); ok {
		if stop, ok := asStop(err); ok {
			return failure{stop: true, message: stop, place: "stop"}
		}
	}
	return failure{message: firstLine(fmt.Sprintf("panic: %v", v)), place: r.place(pcs), detail: string(stack)}
}

// place is where a failure is counted: the innermost frame in the
// definition's own package, so that a failure inside a shared helper or the
// standard library counts at the definition's line that called it.
func (r *replay) place(pcs []uintptr) string {
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, r.defPkg+".") {
			return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return "outside the definition's code"
		}
	}
}

func callers(skip int) []uintptr {
	pcs := make([]uintptr, 64)
	return pcs[:runtime.Callers(skip+1, pcs)]
}

// funcPackage returns the import path of the package that declares fn.
func funcPackage(fn any) string {
	name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	slash := strings.LastIndex(name, "/")
	if dot := strings.Index(name[slash+1:], "."); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
