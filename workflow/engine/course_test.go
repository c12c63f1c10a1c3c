package engine_test

import (
	"os"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manifestAudit is the guide's data-in-prompt definition: one audit job per
// line of manifest.txt ("package from to"), whose prompt names the package
// and its versions.
func manifestAudit() *workflow.Definition {
	return &workflow.Definition{Name: "manifest-audit", Run: func(ctx *workflow.Context) error {
		data, err := os.ReadFile(ctx.Path("manifest.txt"))
		if err != nil {
			return err
		}
		var paths []func()
		for line := range strings.Lines(string(data)) {
			f := strings.Fields(line)
			if len(f) != 3 {
				continue
			}
			j := job("audit-" + f[0])
			j.Prompt = "Audit " + f[0] + " from " + f[1] + " to " + f[2] + "."
			j.Inputs = nil
			paths = append(paths, func() { ctx.Agent(j).Wait() })
		}
		ctx.Parallel(paths...)
		return nil
	}}
}

const manifest = "axios 1.6.0 1.7.2\nlodash 4.17.20 4.17.21\n"

// finishedAudit is a manifest audit run with both audits accepted.
func finishedAudit(t *testing.T) *harness {
	t.Helper()
	h := startRun(t, manifestAudit(), map[string]string{"manifest.txt": manifest})
	h.work(h.launch("audit-axios", "audit-lodash"), nil)
	h.done()
	return h
}

func TestADataEditByTheSameBuildReopensTheJob(t *testing.T) {
	h := finishedAudit(t)
	h.write("manifest.txt", strings.Replace(manifest, "1.7.2", "1.7.4", 1))

	// The same build: the edit is the run's own course, not new code.
	j := h.launch("audit-axios")["audit-axios"]
	assert.Equal(t, 2, j.Attempt)
	assert.Contains(t, recordText(t, j.Prompt), "Audit axios from 1.6.0 to 1.7.4.")
	assert.Equal(t, 0, failures(h.state().Jobs["audit-axios"]), "a reopening is no failed attempt")
	assert.NotEmpty(t, h.state().Jobs["audit-lodash"].Accepted, "the other audit stays accepted")

	events, err := h.o.Log()
	require.NoError(t, err)
	var reopened []string
	for _, e := range events {
		if e.Type == engine.EventReopen {
			reopened = append(reopened, e.Subject+": "+e.Text)
		}
	}
	assert.Equal(t, []string{"audit-axios: the prompt changed (the same build: data the definition reads)"}, reopened,
		"the log says what changed")

	// A full set of attempts: one retry, then the block.
	assert.Equal(t, 3, h.launch("audit-axios")["audit-axios"].Attempt)
	assert.Equal(t, "no output, attempt 2 of 2", h.blocked()["audit-axios"].Reason)
}

func TestAnotherBuildStopsOnAChangedTask(t *testing.T) {
	cases := []struct {
		name   string
		change func(h *harness)
	}{
		{"a data edit", func(h *harness) {
			h.write("manifest.txt", strings.Replace(manifest, "1.7.2", "1.7.4", 1))
		}},
		{"a data edit and a code change", func(h *harness) {
			h.write("manifest.txt", strings.Replace(manifest, "1.7.2", "1.7.4", 1))
			def := manifestAudit()
			run := def.Run
			def.Run = func(ctx *workflow.Context) error { ctx.Path("notes.md"); return run(ctx) }
			h.reg = registry(h.t, def)
		}},
		{"a code change", func(h *harness) {
			def := manifestAudit()
			def.Run = func(ctx *workflow.Context) error {
				j := job("audit-axios")
				j.Prompt = "Audit axios from 1.6.0 to 1.7.2, and say why."
				j.Inputs = nil
				ctx.Parallel(func() { ctx.Agent(j).Wait() }, func() {
					j := job("audit-lodash")
					j.Prompt = "Audit lodash from 4.17.20 to 4.17.21."
					j.Inputs = nil
					ctx.Agent(j).Wait()
				})
				return nil
			}
			h.reg = registry(h.t, def)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := finishedAudit(t)
			before := h.state().Build
			tc.change(h)
			if h.reg == h.opened {
				h.asAnotherBuild()
			} else {
				h.reopen()
			}

			for range 2 {
				b := h.blocked()["workflow"]
				assert.Equal(t, engine.BlockDefinitionChanged, b.Kind)
				assert.Contains(t, b.Reason, "job audit-axios")
				// A stop lets no build in: the accepted jobs are still held
				// against the build that accepted them.
				assert.Equal(t, h.build, h.state().Build, "the build that last stepped")
				assert.Equal(t, before, h.state().Checked)
			}
			require.NoError(t, h.o.Release(engine.WorkflowSubject))
			assert.Equal(t, 2, h.launch("audit-axios")["audit-axios"].Attempt)
			assert.Equal(t, h.build, h.state().Checked, "a step that got through holds the new build")
		})
	}
}

func TestABuildThatDidNotReachEveryAcceptedJobCannotTellDataFromCode(t *testing.T) {
	def := &workflow.Definition{Name: "gated", Run: func(ctx *workflow.Context) error {
		ctx.Agent(job("first")).Wait()
		data, err := os.ReadFile(ctx.Path("topic.txt"))
		if err != nil {
			return err
		}
		j := job("second")
		j.Prompt = "Write about " + strings.TrimSpace(string(data)) + "."
		ctx.Agent(j).Wait()
		return nil
	}}
	h := startRun(t, def, map[string]string{"source.md": source["source.md"], "topic.txt": "ducks\n"})
	h.work(h.launch("first"), nil)
	h.work(h.launch("second"), nil)
	h.done()
	old := h.state().Checked

	// Another build steps while first is reopened: its replay ends at first
	// and never holds second against its definition.
	h.write("source.md", "another source\n")
	h.asAnotherBuild()
	h.work(h.launch("first"), nil)
	assert.Equal(t, h.build, h.state().Build, "the build that last stepped")
	assert.Equal(t, old, h.state().Checked, "second was never held against this build's definition")

	// second's task changed: this build cannot tell whether by data or by
	// its own code, so a person decides.
	h.write("topic.txt", "geese\n")
	b := h.blocked()["workflow"]
	assert.Equal(t, engine.BlockDefinitionChanged, b.Kind)
	assert.Contains(t, b.Reason, "job second")
}

func TestTheRecordsKeepTheBuilds(t *testing.T) {
	h := finishedAudit(t)
	run, err := store.Open(h.dir)
	require.NoError(t, err)
	defer run.Close()
	assert.Equal(t, engine.ThisBuild(), run.Record.Build, "run.json keeps the build that started the run")
	assert.Equal(t, engine.ThisBuild(), h.state().Build, "the state keeps the build that last stepped it")
	assert.Equal(t, "done", h.state().Last)

	h.asAnotherBuild()
	h.done()
	assert.Equal(t, h.build, h.state().Build)
	assert.Equal(t, h.build, h.state().Checked)
}

// registry is a registry of def that must build.
func registry(t *testing.T, def *workflow.Definition) *workflow.Registry {
	t.Helper()
	reg, err := workflow.NewRegistry(def)
	require.NoError(t, err)
	return reg
}

// growing is a definition that a test grows between steps, as new code
// does: an audit, then, when asked, one more job and an effect.
type growing struct {
	extraJob    bool
	extraEffect bool
	tickets     int // how often the effect ran
}

func (g *growing) definition() *workflow.Definition {
	return &workflow.Definition{Name: "growing", Run: func(ctx *workflow.Context) error {
		ctx.Agent(job("audit")).Wait()
		if g.extraJob {
			ctx.Agent(job("extra")).Wait()
		}
		if g.extraEffect {
			ctx.Effect("file-ticket", func() error { g.tickets++; return nil })
		}
		return nil
	}}
}

func TestAFinishedRunStaysFinishedUnderNewCode(t *testing.T) {
	cases := []struct {
		name    string
		grow    func(g *growing)
		subject string         // in the stop's reason
		item    engine.Subject // in check's items
	}{
		{"a new job", func(g *growing) { g.extraJob = true }, "job extra", "extra"},
		{"a new effect", func(g *growing) { g.extraEffect = true }, "effect file-ticket", engine.EffectSubject("file-ticket")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := &growing{}
			h := startRun(t, g.definition(), source)
			h.work(h.launch("audit"), nil)
			h.done()

			tc.grow(g)
			h.asAnotherBuild()
			c, err := h.o.Check()
			require.NoError(t, err)
			require.Len(t, c.Items, 1, "%+v", c.Items)
			assert.Equal(t, tc.item, c.Items[0].Subject)
			assert.Contains(t, c.Items[0].Reason, "in a finished run")
			assert.Contains(t, c.Items[0].Reason, "the next step blocks on the changed definition")
			for range 2 {
				b := h.blocked()["workflow"]
				assert.Equal(t, engine.BlockDefinitionChanged, b.Kind)
				assert.Equal(t, "the definition changed under the run: "+tc.subject, b.Reason)
				assert.Zero(t, g.tickets, "no effect runs in a finished run before the operator lets it")
				assert.Equal(t, "done", h.state().Last, "a stop carries out nothing: the run is still finished")
				// Yet another build is stopped all the same.
				h.asAnotherBuild()
			}
			record := h.read(".custodian/workflow/block-1.md")
			assert.Contains(t, record, "a new "+strings.Fields(tc.subject)[0]+" in a finished run")

			require.NoError(t, h.o.Release(engine.WorkflowSubject))
			if g.extraJob {
				h.work(h.launch("extra"), nil)
			}
			h.done()
			assert.Equal(t, map[string]string{}, h.state().Workflow.Allowed, "what the release let through was carried out")
			if g.extraEffect {
				assert.Equal(t, 1, g.tickets)
			}
		})
	}
}

func TestAFinishedRunGrowsByItsOwnCourse(t *testing.T) {
	// The same build: a manifest line added is the run's course, and its job
	// is handed out.
	h := finishedAudit(t)
	h.write("manifest.txt", manifest+"react 18.2.0 18.3.1\n")
	h.work(h.launch("audit-react"), nil)
	h.done()

	// And a reopening by a changed input under another build is no new
	// work: it goes on as it always did.
	g := &growing{}
	h = startRun(t, g.definition(), source)
	h.work(h.launch("audit"), nil)
	h.done()
	h.write("source.md", "another source\n")
	h.asAnotherBuild()
	assert.Equal(t, 2, h.launch("audit")["audit"].Attempt)
}

func TestAHandoutMakesItsOutputsDirectory(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name   string
		before func(h *harness) // what lies in the run before the hand-out
		made   bool             // the output's directory is a directory of the run's
	}{
		{"nothing is there", func(*harness) {}, true},
		{"the directory is there", func(h *harness) { h.write("reports/deep/keep.md", "kept\n") }, true},
		{"a file stands in the way", func(h *harness) { h.write("reports", "a file\n") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := job("a")
			j.Output = "reports/deep/a.md"
			h := startRun(t, oneJob(j), source)
			tt.before(h)
			a := h.launch("a")["a"]
			info, err := os.Lstat(h.path("reports/deep"))
			if tt.made {
				require.NoError(t, err)
				assert.True(t, info.IsDir())
				writeFile(t, a.Output, validText)
				h.done()
				return
			}
			assert.Equal(t, "a file\n", h.read("reports"), "what stands in the way is left as it is")
			// The worker cannot write there; the next step says so.
			assert.Equal(t, 2, h.launch("a")["a"].Attempt)
		})
	}
	t.Run("a link stands in the way", func(t *testing.T) {
		j := job("a")
		j.Output = "reports/deep/a.md"
		h := startRun(t, oneJob(j), source)
		require.NoError(t, os.Symlink(outside, h.path("reports")))
		_, err := h.o.Step()
		require.ErrorIs(t, err, store.ErrLink, "the step refuses a link in the output's path, as at every judgment")
		entries, err := os.ReadDir(outside)
		require.NoError(t, err)
		assert.Empty(t, entries, "nothing is made through a link")
	})
}
