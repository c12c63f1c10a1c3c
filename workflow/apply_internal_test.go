package workflow

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCollectSoonerRestoresWhatTheFirstFound(t *testing.T) {
	old := debug.SetGCPercent(150)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	tests := []struct {
		name  string
		order []int // the order in which the three steps end
	}{
		{"nested", []int{2, 1, 0}},
		{"in turn", []int{0, 1, 2}},
		{"interleaved", []int{1, 0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var restores []func()
			for range 3 {
				restores = append(restores, collectSooner())
				assert.Equal(t, sooner, debug.SetGCPercent(sooner), "while a step collects sooner")
			}
			for i, which := range tt.order {
				restores[which]()
				if i < len(tt.order)-1 {
					assert.Equal(t, sooner, debug.SetGCPercent(sooner), "while another step still runs")
				}
			}
			assert.Equal(t, 150, debug.SetGCPercent(150), "restored when the last ends")
		})
	}
}
