package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/custodian-run/custodian/internal/names"
)

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
	if !strings.HasPrefix(name, "-") && slug == key && names.Valid(name) {
		return name
	}
	sum := sha256.Sum256([]byte(key))
	tag := hex.EncodeToString(sum[:4])
	head := slugify(prefix)
	if head == "" || head[0] < 'a' || head[0] > 'z' {
		head = "job" + strings.TrimPrefix("-"+head, "-")
	}
	room := names.MaxLen - len(head) - len(tag) - 2
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
