package store

import "regexp"

// namePattern is the rule for every name the engine keeps: a definition, a
// job, an effect. A name is a plain lower-case identifier, so it is safe as
// a path component and cannot be mistaken for a subject of another kind.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// MaxNameLen is the longest name.
const MaxNameLen = 63

// ValidName says whether s is a valid name for a definition, a job or an
// effect: it matches namePattern, checked byte by byte, since a state of
// ten thousand jobs checks tens of thousands of names.
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
