package workflow_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
)

// A step looks at the files its records name on other cores while its
// records are read; a file the definition's own code writes during the
// replay (a mechanical step) must still be seen as it is when a job reads
// it, in that same step.
func TestAMechanicalStepsWriteIsSeenInTheSameStep(t *testing.T) {
	def := &workflow.Definition{Name: "merge", Run: func(ctx *workflow.Context) error {
		text, err := os.ReadFile(filepath.Join(ctx.RunDir(), "source.md"))
		if err != nil {
			return err
		}
		// The mechanical step: the same files give the same result.
		merged := filepath.Join(ctx.RunDir(), "merged.md")
		if old, err := os.ReadFile(merged); err != nil || string(old) != "merged: "+string(text) {
			if err := os.WriteFile(merged, []byte("merged: "+string(text)), 0o644); err != nil {
				return err
			}
		}
		ctx.Agent(workflow.Job{Name: "review", Prompt: "Review.", Output: "review.md",
			Inputs: []string{"merged.md"}, Validate: hasHeading}).Wait()
		return nil
	}}
	h := startRun(t, def, source)
	h.runToDone()
	h.done() // the hash cache now lists merged.md, which the next step prefetches

	// A new source: the step writes merged.md anew, and review, made from
	// the old one, is handed out again in that same step, not found done.
	h.write("source.md", "a new source\n")
	out := h.step()
	require.Equal(t, workflow.KindLaunch, out.Kind, "outcome: %+v", out)
	assert.Equal(t, []string{"review"}, handoutNames(out))
}

// A file older than the racy window is taken on trust as a looker found
// it, and looked at again behind the replay: when the definition's own
// code wrote it in between, in place or by renaming a directory built
// aside over the old one, the step replays again, taking nothing on trust,
// so that the job reading it is judged on what it holds now, and an effect
// that follows the job's wait does not run on the old judgment.
func TestAMechanicalStepsWriteToAnOldFileReplaysTheStep(t *testing.T) {
	// Lookers run on a second core, which this test needs on any machine.
	// Its cases run one after the other: the looker of the second must be
	// free to look again while the replay goes on.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	for _, tc := range []struct {
		name  string
		write func(dir, text string) error
		// more inputs of the job, enough for the replay to hand files
		// to the lookers to look at again while it runs
		more int
	}{
		{"written in place", func(dir, text string) error {
			return os.WriteFile(filepath.Join(dir, "gen", "merged.md"), []byte(text), 0o644)
		}, 0},
		{"a directory built aside renamed over the old one", func(dir, text string) error {
			aside := filepath.Join(dir, "gen.new")
			if err := os.MkdirAll(aside, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(aside, "merged.md"), []byte(text), 0o644); err != nil {
				return err
			}
			if err := os.RemoveAll(filepath.Join(dir, "gen.old")); err != nil {
				return err
			}
			if err := os.Rename(filepath.Join(dir, "gen"), filepath.Join(dir, "gen.old")); err != nil {
				return err
			}
			return os.Rename(aside, filepath.Join(dir, "gen"))
		}, 3 * 128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"source.md": "the source text\n", "gen/merged.md": ""}
			inputs := []string{"gen/merged.md"}
			for i := range tc.more {
				key := fmt.Sprintf("more/%03d.md", i)
				files[key] = key
				inputs = append(inputs, key)
			}
			var replays, published int
			def := &workflow.Definition{Name: "merge", Run: func(ctx *workflow.Context) error {
				replays++
				text, err := os.ReadFile(filepath.Join(ctx.RunDir(), "source.md"))
				if err != nil {
					return err
				}
				merged := "merged: " + string(text)
				if old, err := os.ReadFile(filepath.Join(ctx.RunDir(), "gen", "merged.md")); err != nil || string(old) != merged {
					// The step's lookers have looked at merged.md by now:
					// they start before the step reads its records.
					time.Sleep(50 * time.Millisecond)
					if err := tc.write(ctx.RunDir(), merged); err != nil {
						return err
					}
				}
				ctx.Agent(workflow.Job{Name: "review", Prompt: "Review.", Output: "review.md",
					Inputs: inputs, Validate: hasHeading}).Wait()
				// Some work of the definition's own, while which the
				// lookers look again at what the replay took on trust.
				time.Sleep(100 * time.Millisecond)
				// An effect of this source, which runs once its review is
				// accepted.
				ctx.Effect(fmt.Sprintf("publish-%d", len(text)), func() error {
					published++
					return nil
				})
				return nil
			}}
			h := startRun(t, def, files)
			h.runToDone()
			require.Equal(t, 1, published, "precondition: the first source is published")
			time.Sleep(2100 * time.Millisecond) // merged.md is older than the racy window
			h.done()                            // and the hash cache knows it so

			const source = "a new and longer source\n"
			h.write("source.md", source)
			h.reopen() // a new process, whose directories are opened afresh
			replays = 0
			out := h.step()
			require.Equal(t, workflow.KindLaunch, out.Kind, "outcome: %+v", out)
			assert.Equal(t, []string{"review"}, handoutNames(out))
			assert.Equal(t, 2, replays, "the step did not replay again after a file taken on trust changed")
			assert.Equal(t, 1, published, "the effect ran on the review of the old merged.md")
			assert.NoFileExists(t, h.path(fmt.Sprintf(".custodian/effects/publish-%d.json", len(source))),
				"the effect's start was journaled on the review of the old merged.md")
		})
	}
}

// A step that owes moves makes them before it judges: an output it moved
// away is gone, whatever the step's lookers found of it before the move.
func TestAnOutputMovedAwayByAnOwedMoveIsGone(t *testing.T) {
	j := job("a")
	j.Validate = nil // nothing but the file's presence decides
	for range 5 {
		h := startRun(t, oneJob(j), source)
		h.runToDone()
		h.done() // the hash cache lists a.md, which the next step's lookers read first

		// The state of a step that decided to set a.md aside and ended
		// before it did.
		run, err := store.Open(h.dir)
		require.NoError(t, err)
		unlock, err := run.Lock()
		require.NoError(t, err)
		st, err := run.LoadState()
		require.NoError(t, err)
		id, err := run.Identity("a.md")
		require.NoError(t, err)
		st.Moves = []store.Move{{Source: "a.md", Target: ".custodian/jobs/a/kept/1-a.md", Identity: id}}
		require.NoError(t, run.SaveState("test", st))
		unlock()
		run.Close()

		// No effect is named: the step is taken as an ordinary one.
		err = h.o.StepEndingIn("none", false)
		require.ErrorContains(t, err, "taken as an ordinary step")
		require.NoFileExists(t, h.path("a.md"))
		assert.Empty(t, h.state().Jobs["a"].Accepted, "a job accepted whose output was moved away")
	}
}
