// Package seam lets the engine's replay of a run stand behind the author's
// Context. Package workflow declares what a Context calls (an unexported
// interface, so that go doc shows an author only the Context's methods);
// package engine's replay satisfies it; this package hands one to the
// other without an import cycle.
package seam

// NewContext returns a *workflow.Context whose calls go to r, a replay of
// package engine. Package workflow sets it when it is initialized, which
// is before any package that imports it runs.
var NewContext func(r any) any
