package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGoBuildIDFormIsTheGoCommands(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"X1G6OXN5rLkL0UGc4imc/cnF0ZWRN-ibROS949slj/zMPzXZIzPRMBmPwPgxWO/O5NE7knAnOBPCc7WteCQ", true},
		{"X1G6OXN5rLkL0UGc4imc/cnF0ZWRN-ibROS949slj", true},
		{"", false},
		{"redacted", false},
		{"X1G6OXN5rLkL0UGc4imc", false},
		{"X1G6OXN5rLkL0UGc4imc/short", false},
		{"X1G6OXN5rLkL0UGc4imc/cnF0ZWRN+ibROS949slj", false},
		{"X1G6OXN5rLkL0UGc4imc//cnF0ZWRN-ibROS949slj", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			assert.Equal(t, tt.want, goBuildID(tt.id))
		})
	}
}
