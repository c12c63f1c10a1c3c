package names

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// pattern is the rule Valid checks.
var pattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// FuzzValid holds Valid to the rule it implements, pattern.
func FuzzValid(f *testing.F) {
	for _, s := range []string{"", "a", "a-1", "A", "1a", "a_b", "a.b", "ab-", strings.Repeat("a", MaxLen), strings.Repeat("a", MaxLen+1), "é", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		assert.Equal(t, pattern.MatchString(s), Valid(s), "%q", s)
		assert.Equal(t, Valid(s), Problem("job", s) == "", "%q", s)
	})
}

func TestProblemSaysWhatIsWrong(t *testing.T) {
	tests := []struct{ name, want string }{
		{"review", ""},
		{"Review", `job name "Review" is not a plain lower-case identifier ([a-z][a-z0-9-]*)`},
		{strings.Repeat("a", MaxLen+1), `job name "` + strings.Repeat("a", MaxLen+1) + `" is 64 characters long; a name has at most 63 (workflow.JobName makes a short, stable name from data)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Problem("job", tt.name))
		})
	}
}
