package engine

import "strings"

// Map says that the files a run recorded under the absolute directory Old
// are found under New now: a run recorded on one machine is replayed on
// another, with its inputs outside the run in another place. Inputs inside
// the run need no map: records hold them relative to the run.
type Map struct {
	Old, New string
}

// ParseMap reads OLD=NEW, two absolute directories.
func ParseMap(s string) (Map, error) {
	old, new, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(old, "/") || !strings.HasPrefix(new, "/") {
		return Map{}, &UsageError{Message: "--map " + s + " is not OLD=NEW", Hint: "give two absolute directories: --map /where/it/was=/where/it/is"}
	}
	return Map{Old: strings.TrimSuffix(old, "/"), New: strings.TrimSuffix(new, "/")}, nil
}

// under returns the rest of p below dir, and whether p lies there.
func under(p, dir string) (string, bool) {
	if p == dir {
		return "", true
	}
	rest, ok := strings.CutPrefix(p, dir+"/")
	return "/" + rest, ok
}

// unmapPath is the key a path found at New is recorded under: at Old.
func unmapPath(maps []Map, p string) string {
	for _, m := range maps {
		if rest, ok := under(p, m.New); ok {
			return m.Old + strings.TrimSuffix(rest, "/")
		}
	}
	return p
}

// mapPath is where a file recorded at Old is found now: at New.
func mapPath(maps []Map, key string) string {
	for _, m := range maps {
		if rest, ok := under(key, m.Old); ok {
			return m.New + strings.TrimSuffix(rest, "/")
		}
	}
	return key
}
