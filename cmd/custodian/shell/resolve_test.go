package shell_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publisher is the world of a definition whose one effect, publish, is cut
// short while the publisher is down: do has begun (the journal says
// started) and fails, and the recognizer cannot tell what took place. That
// is the uncertain effect the operator resolves, made in process.
type publisher struct {
	down bool // do fails after it has begun
	runs int  // how often do was entered
}

// registry returns a registry with the definition "publishing", whose effect
// publish acts on p.
func (p *publisher) registry(t *testing.T) *workflow.Registry {
	t.Helper()
	reg, err := workflow.NewRegistry(&workflow.Definition{
		Name: "publishing",
		Doc:  "publishes once",
		Run: func(ctx *workflow.Context) error {
			ctx.Effect("publish", func() error {
				p.runs++
				if p.down {
					return errors.New("the publisher hung up")
				}
				return nil
			}, workflow.Recognize(func() (workflow.Recognition, error) { return workflow.Unknown, nil }))
			return nil
		},
	})
	require.NoError(t, err)
	return reg
}

// runOK runs args with reg and requires exit status 0 and nothing on stderr.
func runOK(t *testing.T, reg *workflow.Registry, args ...string) string {
	t.Helper()
	r := run(t, reg, args...)
	require.Equal(t, engine.ExitOK, r.code, "custodian %v: %s", args, r.stderr)
	require.Empty(t, r.stderr)
	return r.stdout
}

// uncertainPublish starts a run of the publishing definition and steps it
// until publish is uncertain: the first step's do fails after it began,
// and the second asks the recognizer, which cannot tell.
func uncertainPublish(t *testing.T) (reg *workflow.Registry, dir string, p *publisher) {
	t.Helper()
	p = &publisher{down: true}
	reg = p.registry(t)
	dir = filepath.Join(t.TempDir(), "run")
	runOK(t, reg, "start", "publishing", "--run", dir)
	out := runOK(t, reg, "step", dir)
	require.True(t, strings.HasPrefix(out, "blocked\n- workflow: "), out)
	require.Contains(t, out, "effect publish: the publisher hung up\n")
	p.down = false
	require.Equal(t, lines(
		"uncertain",
		"- effect publish: the effect started and its completion was not recorded; the recognizer could not establish whether it took place",
		"  record: "+filepath.Join(dir, ".custodian", "effect-blocks", "publish.md"),
		"  permitted: stop and report to the operator; the operator establishes what took place",
	), runOK(t, reg, "step", dir))
	require.Equal(t, 1, p.runs)
	return reg, dir, p
}

func TestResolveSettlesAnUncertainEffect(t *testing.T) {
	tests := []struct {
		answer string
		runs   int // how often publish ran in all
	}{
		{answer: "completed", runs: 1}, // it stands: the next step does not run it
		{answer: "absent", runs: 2},    // it is withdrawn: the next step runs it again
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			reg, dir, p := uncertainPublish(t)

			assert.Empty(t, runOK(t, reg, "resolve", dir, "publish", tt.answer), "resolve prints nothing")
			assert.Equal(t, "done\n", runOK(t, reg, "step", dir))
			assert.Equal(t, tt.runs, p.runs)

			// Settled now, whichever way: resolving it again is refused,
			// and nothing runs it again.
			before := listing(t, dir)
			r := run(t, reg, "resolve", dir, "publish", tt.answer)
			requireFailure(t, r, engine.ExitFailed, "")
			assert.Contains(t, r.stderr, "effect publish is completed and matches its inputs; there is nothing to resolve")
			assert.Equal(t, before, listing(t, dir))
			assert.Equal(t, "done\n", runOK(t, reg, "step", dir))
			assert.Equal(t, tt.runs, p.runs)
		})
	}
}

func TestResolveRefusals(t *testing.T) {
	tests := []struct {
		name   string
		run    func(t *testing.T) (*workflow.Registry, string)
		effect string
		code   int
		says   string // on stderr
		hint   string
	}{
		{
			name: "an effect the run has not recorded",
			run: func(t *testing.T) (*workflow.Registry, string) {
				reg, dir, _ := uncertainPublish(t)
				return reg, dir
			},
			effect: "unpublish",
			code:   engine.ExitFailed,
			says:   `no effect named "unpublish" is recorded`,
			hint:   "custodian status RUN lists the run's effects and their state",
		},
		{
			name: "the subject step prints, not the effect's name",
			run: func(t *testing.T) (*workflow.Registry, string) {
				reg, dir, _ := uncertainPublish(t)
				return reg, dir
			},
			effect: "effect publish",
			code:   engine.ExitFailed,
			says:   `no effect named "effect publish" is recorded`,
			hint:   "custodian status RUN lists the run's effects and their state",
		},
		{
			name: "an effect that completed and is settled",
			run: func(t *testing.T) (*workflow.Registry, string) {
				p := &publisher{}
				reg := p.registry(t)
				dir := filepath.Join(t.TempDir(), "run")
				runOK(t, reg, "start", "publishing", "--run", dir)
				require.Equal(t, "done\n", runOK(t, reg, "step", dir))
				return reg, dir
			},
			effect: "publish",
			code:   engine.ExitFailed,
			says:   "effect publish is completed and matches its inputs; there is nothing to resolve",
		},
		{
			name: "a run no step has reached the effect in",
			run: func(t *testing.T) (*workflow.Registry, string) {
				reg := (&publisher{}).registry(t)
				dir := filepath.Join(t.TempDir(), "run")
				runOK(t, reg, "start", "publishing", "--run", dir)
				return reg, dir
			},
			effect: "publish",
			code:   engine.ExitFailed,
			says:   `no effect named "publish" is recorded`,
			hint:   "custodian status RUN lists the run's effects and their state",
		},
		{
			name: "not a run",
			run: func(t *testing.T) (*workflow.Registry, string) {
				return (&publisher{}).registry(t), t.TempDir()
			},
			effect: "publish",
			code:   engine.ExitUntrusted,
			says:   "has no .custodian/run.json",
			hint:   "check the path; start a run with custodian start",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, dir := tt.run(t)
			before := listing(t, dir)
			for _, answer := range []string{"completed", "absent"} {
				r := run(t, reg, "resolve", dir, tt.effect, answer)
				requireFailure(t, r, tt.code, tt.hint)
				assert.Contains(t, r.stderr, tt.says)
			}
			assert.Equal(t, before, listing(t, dir), "a refused resolve changed the run")
		})
	}
}

func TestResolveOfABusyRunExits3(t *testing.T) {
	reg, dir, p := uncertainPublish(t)
	lock := flock.New(filepath.Join(dir, ".custodian", "lock"))
	locked, err := lock.TryLock()
	require.NoError(t, err)
	require.True(t, locked)
	t.Cleanup(func() { _ = lock.Unlock() })

	requireFailure(t, run(t, reg, "resolve", dir, "publish", "absent"), engine.ExitBusy, "another custodian process is working on this run")
	require.NoError(t, lock.Unlock())
	assert.Contains(t, runOK(t, reg, "step", dir), "uncertain\n", "a refused resolve settled the effect")
	assert.Equal(t, 1, p.runs)
}

func TestResolveTakesOnlyCompletedOrAbsent(t *testing.T) {
	reg, dir, p := uncertainPublish(t)
	usage := "usage: custodian resolve RUN EFFECT completed|absent"
	tests := []struct {
		name string
		args []string
		hint string
	}{
		{"unknown", []string{dir, "publish", "unknown"}, resolveAnswerHint},
		{"another word", []string{dir, "publish", "done"}, resolveAnswerHint},
		{"a word in capitals", []string{dir, "publish", "Completed"}, resolveAnswerHint},
		{"unknown, on a path that is not a run", []string{t.TempDir(), "publish", "unknown"}, resolveAnswerHint},
		{"no answer", []string{dir, "publish"}, usage},
		{"no effect", []string{dir}, usage},
		{"an extra argument", []string{dir, "publish", "absent", "now"}, usage},
		{"a flag resolve does not take", []string{dir, "publish", "absent", "--json"}, usage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := listing(t, dir)
			requireFailure(t, run(t, reg, append([]string{"resolve"}, tt.args...)...), engine.ExitUsage, tt.hint)
			assert.Equal(t, before, listing(t, dir), "a malformed resolve changed the run")
		})
	}
	assert.Contains(t, runOK(t, reg, "step", dir), "uncertain\n")
	assert.Equal(t, 1, p.runs)
}

// resolveAnswerHint is the hint of a resolve given another answer than
// completed or absent.
const resolveAnswerHint = "the operator establishes whether the effect took place (completed) or not (absent)"

func TestResolveUsageError(t *testing.T) {
	r := custodian(t, "resolve", t.TempDir(), "publish", "unknown")
	assert.Equal(t, "custodian: resolve: \"unknown\" is not an answer; resolve with completed or absent\n"+
		"custodian: hint: "+resolveAnswerHint+", and resolves with that word; until then, leave the run as it is\n", r.stderr)
}

func TestReleaseOfAnEffectPointsToResolve(t *testing.T) {
	reg, dir, p := uncertainPublish(t)
	before := listing(t, dir)

	r := run(t, reg, "release", dir, "effect publish")
	requireFailure(t, r, engine.ExitFailed, "the operator records what took place with resolve RUN NAME completed|absent")
	assert.Contains(t, r.stderr, "effect publish is not released; an effect is resolved")
	assert.Equal(t, before, listing(t, dir))
	assert.Contains(t, runOK(t, reg, "step", dir), "uncertain\n")
	assert.Equal(t, 1, p.runs)
}
