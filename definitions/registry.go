// Package definitions holds the registry built into the custodian binary:
// the trial definition (from package trial), which tries the loop in real
// harnesses and tests the whole path, and review, the worked example of
// docs/authoring.md. An
// author's own binary registers its own definitions the same way: build a
// workflow.Registry and hand it to the shell.
package definitions

import (
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow"
)

// Builtin returns a registry of the built-in definitions.
func Builtin() *workflow.Registry {
	reg, err := workflow.NewRegistry(trial.Definition, Review)
	if err != nil {
		// The built-in definitions are fixed at compile time; a test registers them.
		panic(err)
	}
	return reg
}
