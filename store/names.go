package store

import "regexp"

// namePattern is the rule for every name the engine keeps: a definition, a
// job, an effect. A name is a plain lower-case identifier, so it is safe as
// a path component and cannot be mistaken for a subject of another kind.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// MaxNameLen is the longest name.
const MaxNameLen = 63

// ValidName says whether s is a valid name for a definition, a job or an
// effect.
func ValidName(s string) bool { return namePattern.MatchString(s) }
