package workflow

import (
	"fmt"

	"github.com/custodian-run/custodian/internal/names"
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

// checkDeclarations holds the declarations themselves to their rules.
func (d *Definition) checkDeclarations() error {
	seen := map[string]bool{}
	for _, p := range d.Params {
		if pr := names.Problem("parameter", p.Name); pr != "" {
			return fmt.Errorf("register definition %s: %s: %w", d.Name, pr, ErrDefinition)
		}
		if seen[p.Name] {
			return fmt.Errorf("register definition %s: parameter %s is declared twice: %w", d.Name, p.Name, ErrDefinition)
		}
		seen[p.Name] = true
	}
	for _, name := range d.Patches {
		if pr := names.Problem("patch", name); pr != "" {
			return fmt.Errorf("register definition %s: %s: %w", d.Name, pr, ErrDefinition)
		}
	}
	return nil
}
