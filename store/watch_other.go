//go:build !linux

package store

// newWatch watches nothing where there is no inotify: the replay looks at
// every file it takes from a prefetch that is not an output.
func newWatch(*prefetchWalker, []string) *watch { return nil }

func (w *watch) quiet() bool { return false }

func (w *watch) close() {}
