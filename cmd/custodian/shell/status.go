package shell

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

func statusCommand(reg *workflow.Registry) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show where every job and effect of the run stands, or one job's whole story; read-only",
		ArgsUsage: "RUN [--job NAME] [--json]",
		Description: "Status judges nothing, consumes no round, takes no lock and writes nothing.\n" +
			"It shows the last step's outcome and what the agent orchestrator and the operator may do now.\n" +
			"--job shows one job's story instead: each hand-out and its prompt, drive's launches and their\n" +
			"evidence, verdicts with their messages, kept files, blocks and their records, reports and releases.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "job", Usage: "tell the whole story of the job `NAME`"},
			&cli.BoolFlag{Name: "json", Usage: "print the status, or the story, as one JSON object"},
		},
		Action: withRun(reg, nil, func(c *cli.Context, _ []string) (func(*engine.Run) error, error) {
			job, err := text(c, "job")
			if err != nil {
				return nil, err
			}
			if c.IsSet("job") && job == "" {
				return nil, usagef(c, "--job names no job")
			}
			if job != "" {
				return func(o *engine.Run) error {
					s, err := o.Story(job)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, s)
					}
					return printStory(c.App.Writer, s)
				}, nil
			}
			return func(o *engine.Run) error {
				s, err := o.Status()
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c, s)
				}
				return printStatus(c.App.Writer, s)
			}, nil
		}),
	}
}

// printStory writes a job's story for a person: the job's status lines,
// then each hand-out with its prompt, and under it what followed it, a
// line each as log prints them but with absolute paths, each launch of
// custodian drive followed by what its evidence records. Everything it
// prints, engine.Story decided.
func printStory(w io.Writer, s engine.JobStory) error {
	var b strings.Builder
	if s.Status != nil {
		var job strings.Builder
		printJob(&job, *s.Status, s.Job, true)
		b.WriteString(strings.TrimPrefix(job.String(), "- "))
	} else {
		fmt.Fprintf(&b, "%s: no longer a job of the run: its state keeps no record of it\n", s.Job)
	}
	fmt.Fprintf(&b, "run: %s\n", s.Run)
	if s.Output != "" {
		fmt.Fprintf(&b, "output: %s\n", s.Output)
	}
	for _, l := range s.Workers {
		fmt.Fprintf(&b, "running: launch %d of attempt %d, pid %d\n", l.Launch, l.Attempt, l.Process.Pid)
	}
	if len(s.Before) > 0 {
		fmt.Fprintln(&b, "before its first hand-out:")
		for _, e := range s.Before {
			fmt.Fprintf(&b, "  %s", logLine(e))
		}
	}
	for _, h := range s.Handouts {
		fmt.Fprintf(&b, "attempt %d, handed out by step %d at %s: %s\n", h.Attempt, h.Step, h.At, h.Prompt)
		told := map[int]bool{}
		for _, e := range h.Events {
			fmt.Fprintf(&b, "  %s", logLine(e))
			if e.Type != engine.EventLaunch {
				continue
			}
			for _, l := range h.Launches {
				if l.Recorded && l.Evidence != "" && l.Evidence == e.Path && !told[l.Launch] {
					told[l.Launch] = true
					printLaunchEvidence(&b, l)
				}
			}
		}
		for _, l := range h.Launches {
			if !l.Recorded {
				of := ""
				if l.Attempt > 0 {
					of = fmt.Sprintf(", attempt %d", l.Attempt)
				}
				fmt.Fprintf(&b, "  launch %d%s: %s; evidence %s\n", l.Launch, of, launchText(l), l.Evidence)
				fmt.Fprintln(&b, "    not in the history: a drive kept this evidence and ended before it recorded the launch")
				printLaunchEvidence(&b, l)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// launchText is how a launch ended, in words.
func launchText(l engine.LaunchStory) string {
	if l.Text != "" {
		return l.Text
	}
	if l.Outcome != "" {
		return l.Outcome
	}
	return "its end is not recorded"
}

// maxMessage bounds how much of a worker's final message a story prints:
// enough to recognize it; launch.json keeps it whole.
const maxMessage = 300

// printLaunchEvidence writes what a launch's evidence records: the worker,
// its process and times, its final message, and where its output is kept.
func printLaunchEvidence(b *strings.Builder, l engine.LaunchStory) {
	r := l.Record
	if r == nil {
		fmt.Fprintf(b, "    launch %d: its launch.json is missing: a drive ended while it kept the evidence\n", l.Launch)
		return
	}
	line := fmt.Sprintf("    launch %d: worker %s, pid %d on host %s, from %s to %s", l.Launch, r.Worker, r.Process.Pid, r.Host, r.StartedAt, r.EndedAt)
	if r.Session != "" {
		line += ", session " + r.Session
	}
	fmt.Fprintln(b, engine.OneLine(line))
	if u := r.UsageLimit; u != nil {
		resets := "an unknown time"
		if u.Known {
			resets = u.Resets
		}
		fmt.Fprintf(b, "    usage limit: resets at %s: %s\n", resets, engine.OneLine(u.Message))
	}
	if r.Message != "" {
		message := engine.OneLine(r.Message)
		if len(message) > maxMessage {
			cut := maxMessage
			for cut > 0 && !utf8.RuneStart(message[cut]) {
				cut--
			}
			message = message[:cut] + "... (launch.json keeps the whole message)"
		}
		fmt.Fprintf(b, "    message: %s\n", message)
	}
	for _, out := range []struct {
		name, path string
		rec        engine.OutputRecord
	}{{"stdout", l.Stdout, r.Stdout}, {"stderr", l.Stderr, r.Stderr}} {
		kept := fmt.Sprintf("%d bytes written", out.rec.Bytes)
		if int64(out.rec.Kept) < out.rec.Bytes {
			kept += fmt.Sprintf(", the last %d kept", out.rec.Kept)
		}
		fmt.Fprintf(b, "    %s: %s (%s)\n", out.name, out.path, kept)
	}
}

// printStatus writes a status for a person: the run, the last outcome, a
// line per job and per effect with what stands in their way, and what each
// party may do now. Paths are absolute, as step prints them. Everything it
// prints, workflow.Status decided.
func printStatus(w io.Writer, s engine.Status) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", s.Summary())
	fmt.Fprintf(&b, "run: %s\n", s.Run)
	fmt.Fprintf(&b, "definition: %s (%s)\n", s.Definition, s.Params)
	printBuilds(&b, s)
	if s.Last == nil {
		fmt.Fprintln(&b, "last step: none")
	} else {
		fmt.Fprintf(&b, "last step: %d, %s, at %s\n", s.Last.Step, s.Last.Outcome.Kind, s.Last.At)
	}
	if len(s.Jobs) > 0 {
		fmt.Fprintln(&b, "jobs:")
	}
	for _, g := range alikeJobs(s.Jobs) {
		printJobs(&b, g)
	}
	if rd := s.Round; rd != nil {
		workers := make([]string, len(rd.Workers))
		for i, w := range rd.Workers {
			workers[i] = fmt.Sprintf("%s (pid %d)", w.Job, w.Process.Pid)
			if w.Host != "" && w.Host != rd.Host {
				workers[i] = fmt.Sprintf("%s (pid %d on host %s)", w.Job, w.Process.Pid, w.Host)
			}
		}
		if w := rd.Workflow; w != nil {
			fmt.Fprintf(&b, "driven: by Temporal workflow %s (namespace %s at %s), from host %s\n", w.ID, w.Namespace, w.Address, rd.Host)
		}
		if rd.Driver.Pid != 0 {
			fmt.Fprintf(&b, "driven: by custodian drive (pid %d on host %s)\n", rd.Driver.Pid, rd.Host)
		}
		if len(workers) > 0 {
			fmt.Fprintf(&b, "workers running: step %d: %s\n", rd.Step, strings.Join(workers, ", "))
		}
	}
	if blk := s.Workflow; blk != nil {
		printStatusBlock(&b, "workflow: stopped: ", *blk)
	}
	for _, blk := range s.Blocks {
		printStatusBlock(&b, blk.Subject.String()+": blocked: ", blk)
	}
	for _, e := range s.Uncertain {
		fmt.Fprintf(&b, "%s: uncertain: %s\n", engine.EffectSubject(e.Name), e.Detail)
	}
	if len(s.Decisions) > 0 {
		fmt.Fprintln(&b, "decisions:")
	}
	for _, d := range s.Decisions {
		why := ""
		if d.Text != "" {
			why = ": " + engine.OneLine(d.Text)
		}
		fmt.Fprintf(&b, "- %s: %s, by the operator at %s%s\n", d.Name, d.Choice, d.At, why)
	}
	if len(s.Effects) > 0 {
		fmt.Fprintln(&b, "effects:")
	}
	for _, e := range s.Effects {
		fmt.Fprintf(&b, "- %s: %s, %s, by %s at %s\n", e.Name, e.Status, runs(e.Runs), e.By, e.At)
		if len(e.Changed) > 0 {
			fmt.Fprintf(&b, "  inputs changed since: %s\n", strings.Join(e.Changed, ", "))
		}
		if e.Interrupted {
			fmt.Fprintln(&b, "  interrupted: its start is journaled and its end is not; a step is inside it, or a process ended inside it")
		}
		if e.Uncertain != "" {
			fmt.Fprintf(&b, "  uncertain: %s\n", e.Uncertain)
		}
		if blk := e.Block; blk != nil {
			printStatusBlock(&b, "  block: ", *blk)
		}
	}
	if a := s.Abandoned; a != nil {
		fmt.Fprintf(&b, "abandoned: by the operator at %s: %s\n", a.At, engine.OneLine(a.Text))
	}
	if r := s.StopReport; r != nil {
		fmt.Fprintf(&b, "stopped: the agent orchestrator reported a stop after step %d (report %d): %s\n", s.Steps, r.Number, engine.OneLine(r.Text))
	}
	if settled := s.SettledText(); settled != "" {
		fmt.Fprintf(&b, "since step %d: the operator %s\n", s.Last.Step, settled)
	}
	fmt.Fprintf(&b, "agent orchestrator: %s\n", s.Agent)
	fmt.Fprintf(&b, "operator: %s\n", s.Operator)
	_, err := io.WriteString(w, b.String())
	return err
}

// printStatusBlock writes a block as two lines: why and what it permits, then
// where its record is.
func printStatusBlock(b *strings.Builder, prefix string, blk engine.Block) {
	permits := "permits a repair"
	if blk.Permitted == engine.PermitStop {
		permits = "permits only stopping"
	}
	indent := "  "
	if strings.HasPrefix(prefix, "  ") {
		indent = "    "
	}
	fmt.Fprintf(b, "%s%s (%s); %s\n", prefix, blk.Reason, blk.Kind, permits)
	fmt.Fprintf(b, "%srecord: %s\n", indent, blk.Record)
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

func runs(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

// alikeJobs groups jobs whose status lines would say the same but for
// their names and paths, in the order of each group's first job; a group
// of fewer than engine.ManyAlike is split into jobs of their own.
func alikeJobs(jobs []engine.JobStatus) [][]engine.JobStatus {
	var keys []string
	groups := map[string][]engine.JobStatus{}
	for _, j := range jobs {
		var lines strings.Builder
		printJob(&lines, j, "JOB", false)
		key := lines.String()
		if groups[key] == nil {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], j)
	}
	var out [][]engine.JobStatus
	for _, key := range keys {
		g := groups[key]
		if len(g) < engine.ManyAlike {
			for _, j := range g {
				out = append(out, []engine.JobStatus{j})
			}
			continue
		}
		out = append(out, g)
	}
	return out
}

// printJobs writes a job, or a group of alike jobs once, naming a few.
func printJobs(b *strings.Builder, g []engine.JobStatus) {
	if len(g) == 1 {
		printJob(b, g[0], g[0].Name, true)
		return
	}
	names := make([]string, len(g))
	for i, j := range g {
		names[i] = j.Name
	}
	head := fmt.Sprintf("%d jobs (%s)", len(g), listedNames(names))
	printJob(b, g[0], head, false)
}

// printJob writes a job's lines under the name given; without paths, a
// line names the kind of file rather than the job's own.
func printJob(b *strings.Builder, j engine.JobStatus, name string, paths bool) {
	fmt.Fprintf(b, "- %s: %s, %s\n", name, j.State, attempts(j.Attempts))
	if len(j.Changed) > 0 {
		fmt.Fprintf(b, "  changed since accepted: %s\n", strings.Join(j.Changed, ", "))
	}
	f := j.LastFailure
	if f != nil && j.State != engine.JobAccepted && (j.Block == nil || f.Reason != j.Block.Reason || f.Kind != string(j.Block.Kind)) {
		fmt.Fprintf(b, "  last failure: %s (%s)\n", f.Reason, f.Kind)
	}
	if j.Spared > 0 {
		fmt.Fprintf(b, "  not charged: %s (hand-outs no worker attempted: %d of at most %d)\n", j.Spare, j.Spared, engine.MaxSpared)
	}
	if blk := j.Block; blk != nil {
		if !paths {
			blk2 := *blk
			blk2.Record = "each job's own, under " + engine.StateDir + "/jobs/JOB/"
			blk = &blk2
		}
		printStatusBlock(b, "  block: ", *blk)
	}
	if l := j.LastLaunch; l != nil {
		evidence := l.Evidence
		if !paths {
			evidence = "under " + engine.StateDir + "/jobs/JOB/"
		}
		fmt.Fprintf(b, "  last launch: attempt %d, %s; evidence %s\n", l.Attempt, l.Text, evidence)
	}
}

// listedNames names a few of many: "a, b, c and 27 more".
func listedNames(names []string) string {
	const shown = 3
	if len(names) <= shown+1 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

// printBuilds names the builds that started the run and last stepped it,
// and says when this binary is another build than the run's accepted jobs
// were held against: its changes of their tasks wait for the operator.
func printBuilds(b *strings.Builder, s engine.Status) {
	bs := s.Builds
	started := engine.BuildText(bs.Started)
	if bs.Started.ID == "" && s.Version != "" {
		started = "custodian " + s.Version
	}
	switch {
	case s.Last == nil:
		fmt.Fprintf(b, "build: started by %s; never stepped\n", started)
	case bs.Stepped == bs.Started && bs.Stepped.ID != "":
		fmt.Fprintf(b, "build: started and last stepped by %s\n", started)
	default:
		fmt.Fprintf(b, "build: started by %s; last stepped by %s\n", started, engine.BuildText(bs.Stepped))
	}
	if s.Last != nil && (bs.This.ID == "" || bs.This != bs.Checked) {
		fmt.Fprintf(b, "this binary: %s, another build: a change it makes of an accepted job's task waits for the operator\n",
			engine.BuildText(bs.This))
	}
}
