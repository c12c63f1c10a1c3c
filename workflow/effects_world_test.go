package workflow_test

// The definitions and the outside world shared by the effect tests. The crash
// tests step a run in a child process (effects_process_test.go) and then in
// this one, so both must build the very same definitions: everything here is
// a package-level value or a pure function of the run directory, the run's
// parameters and the environment, never of a test's local state.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/custodian-run/custodian/workflow"
)

const (
	// effectRunEnv names the run a child process steps.
	effectRunEnv = "CUSTODIAN_EFFECT_TEST_RUN"
	// effectCrashEnv names the crash point at which the child ends.
	effectCrashEnv = "CUSTODIAN_EFFECT_TEST_CRASH_AT"
	// effectCrashStatus is the status a child ends with inside an effect.
	effectCrashStatus = 9
)

// effectOutside returns a path in the world outside the run: a sibling
// directory <run>.outside that no step of the run treats as its own.
func effectOutside(runDir string, rel ...string) string {
	return filepath.Join(append([]string{runDir + ".outside"}, rel...)...)
}

// effectTally appends a line to <run>.outside/<file>. Effects tally each time
// their do is entered ("<name>.runs"), recognizers each time they are asked
// ("<name>.asked"). The tally lives outside the run so that nothing the
// engine does to its own records can change it.
func effectTally(runDir, file string) error {
	if err := os.MkdirAll(effectOutside(runDir), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(effectOutside(runDir, file), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, "x"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// effectCrashPoint ends the process, as a power cut would, when the child was
// told to end at point. It leaves a marker first, so that the parent can tell
// that the process ended here and not anywhere else with the same status.
// In the test process itself the variable is never set.
func effectCrashPoint(runDir, point string) {
	if os.Getenv(effectCrashEnv) != point {
		return
	}
	_ = os.MkdirAll(effectOutside(runDir), 0o755)
	_ = os.WriteFile(effectOutside(runDir, "ended-at-"+point), nil, 0o644)
	os.Exit(effectCrashStatus)
}

func effectExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// effectJob is a job that reads inputs and writes <name>.md. No validator:
// the effect tests judge effects, and any output a worker writes will do.
func effectJob(name string, inputs ...string) workflow.Job {
	return workflow.Job{Name: name, Prompt: "Write " + name + ".", Output: name + ".md", Inputs: inputs}
}

// effectPublish is a file-backed effect on the world outside the run: it
// publishes draft.md to <run>.outside/published/ in two writes, the copy and
// then the index. A child may end before the first (begin), between them
// (part) or after both (full), before the engine journals the completion.
func effectPublish(runDir string) error {
	if err := effectTally(runDir, "publish.runs"); err != nil {
		return err
	}
	effectCrashPoint(runDir, "begin")
	draft, err := os.ReadFile(filepath.Join(runDir, "draft.md"))
	if err != nil {
		return err
	}
	pub := effectOutside(runDir, "published")
	if err := os.MkdirAll(pub, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pub, "draft.md"), draft, 0o644); err != nil {
		return err
	}
	effectCrashPoint(runDir, "part")
	if err := os.WriteFile(filepath.Join(pub, "index.md"), []byte("draft.md\n"), 0o644); err != nil {
		return err
	}
	effectCrashPoint(runDir, "full")
	return nil
}

// effectPublishRecognizer returns the recognizer the run's "recognizer"
// parameter asks for. "files" (the default) looks at what was published:
// both files mean completed, neither absent, one alone unknown. The others
// are the ways a recognizer can leave the fate open. Every recognizer tallies
// that it was asked.
func effectPublishRecognizer(runDir, kind string) []workflow.EffectOption {
	asked := func() { _ = effectTally(runDir, "publish.asked") }
	var rec workflow.Recognizer
	switch kind {
	case "none":
		return nil
	case "error":
		// It claims completed, with an error: the error must win.
		rec = func() (workflow.Recognition, error) {
			asked()
			return workflow.Completed, errors.New("the publisher cannot be reached")
		}
	case "panic":
		rec = func() (workflow.Recognition, error) {
			asked()
			panic("the recognizer broke")
		}
	case "unknown":
		rec = func() (workflow.Recognition, error) {
			asked()
			return workflow.Unknown, nil
		}
	default:
		rec = func() (workflow.Recognition, error) {
			asked()
			doc := effectExists(effectOutside(runDir, "published", "draft.md"))
			index := effectExists(effectOutside(runDir, "published", "index.md"))
			switch {
			case doc && index:
				return workflow.Completed, nil
			case !doc && !index:
				return workflow.Absent, nil
			default:
				return workflow.Unknown, nil
			}
		}
	}
	return []workflow.EffectOption{workflow.Recognize(rec)}
}

// effectPublishDef publishes the draft once it is accepted. A file named
// "withdraw" in the run switches the branch: the definition then no longer
// reaches the effect and waits on a notes job instead.
var effectPublishDef = &workflow.Definition{
	Name: "effect-publish",
	Run: func(ctx *workflow.Context) error {
		ctx.Agent(effectJob("draft", "source.md")).Wait()
		if effectExists(ctx.Path("withdraw")) {
			ctx.Agent(effectJob("notes", "source.md")).Wait()
			return nil
		}
		dir := ctx.RunDir()
		opts := append([]workflow.EffectOption{workflow.EffectInputs("draft.md")},
			effectPublishRecognizer(dir, ctx.Params().Get("recognizer", "files"))...)
		ctx.Effect("publish", func() error { return effectPublish(dir) }, opts...)
		return nil
	},
}

// effectStampDef has an effect that writes only inside the run: a value that
// cannot be reproduced (here, random text) goes to stamp.txt, and later code
// reads it from there to name a job. Its recognizer knows the value was made
// when stamp.txt exists.
var effectStampDef = &workflow.Definition{
	Name: "effect-stamp",
	Run: func(ctx *workflow.Context) error {
		dir := ctx.RunDir()
		stampPath := ctx.Path("stamp.txt")
		ctx.Effect("stamp", func() error {
			if err := effectTally(dir, "stamp.runs"); err != nil {
				return err
			}
			if err := os.WriteFile(stampPath, []byte(rand.Text()), 0o644); err != nil {
				return err
			}
			effectCrashPoint(dir, "stamped")
			return nil
		}, workflow.Recognize(func() (workflow.Recognition, error) {
			_ = effectTally(dir, "stamp.asked")
			if effectExists(stampPath) {
				return workflow.Completed, nil
			}
			return workflow.Absent, nil
		}))
		stamp, err := os.ReadFile(stampPath)
		if err != nil {
			return err
		}
		ctx.Agent(workflow.Job{Name: "announce", Prompt: "Announce the stamp " + strings.TrimSpace(string(stamp)) + ".",
			Output: "announce.md", Inputs: []string{"stamp.txt"}}).Wait()
		return nil
	},
}

// effectReleaseDef publishes release.md, a file no job owns, and then names a
// job that does not read it. Changing release.md therefore touches only the
// effect.
var effectReleaseDef = &workflow.Definition{
	Name: "effect-release",
	Run: func(ctx *workflow.Context) error {
		dir := ctx.RunDir()
		ctx.Effect("publish", func() error {
			if err := effectTally(dir, "publish.runs"); err != nil {
				return err
			}
			data, err := os.ReadFile(filepath.Join(dir, "release.md"))
			if err != nil {
				return err
			}
			if err := os.MkdirAll(effectOutside(dir, "published"), 0o755); err != nil {
				return err
			}
			return os.WriteFile(effectOutside(dir, "published", "release.md"), data, 0o644)
		}, workflow.EffectInputs("release.md"))
		ctx.Agent(effectJob("announce", "source.md")).Wait()
		return nil
	},
}

// effectTwoDef has two jobs and two effects on four Parallel paths. The
// effects are reached only when the file "go" is in the run, so that a first
// step hands out the jobs. Each effect's recognizer cannot tell what took
// place; a child ends inside the effect named by the crash point.
var effectTwoDef = &workflow.Definition{
	Name: "effect-two",
	Run: func(ctx *workflow.Context) error {
		dir := ctx.RunDir()
		effect := func(name string) func() {
			return func() {
				if !effectExists(ctx.Path("go-" + name)) {
					return
				}
				ctx.Effect(name, func() error {
					if err := effectTally(dir, name+".runs"); err != nil {
						return err
					}
					effectCrashPoint(dir, name)
					return nil
				}, workflow.Recognize(func() (workflow.Recognition, error) {
					_ = effectTally(dir, name+".asked")
					return workflow.Unknown, nil
				}))
			}
		}
		ctx.Parallel(
			func() { ctx.Agent(effectJob("a", "source.md")).Wait() },
			effect("one"),
			func() { ctx.Agent(effectJob("b", "source.md")).Wait() },
			effect("two"),
		)
		return nil
	},
}

// effectStopDef fails an effect on one path and stops the run on another, in
// the same step, so that the workflow is stopped while the effect's journal
// says started.
var effectStopDef = &workflow.Definition{
	Name: "effect-stop",
	Run: func(ctx *workflow.Context) error {
		dir := ctx.RunDir()
		ctx.Parallel(
			func() {
				ctx.Effect("publish", func() error {
					if err := effectTally(dir, "publish.runs"); err != nil {
						return err
					}
					return errors.New("the publisher refused the upload")
				}, workflow.Recognize(func() (workflow.Recognition, error) {
					_ = effectTally(dir, "publish.asked")
					return workflow.Completed, nil
				}))
			},
			func() { ctx.Stop("no repair within scope can help") },
		)
		return nil
	},
}

// effectRegistry is the registry both the test process and its children use.
func effectRegistry() *workflow.Registry {
	reg, err := workflow.NewRegistry(effectPublishDef, effectStampDef, effectReleaseDef, effectTwoDef, effectStopDef)
	if err != nil {
		panic(err)
	}
	return reg
}
