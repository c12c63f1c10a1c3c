package workflow

import "path/filepath"

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
	output   string // run-relative: made absolute when asked for, which most definitions never do of most jobs
	accepted bool
}

// Name returns the job's name.
func (h *Handle) Name() string { return h.name }

// Path returns the absolute path of the job's output.
func (h *Handle) Path() string { return h.ctx.r.abs(h.output) }

// Accepted says whether the job's output is accepted in this step.
func (h *Handle) Accepted() bool { return h.accepted }

// Wait returns the job's accepted output path, or ends the calling path for
// this step when the job is not accepted.
func (h *Handle) Wait() string { return h.ctx.Wait(h)[0] }

// RunDir returns the run directory, absolute.
func (c *Context) RunDir() string { return c.r.dir }

// Path returns the absolute path of rel inside the run directory.
func (c *Context) Path(rel string) string {
	c.r.look(rel)
	return filepath.Join(c.r.dir, filepath.FromSlash(rel))
}

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

// Wait returns the accepted output paths of the handles, in the order given.
// If any of them is not accepted, the calling path ends here for this step:
// nothing in the definition can catch that, not even recover().
func (c *Context) Wait(handles ...*Handle) []string {
	paths := make([]string, len(handles))
	for i, h := range handles {
		if !h.accepted {
			c.r.endPath()
		}
		paths[i] = h.Path()
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
