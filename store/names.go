package store

// MaxNameLen is the longest name.
const MaxNameLen = 63

// ValidName says whether s is a valid name for a definition, a job or an
// effect: a plain lower-case identifier, ^[a-z][a-z0-9-]{0,62}$, so that
// it is safe as a path component and cannot be mistaken for a subject of
// another kind. FuzzValidName holds it to the expression.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
