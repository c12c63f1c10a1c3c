package shell

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRelativeLinkIsAPathBesideThePage(t *testing.T) {
	link := relativeLink("/work/pages")
	tests := []struct{ abs, want string }{
		{"/work/run/.custodian/jobs/a/prompt-1.md", "../run/.custodian/jobs/a/prompt-1.md"},
		{"/work/pages/run/a b.md", "./run/a%20b.md"},
		{"/work/pages/a:b/c.md", "./a:b/c.md"},
		{"/work/pages/q?#.md", "./q%3F%23.md"},
		{"", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, link(tt.abs), tt.abs)
	}
}
