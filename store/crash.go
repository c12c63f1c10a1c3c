//go:build !crashpoints

package store

// crashPoint marks a place where a crash test may end the process. Only a
// binary built with the crashpoints tag acts on it; see crash_points.go.
func crashPoint(string) {}
