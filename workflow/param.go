package workflow

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Param declares a parameter of a definition's runs. A run is started with
// its parameters and keeps them: a parameter cannot change in a run.
type Param struct {
	// Name is how the parameter is given: --param NAME=VALUE. A plain
	// lower-case identifier.
	Name string
	// Doc says what it is, in one line; custodian definitions lists it.
	Doc string
	// Default is its value in a run started without it.
	Default string
	// Required means a run cannot start without it.
	Required bool
	// Validate checks a value; nil accepts any. Its error says what a
	// valid value is.
	Validate func(value string) error
}

// ParamError is a run's parameter that its definition refuses: not
// declared, invalid, or required and not given.
type ParamError struct {
	Definition string
	Param      string // "" when the error is about a missing one
	Reason     string
	Declared   []Param
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
func paramList(params []Param) string {
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

func (d *Definition) param(name string) (Param, bool) {
	i := slices.IndexFunc(d.Params, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return d.Params[i], true
}

// checkParams holds a run's parameters to the definition's declarations:
// each given one declared and valid, each required one given.
func (d *Definition) checkParams(params Params) error {
	bad := func(name, format string, args ...any) error {
		return &ParamError{Definition: d.Name, Param: name, Reason: fmt.Sprintf(format, args...), Declared: d.Params}
	}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		p, ok := d.param(name)
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
func validateParam(p Param, value string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("its validator panicked: %v", v)
		}
	}()
	return p.Validate(value)
}

// withDefaults returns params with the default of every declared parameter
// that is not given.
func (d *Definition) withDefaults(params Params) Params {
	all := maps.Clone(params)
	if all == nil {
		all = Params{}
	}
	for _, p := range d.Params {
		if _, ok := all[p.Name]; !ok {
			all[p.Name] = p.Default
		}
	}
	return all
}

// checkDeclarations holds the declarations themselves to their rules.
func (d *Definition) checkDeclarations() error {
	seen := map[string]bool{}
	for _, p := range d.Params {
		if pr := nameProblem("parameter", p.Name); pr != "" {
			return fmt.Errorf("register definition %s: %s: %w", d.Name, pr, ErrDefinition)
		}
		if seen[p.Name] {
			return fmt.Errorf("register definition %s: parameter %s is declared twice: %w", d.Name, p.Name, ErrDefinition)
		}
		seen[p.Name] = true
	}
	for _, name := range d.Patches {
		if pr := nameProblem("patch", name); pr != "" {
			return fmt.Errorf("register definition %s: %s: %w", d.Name, pr, ErrDefinition)
		}
	}
	return nil
}

// Param returns the run's parameter name, or its declared default. Reading
// a parameter the definition does not declare is a definition error: a
// parameter is part of a run's contract, which `custodian definitions`
// shows and `start` checks.
func (c *Context) Param(name string) string {
	if _, ok := c.r.def.param(name); !ok {
		c.r.breakRule(c.r.rule("Run reads parameter %s, which the definition does not declare; declare it in Definition.Params", name))
	}
	return c.r.params[name]
}
