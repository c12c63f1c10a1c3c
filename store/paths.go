package store

import (
	"fmt"
	"path"
)

// The paths of a run's records, relative to the run directory and written
// with slashes, as records and outcomes name them. See the package
// documentation for the layout.

// PromptPath is where the prompt of a job's n-th hand-out is written.
func PromptPath(job string, n int) string {
	return fmt.Sprintf("%s/jobs/%s/prompt-%d.md", StateDir, job, n)
}

// JobBlockPath is where a job's n-th block record is written.
func JobBlockPath(job string, n int) string {
	return fmt.Sprintf("%s/jobs/%s/block-%d.md", StateDir, job, n)
}

// WorkflowBlockPath is where the n-th block record of the definition's own
// code is written.
func WorkflowBlockPath(n int) string {
	return fmt.Sprintf("%s/workflow/block-%d.md", StateDir, n)
}

// EffectBlockPath is where an effect's block record is written; it is
// judged anew, and written again, at every step.
func EffectBlockPath(effect string) string {
	return fmt.Sprintf("%s/effect-blocks/%s.md", StateDir, effect)
}

// CarriedPath is where an uncertain step, which counts nothing, writes the
// record of a block it carries instead of the numbered record at rel.
func CarriedPath(rel string, step int) string {
	return fmt.Sprintf("%s/carried-by-step-%d.md", path.Dir(rel), step)
}

// KeptPath is where the k-th file the run moved aside, once at rel, is kept
// for job.
func KeptPath(job string, k int, rel string) string {
	return fmt.Sprintf("%s/jobs/%s/kept/%d-%s", StateDir, job, k, path.Base(rel))
}

// DecisionBlockPath is where the block record of a question the definition
// asks the operator is written; it is written again at every step that
// asks it.
func DecisionBlockPath(name string) string {
	return fmt.Sprintf("%s/decision-blocks/%s.md", StateDir, name)
}
