package workflow

// EffectOption configures an effect.
type EffectOption func(*effectSpec)

// EffectInputs declares the files an effect depends on. Their hashes are
// journaled when it starts; a completed effect whose inputs change later
// stops the run, because code never repeats or undoes an effect.
func EffectInputs(paths ...string) EffectOption {
	return func(e *effectSpec) { e.inputs = append(e.inputs, paths...) }
}

// Recognize gives the effect a recognizer, asked only when a previous step
// journaled the effect's start and not its completion.
func Recognize(r Recognizer) EffectOption {
	return func(e *effectSpec) { e.recognize = r }
}

type effectSpec struct {
	inputs    []string
	recognize Recognizer
}

// Effect runs do at most once in the run: it journals the effect as started,
// runs do, and journals it as completed. Use it for a step that changes the
// world outside the run or whose result cannot be reproduced (the clock, a
// branch resolved to a commit); a value it produces belongs in a file that
// later steps read.
//
// When a process ended inside an earlier run of do, the recognizer says what
// took place: completed lets it stand, absent runs it again, and unknown (or
// no recognizer, or one that fails) makes the step's outcome uncertain until
// the operator resolves it. An error or a panic in do ends the calling path
// and blocks on workflow, however the definition handles it; the next step
// asks the recognizer.
func (c *Context) Effect(name string, do func() error, opts ...EffectOption) {
	e := &effectSpec{}
	for _, opt := range opts {
		opt(e)
	}
	c.r.Effect(name, do, e.inputs, e.recognize)
}
