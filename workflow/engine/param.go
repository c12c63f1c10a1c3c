package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/workflow"
)

// ParamError is a run's parameter that its definition refuses: not
// declared, invalid, or required and not given.
type ParamError struct {
	Definition string
	Param      string // "" when the error is about a missing one
	Reason     string
	Declared   []workflow.Param
}

func (e *ParamError) Error() string {
	if e.Param == "" {
		return fmt.Sprintf("definition %s: %s", e.Definition, e.Reason)
	}
	return fmt.Sprintf("definition %s: parameter %s: %s", e.Definition, e.Param, e.Reason)
}

// Unwrap returns ErrUsage: the parameters are part of the command line
// that starts a run.
func (e *ParamError) Unwrap() error { return ErrUsage }

// Hint lists the parameters the definition declares.
func (e *ParamError) Hint() string {
	return "the parameters of " + e.Definition + " are: " + paramList(e.Declared)
}

// paramList says what parameters there are, for a hint or a listing.
func paramList(params []workflow.Param) string {
	if len(params) == 0 {
		return "none"
	}
	var items []string
	for _, p := range params {
		item := p.Name
		var notes []string
		if p.Doc != "" {
			notes = append(notes, p.Doc)
		}
		switch {
		case p.Required:
			notes = append(notes, "required")
		case p.Default != "":
			notes = append(notes, "default "+p.Default)
		}
		if len(notes) > 0 {
			item += " (" + strings.Join(notes, "; ") + ")"
		}
		items = append(items, item)
	}
	return strings.Join(items, ", ")
}

func param(d *workflow.Definition, name string) (workflow.Param, bool) {
	i := slices.IndexFunc(d.Params, func(p workflow.Param) bool { return p.Name == name })
	if i < 0 {
		return workflow.Param{}, false
	}
	return d.Params[i], true
}

// checkParams holds a run's parameters to the definition's declarations:
// each given one declared and valid, each required one given.
func checkParams(d *workflow.Definition, params workflow.Params) error {
	bad := func(name, format string, args ...any) error {
		return &ParamError{Definition: d.Name, Param: name, Reason: fmt.Sprintf(format, args...), Declared: d.Params}
	}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		p, ok := param(d, name)
		if !ok {
			return bad(name, "the definition does not declare it")
		}
		if p.Validate != nil {
			if err := validateParam(p, params[name]); err != nil {
				return bad(name, "%q is not valid: %v", params[name], err)
			}
		}
	}
	for _, p := range d.Params {
		if _, given := params[p.Name]; p.Required && !given {
			return bad("", "parameter %s is required; give it with --param %s=VALUE", p.Name, p.Name)
		}
	}
	return nil
}

// validateParam runs a parameter's validator, which is the definition's
// code: a panic is its refusal.
func validateParam(p workflow.Param, value string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("its validator panicked: %v", v)
		}
	}()
	return p.Validate(value)
}

// withDefaults returns params with the default of every declared parameter
// that is not given.
func withDefaults(d *workflow.Definition, params workflow.Params) workflow.Params {
	all := maps.Clone(params)
	if all == nil {
		all = workflow.Params{}
	}
	for _, p := range d.Params {
		if _, ok := all[p.Name]; !ok {
			all[p.Name] = p.Default
		}
	}
	return all
}
