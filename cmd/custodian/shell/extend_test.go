package shell_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/urfave/cli/v2"

	"github.com/custodian-run/custodian/cmd/custodian/shell"
	"github.com/custodian-run/custodian/definitions"
)

// Another binary adds its commands to the shell; one named as a command
// of the shell takes its place, the rest are the shell's own.
func TestAnotherBinaryExtendsTheShell(t *testing.T) {
	said := func(what string) *cli.Command {
		return &cli.Command{Name: what, Action: func(c *cli.Context) error {
			_, err := c.App.Writer.Write([]byte(what + " of the other binary\n"))
			return err
		}}
	}
	for _, tt := range []struct{ args, want string }{
		{"drive", "drive of the other binary\n"},
		{"worker", "worker of the other binary\n"},
		{"version", ""},
	} {
		t.Run(tt.args, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := shell.Main(definitions.Builtin(), []string{"custodian-temporal", tt.args}, &stdout, &stderr, said("drive"), said("worker"))
			assert.Equal(t, 0, code, "stderr: %s", stderr.String())
			if tt.want == "" {
				assert.NotContains(t, stdout.String(), "other binary", "the shell's own command was replaced")
				return
			}
			assert.Equal(t, tt.want, stdout.String())
		})
	}
}
