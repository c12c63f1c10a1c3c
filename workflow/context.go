package workflow

import "github.com/custodian-run/custodian/workflow/internal/seam"

// Context is what a definition's Run gets: the run it replays, and the calls
// that name jobs, wait on them and run paths. Call its methods only from the
// goroutine Run or a Parallel path runs on.
type Context struct {
	r replayer
	// handles are the jobs named in this step, by name: naming one again
	// gives its first handle.
	handles map[string]*Handle
}

// replayer is what a Context calls: package engine's replay of one step.
// It ends the calling path itself where the rules say so (EndPath, a
// broken rule, a failure), with runtime.Goexit, which nothing in the
// definition can catch.
type replayer interface {
	RunDir() string
	Path(rel string) string
	Param(name string) string
	Patched(name string) bool
	// Agent judges the job and returns its output's absolute path and
	// whether it is accepted.
	Agent(j Job) (output string, accepted bool)
	Effect(name string, do func() error, inputs []string, recognize Recognizer)
	// RunPath runs fn as a path of its own and says whether it returned.
	RunPath(fn func() any) (value any, finished bool)
	EndPath()
	Stop(reason string)
	Fail(err error)
	// Decide returns the operator's recorded choice, or ends the calling
	// path when there is none.
	Decide(name, question string, choices []string) string
}

func init() {
	seam.NewContext = func(r any) any { return &Context{r: r.(replayer), handles: map[string]*Handle{}} }
}

// Handle is a named job. It comes back from Agent at once; whether the job
// is accepted was decided when it was named.
type Handle struct {
	ctx      *Context
	name     string
	output   string // absolute
	accepted bool
}

// Name returns the job's name.
func (h *Handle) Name() string { return h.name }

// Path returns the absolute path of the job's output.
func (h *Handle) Path() string { return h.output }

// Accepted says whether the job's output is accepted in this step.
func (h *Handle) Accepted() bool { return h.accepted }

// Wait returns the job's accepted output path, or ends the calling path for
// this step when the job is not accepted.
func (h *Handle) Wait() string { return h.ctx.Wait(h)[0] }

// RunDir returns the run directory, absolute.
func (c *Context) RunDir() string { return c.r.RunDir() }

// Path returns the absolute path of rel inside the run directory. A path
// the definition asks for is one it looks at: when a replay that ran to
// its end names fewer jobs while every such path holds what it held, the
// definition's code, not the run's course, dropped them.
func (c *Context) Path(rel string) string { return c.r.Path(rel) }

// Param returns the run's parameter name, or its declared default. Reading
// a parameter the definition does not declare is a definition error: a
// parameter is part of a run's contract, which `custodian definitions`
// shows and `start` checks.
func (c *Context) Param(name string) string { return c.r.Param(name) }

// Patched says whether the run was started by a binary whose definition
// declared the patch name: true for runs started after the change the
// patch names, so that they take the new code, and false for runs started
// before it, which keep the old. name must be one of Definition.Patches.
func (c *Context) Patched(name string) bool { return c.r.Patched(name) }

// Agent names a job and returns its handle at once. A job that is not
// accepted is handed out at the end of the step whether or not anything
// waits on it. Naming a job again in one step returns a handle to the
// first declaration, with its validator; naming another task under the
// same name is a definition error.
func (c *Context) Agent(j Job) *Handle {
	output, accepted := c.r.Agent(j)
	if h := c.handles[j.Name]; h != nil {
		return h
	}
	h := &Handle{ctx: c, name: j.Name, output: output, accepted: accepted}
	c.handles[j.Name] = h
	return h
}

// Wait returns the accepted output paths of the handles, in the order given.
// If any of them is not accepted, the calling path ends here for this step:
// nothing in the definition can catch that, not even recover().
func (c *Context) Wait(handles ...*Handle) []string {
	paths := make([]string, len(handles))
	for i, h := range handles {
		if !h.accepted {
			c.r.EndPath()
		}
		paths[i] = h.output
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
		v, finished := c.r.RunPath(p)
		values[i] = v
		all = all && finished
	}
	if !all {
		c.r.EndPath()
	}
	return values
}

// Decide asks the operator question and returns the choice they recorded,
// one of choices. Until they record one (`custodian decide RUN NAME
// CHOICE`), the calling path ends here for this step, as at a wait on a
// job that is not accepted, and the step blocks on `decision NAME` with the
// kind awaiting-decision, which permits only stopping: nothing is handed
// out while a question is open. A replay returns the recorded choice.
//
// name names the question in the run, as a job's name names a job: a loop
// that asks at every round asks under a name of each round's own. Choices
// are names too (lower-case words joined by hyphens), which the operator
// types. Asking one name with another question or other choices in one
// step is a definition error; a recorded choice that the definition no
// longer offers is asked again.
func (c *Context) Decide(name, question string, choices ...string) string {
	return c.r.Decide(name, question, choices)
}

// Stop ends the calling path and stops the run: a block on workflow that
// permits only stopping, until the operator releases it. Use it when no
// repair within the scope can help.
func (c *Context) Stop(reason string) { c.r.Stop(reason) }

// Fail ends the calling path with err as a failure of the definition's code,
// counted at the line that called Fail. It is Run's `return err` for code
// deep in a path.
func (c *Context) Fail(err error) { c.r.Fail(err) }
