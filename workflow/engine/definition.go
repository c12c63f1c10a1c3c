package engine

import (
	"fmt"

	"github.com/custodian-run/custodian/workflow"
)

// limits are the limits of a run of d with the parameters p: d's own,
// checked, or DefaultLimits.
func limits(d *workflow.Definition, p workflow.Params) (l workflow.Limits, err error) {
	l = workflow.DefaultLimits
	if d.Limits != nil {
		defer func() {
			if v := recover(); v != nil {
				err = &workflow.DefinitionError{Definition: d.Name, Rule: fmt.Sprintf("its Limits panicked: %v", v)}
			}
		}()
		l = d.Limits(p)
	}
	if l.Retries < 0 || l.Repairs < 0 || l.MaxOutput < 0 {
		return l, &workflow.DefinitionError{Definition: d.Name, Rule: fmt.Sprintf("limits {Retries:%d Repairs:%d MaxOutput:%d}: no limit may be negative", l.Retries, l.Repairs, l.MaxOutput)}
	}
	if l.MaxOutput == 0 {
		l.MaxOutput = workflow.DefaultMaxOutput
	}
	return l, nil
}

func repairScope(d *workflow.Definition) string {
	if d.RepairScope == "" {
		return workflow.DefaultRepairScope
	}
	return d.RepairScope
}
