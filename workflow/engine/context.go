package engine

import (
	"path/filepath"
	"slices"

	"github.com/custodian-run/custodian/workflow"
)

// The methods below are what a workflow.Context calls: a replay stands
// behind every Context it hands a definition (workflow/internal/seam).
// Each runs on the goroutine of the path that called it, and ends that
// path where the rules say so.

// RunDir returns the run directory, absolute.
func (r *replay) RunDir() string { return r.dir }

// Path notes rel as a path the definition looked at, and returns it
// absolute.
func (r *replay) Path(rel string) string {
	r.look(rel)
	return filepath.Join(r.dir, filepath.FromSlash(rel))
}

// Param returns the run's parameter name, or its default; a parameter the
// definition does not declare breaks a rule.
func (r *replay) Param(name string) string {
	if _, ok := param(r.def, name); !ok {
		r.breakRule(r.rule("Run reads parameter %s, which the definition does not declare; declare it in Definition.Params", name))
	}
	return r.params[name]
}

// Patched says whether the run has the patch name, which the definition
// must declare.
func (r *replay) Patched(name string) bool {
	if !slices.Contains(r.def.Patches, name) {
		r.breakRule(r.rule("Run asks for patch %s, which the definition does not declare; add it to Definition.Patches", name))
	}
	return slices.Contains(r.patches, name)
}

// Agent names and judges the job j, and returns its output's absolute
// path and whether it is accepted.
func (r *replay) Agent(j workflow.Job) (output string, accepted bool) {
	n, err := r.agent(j)
	if err != nil {
		r.stopOn(err)
	}
	return r.abs(n.spec.output), n.verdict == verdictAccepted
}

// RunPath runs fn as a path of its own.
func (r *replay) RunPath(fn func() any) (value any, finished bool) { return r.runPath(fn) }

// EndPath ends the calling path for this step.
func (r *replay) EndPath() { r.endPath() }

// Stop stops the run for the reason given, and ends the calling path.
func (r *replay) Stop(reason string) {
	r.fail(failure{stop: true, message: reason, place: "stop"})
	r.endPath()
}

// Fail ends the calling path with err as a failure of the definition's
// code, counted at the definition's line that called Context.Fail.
func (r *replay) Fail(err error) {
	r.fail(r.errorFailure(err, r.place(callers(2))))
	r.endPath()
}
