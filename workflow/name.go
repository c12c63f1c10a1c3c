package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// A name (of a definition, a job, an effect) is a plain lower-case
// identifier of at most store.MaxNameLen characters: it is a path
// component of the run's records and part of a subject's text.

// nameProblem says what is wrong with a name, or "".
func nameProblem(what, name string) string {
	switch {
	case store.ValidName(name):
		return ""
	case len(name) > store.MaxNameLen:
		return fmt.Sprintf("%s name %q is %d characters long; a name has at most %d (workflow.JobName makes a short, stable name from data)",
			what, name, len(name), store.MaxNameLen)
	default:
		return fmt.Sprintf("%s name %q is not a plain lower-case identifier ([a-z][a-z0-9-]*)", what, name)
	}
}

// JobName makes a valid, stable name for a job from data, such as a file
// name or an entry of a manifest: prefix, a dash, and key in lower case
// with every run of other characters made one dash. When that changes key
// (so that two keys could meet in one name) or is too long, the first
// characters are followed by eight hex digits of key's SHA-256, so that
// different keys give different names. The same prefix and key always give
// the same name. prefix should be a short valid name, such as "review".
func JobName(prefix, key string) string {
	slug := slugify(key)
	name := slugify(prefix) + "-" + slug
	if !strings.HasPrefix(name, "-") && slug == key && store.ValidName(name) {
		return name
	}
	sum := sha256.Sum256([]byte(key))
	tag := hex.EncodeToString(sum[:4])
	head := slugify(prefix)
	if head == "" || head[0] < 'a' || head[0] > 'z' {
		head = "job" + strings.TrimPrefix("-"+head, "-")
	}
	room := store.MaxNameLen - len(head) - len(tag) - 2
	if len(slug) > room {
		slug = strings.TrimRight(slug[:max(room, 0)], "-")
	}
	if slug == "" {
		return head + "-" + tag
	}
	return head + "-" + slug + "-" + tag
}

// slugify lowers s and makes every run of characters other than a-z and 0-9
// one dash, trimmed at both ends.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}
