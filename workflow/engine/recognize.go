package engine

import (
	"fmt"

	"github.com/custodian-run/custodian/workflow"
)

// recognize asks a recognizer, turning its absence, its failure or a panic
// into Unknown with the reason.
func recognize(rec workflow.Recognizer) (result workflow.Recognition, why string) {
	if rec == nil {
		return workflow.Unknown, "the definition gives no recognizer"
	}
	defer func() {
		if v := recover(); v != nil {
			result, why = workflow.Unknown, fmt.Sprintf("the recognizer failed: %v", v)
		}
	}()
	got, err := rec()
	switch {
	case err != nil:
		return workflow.Unknown, "the recognizer failed: " + err.Error()
	case got == workflow.Completed || got == workflow.Absent:
		return got, ""
	case got.Reason() != "":
		return workflow.Unknown, "the recognizer established: " + got.Reason()
	default:
		return workflow.Unknown, "the recognizer could not establish whether it took place"
	}
}
