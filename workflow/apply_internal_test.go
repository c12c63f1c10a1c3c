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

// Steps that collect late and sooner, overlapping in any order, leave the
// settings each asks for while it runs, and the last to end restores
// what the first found.
func TestCollectLateAndSooner(t *testing.T) {
	oldPercent, oldLimit := debug.SetGCPercent(150), debug.SetMemoryLimit(1<<40)
	t.Cleanup(func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	})
	settings := func() (int, int64) {
		percent := debug.SetGCPercent(0)
		debug.SetGCPercent(percent)
		return percent, debug.SetMemoryLimit(-1)
	}
	small, large := collectLate(1<<20), collectLate(100<<20)
	percent, limit := settings()
	assert.Equal(t, -1, percent, "collecting late")
	assert.Equal(t, int64(lateStates*100<<20), limit, "under the larger bound")

	soon := collectSooner()
	percent, limit = settings()
	assert.Equal(t, sooner, percent, "collecting sooner while late")
	assert.Equal(t, int64(lateStates*100<<20), limit)

	large()
	_, limit = settings()
	assert.Equal(t, int64(minLate), limit, "under the smaller bound, at least minLate")
	soon()
	percent, _ = settings()
	assert.Equal(t, -1, percent, "late again once no step collects sooner")
	small()
	percent, limit = settings()
	assert.Equal(t, 150, percent, "restored when the last ends")
	assert.Equal(t, int64(1<<40), limit, "restored when the last ends")

	// A bound the process set itself stands.
	debug.SetMemoryLimit(10 << 20)
	restore := collectLate(100 << 20)
	_, limit = settings()
	assert.Equal(t, int64(10<<20), limit)
	restore()
}
