package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow/engine"
)

var update = flag.Bool("update", false, "rewrite the transcripts under testdata/e2e from what the binary prints now")

// e2eDir holds the end-to-end transcripts, one course each; see its README.md.
var e2eDir = filepath.Join("..", "..", "testdata", "e2e")

// TestE2E plays every course under testdata/e2e through the built binary
// and compares what happened with its transcript: the commands given as
// they are written, the agent orchestrator's parts by the scripted agent,
// which follows the loop instruction with nothing but what step prints.
func TestE2E(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(e2eDir, "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)

	courses := map[string]course{}
	covered := map[string]bool{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		c, err := parseCourse(string(data))
		require.NoError(t, err, path)
		courses[path] = c
		covered[c.scenario()] = true
	}
	for _, scenario := range trial.Scenarios {
		assert.True(t, covered[scenario], "no transcript under %s sets up scenario %s", e2eDir, scenario)
	}
	for name := range courseChecks {
		assert.FileExists(t, filepath.Join(e2eDir, name+".txt"), "a check for a course that has no transcript")
	}

	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSession(t, courses[path].header)
			s.play(courses[path])
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(s.tr.String()), 0o644))
			} else {
				want, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, string(want), s.tr.String(), "the course differs from %s; if the change is meant, rewrite it with -update", path)
			}
			if check := courseChecks[name]; check != nil {
				check(t, s.run)
			}
		})
	}
}

// courseChecks are what a transcript cannot show, by course: the state of
// files that no command prints.
var courseChecks = map[string]func(t *testing.T, run string){
	"retry": func(t *testing.T, run string) {
		jobDir := filepath.Join(run, ".custodian", "jobs", "reconcile")
		assert.NotContains(t, fileText(t, filepath.Join(jobDir, "prompt-1.md")), "Checked: yes",
			"the first prompt mentions what the validator demands")
		assert.True(t, strings.HasSuffix(fileText(t, filepath.Join(jobDir, "prompt-2.md")),
			"\n## Why the previous attempt was refused\n\n"+
				"- end with the line 'Checked: yes' once every bullet names the assumption it depends on\n"),
			"the retry prompt does not end with the validator's message")
	},
	"problem": func(t *testing.T, run string) {
		assert.Equal(t, fileText(t, filepath.Join(run, "incoming", "notes.md")), fileText(t, filepath.Join(run, "notes.md")))
	},
	"uncertain-resolve-absent": func(t *testing.T, run string) {
		assert.FileExists(t, filepath.Join(run+".published", "reconciled.md"))
		assert.FileExists(t, filepath.Join(run+".published", "index.md"), "publish did not run again")
	},
	"definition-changed": func(t *testing.T, run string) {
		// The block record gives the operator the prompt's diff; after the
		// release, summary is handed out with the new prompt.
		assert.Contains(t, fileText(t, filepath.Join(run, ".custodian", "workflow", "block-1.md")),
			"## job summary\n\n- the prompt changed\n\n```diff\n--- .custodian/jobs/summary/prompt-1.md\n+++ the prompt now\n"+
				"@@ -1 +1 @@\n-"+redefSummaryPrompt+"\n+"+redefRewordedPrompt+"\n```\n")
		assert.True(t, strings.HasPrefix(fileText(t, filepath.Join(run, ".custodian", "jobs", "summary", "prompt-2.md")), redefRewordedPrompt+"\n"))
	},
	"uncertain-resolve-completed": func(t *testing.T, run string) {
		assert.FileExists(t, filepath.Join(run+".published", "reconciled.md"))
		assert.NoFileExists(t, filepath.Join(run+".published", "index.md"), "publish ran again")
	},
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// session plays one course in a temporary directory of its own, with the
// run at $TMP/run, and writes its transcript. It is the scripted agent's
// Runner too: the agent's commands run through the binary like any other.
type session struct {
	t        *testing.T
	tmp, run string
	expand   *strings.Replacer // $RUN and $TMP in a command line, to the paths
	tr       *transcript
}

func newSession(t *testing.T, header string) *session {
	tmp := t.TempDir()
	run := filepath.Join(tmp, "run")
	names, err := builds()
	require.NoError(t, err)
	s := &session{
		t: t, tmp: tmp, run: run,
		expand: strings.NewReplacer("$RUN", run, "$TMP", tmp),
		tr:     newTranscript(header, run, tmp, names),
	}
	// A step still holding the run (busy) must end before the directory
	// is removed, even when the course failed halfway.
	t.Cleanup(s.awaitLock)
	return s
}

func (s *session) play(c course) {
	for _, p := range c.parts {
		if p.heading != "" {
			s.tr.heading(p.heading)
		}
		if p.agent() {
			require.NotEmpty(s.t, c.scenario(), "an agent part in a course that sets up no trial run")
			s.drive(c.scenario())
			continue
		}
		for _, command := range p.commands {
			args := make([]string, len(command.args))
			for i, arg := range command.args {
				args[i] = s.expand.Replace(arg)
			}
			s.variantExec(command.variant, args...)
		}
	}
}

// exec runs the binary with args and writes the command and what came of
// it to the transcript.
func (s *session) exec(args ...string) result {
	s.t.Helper()
	return s.variantExec("", args...)
}

// variantExec runs the build of testdata/variant that variant names, or
// the custodian binary when variant is "", with args and writes the command
// and what came of it to the transcript.
func (s *session) variantExec(variant string, args ...string) result {
	s.t.Helper()
	bin := binary
	if variant != "" {
		bin = variantBinaries[variant]
		require.NotEmpty(s.t, bin, "no build of variant %s", variant)
	}
	r := run(s.t, bin, nil, args...)
	s.tr.command(variant, args, r)
	command := variantProg(variant) + " " + strings.Join(args, " ")
	for _, line := range strings.Split(r.stdout+r.stderr, "\n") {
		if strings.HasPrefix(line, commandPrefix) || strings.HasPrefix(line, headingPrefix) {
			s.t.Errorf("%s printed %q, which a transcript would read as a command or a heading", command, line)
		}
	}
	if r.code >= engine.ExitFailed && r.code <= engine.ExitDefinition {
		assert.Empty(s.t, r.stdout, "%s failed and printed on stdout", command)
		for _, line := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
			assert.True(s.t, strings.HasPrefix(line, prog+": "), "%s: stderr line %q does not begin %q", command, line, prog+": ")
		}
	}
	return r
}

// Step runs `custodian step RUN` for the scripted agent and reads what it
// printed, as an agent orchestrator reads it.
func (s *session) Step() (engine.Outcome, error) {
	args := []string{"step", s.run}
	r := s.exec(args...)
	if r.code != 0 {
		return engine.Outcome{}, &trial.ExitError{Args: args, Status: r.code, Stdout: r.stdout, Stderr: r.stderr}
	}
	return engine.ParseOutcome(r.stdout)
}

// Report runs `custodian report RUN EVENT [--job JOB] --text TEXT` for the
// scripted agent.
func (s *session) Report(event, job, text string) error {
	args := []string{"report", s.run, event}
	if job != "" {
		args = append(args, "--job", job)
	}
	args = append(args, "--text", text)
	if r := s.exec(args...); r.code != 0 {
		return &trial.ExitError{Args: args, Status: r.code, Stdout: r.stdout, Stderr: r.stderr}
	}
	return nil
}

// Decide is the operator's command, which the scripted operator plays in a
// transcript as any other command.
func (s *session) Decide(name, choice, text string) error {
	args := []string{"decide", s.run, name, choice, "--text", text}
	if r := s.exec(args...); r.code != 0 {
		return &trial.ExitError{Args: args, Status: r.code, Stdout: r.stdout, Stderr: r.stderr}
	}
	return nil
}

// drive plays the agent orchestrator's part with the scenario's script,
// writes how the agent ended, and waits until no process holds the run.
func (s *session) drive(scenario string) {
	agent := &trial.Agent{Runner: s, RunDir: s.run, Script: s.recorded(trial.ScenarioScript(scenario))}
	tr, err := agent.Drive()
	s.tr.comment("%s", s.ending(tr, err))
	s.awaitLock()
}

// ending says how the agent's part ended and what the loop instruction has
// it do then. A drive that could not follow the loop fails the test.
func (s *session) ending(tr trial.Transcript, err error) string {
	if err != nil {
		var exit *trial.ExitError
		require.ErrorAs(s.t, err, &exit, "the scripted agent could not follow the loop")
		if exit.Status >= engine.ExitFailed && exit.Status <= engine.ExitDefinition {
			return "the agent ends: it tells the operator what the command printed"
		}
		return "the agent stops: it gives the operator the exit status and everything the command printed"
	}
	switch {
	case tr.Final.Kind == engine.KindDone:
		return "the agent ends: it tells the operator that the run is finished"
	case len(tr.Reports) > 0 && tr.Reports[len(tr.Reports)-1].Event == engine.ReportStop:
		return "the agent stops: it gives the operator the last step output, exactly as printed"
	}
	require.Failf(s.t, "the scripted agent ended without a cause", "final outcome %s", tr.Final.Kind)
	return ""
}

// awaitLock returns once no process holds the run's lock, as the busy
// scenario's background step does until its hold ends.
func (s *session) awaitLock() {
	path := filepath.Join(s.run, ".custodian", "lock")
	if _, err := os.Stat(path); err != nil {
		return // no run was set up, or the course failed before
	}
	lock := flock.New(path)
	require.NoError(s.t, lock.Lock())
	require.NoError(s.t, lock.Unlock())
}

// recorded returns the script with every worker and every repair writing
// what it did to the transcript.
func (s *session) recorded(sc trial.Script) trial.Script {
	workers := map[string][]trial.Behaviour{}
	for job, behaviours := range sc.Workers {
		for _, b := range behaviours {
			workers[job] = append(workers[job], s.worker(b))
		}
	}
	sc.Workers = workers
	if sc.Default == nil {
		sc.Default = trial.Valid
	}
	sc.Default = s.worker(sc.Default)
	repairs := map[string]trial.Repair{}
	for subject, r := range sc.Repairs {
		repairs[subject] = s.repair(r)
	}
	sc.Repairs = repairs
	return sc
}

// refusedHeading opens the section of a retry's prompt that gives the
// validator's messages.
const refusedHeading = "## Why the previous attempt was refused"

// worker writes what a scripted worker read in its prompt about an
// earlier refusal, and what it wrote.
func (s *session) worker(b trial.Behaviour) trial.Behaviour {
	return func(h engine.Handout) error {
		if _, why, ok := strings.Cut(fileText(s.t, h.Prompt), "\n"+refusedHeading+"\n"); ok {
			s.tr.comment("worker %s: its prompt ends %q:\n  %s", h.Name, refusedHeading,
				strings.ReplaceAll(strings.TrimSpace(why), "\n", "\n  "))
		}
		if err := b(h); err != nil {
			s.tr.comment("worker %s: %v", h.Name, err)
			return err
		}
		var wrote []string
		for _, p := range []struct{ what, path string }{{"", h.Output}, {"a problem report, ", h.Problem}} {
			if _, err := os.Stat(p.path); err == nil {
				rel, err := filepath.Rel(s.run, p.path)
				require.NoError(s.t, err)
				wrote = append(wrote, p.what+filepath.ToSlash(rel))
			}
		}
		if len(wrote) == 0 {
			wrote = []string{"nothing"}
		}
		s.tr.comment("worker %s: wrote %s", h.Name, strings.Join(wrote, " and "))
		return nil
	}
}

// repair writes what the agent changed to repair a block.
func (s *session) repair(r trial.Repair) trial.Repair {
	return func(dir string, b engine.Block) (string, error) {
		changed, err := r(dir, b)
		if err == nil {
			s.tr.comment("the agent repairs %s: %s", b.Subject, changed)
		}
		return changed, err
	}
}
