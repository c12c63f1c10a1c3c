// Package names holds the one rule for the names of definitions, jobs,
// effects, parameters and patches: a plain lower-case identifier, so that a
// name is safe as a path component of the run's records and cannot be
// mistaken for a subject of another kind ("effect NAME", "workflow").
package names

import "fmt"

// MaxLen is the longest name.
const MaxLen = 63

// Valid says whether s is a name: ^[a-z][a-z0-9-]{0,62}$.
func Valid(s string) bool {
	if len(s) == 0 || len(s) > MaxLen || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Problem says what is wrong with the name of a what (a job, an effect,
// ...), or "" when it is valid.
func Problem(what, s string) string {
	switch {
	case Valid(s):
		return ""
	case len(s) > MaxLen:
		return fmt.Sprintf("%s name %q is %d characters long; a name has at most %d (workflow.JobName makes a short, stable name from data)",
			what, s, len(s), MaxLen)
	default:
		return fmt.Sprintf("%s name %q is not a plain lower-case identifier ([a-z][a-z0-9-]*)", what, s)
	}
}
