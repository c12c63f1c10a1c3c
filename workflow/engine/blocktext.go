package engine

import (
	"fmt"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// Block records are Markdown files for the agent orchestrator and the
// operator: why a subject blocked, what led to it and what is permitted.
// A step writes one at the path its outcome prints; no command reads them
// back.

func blockHeader(b *strings.Builder, subject Subject, kind BlockKind, reason string, permitted Permission, scope string) {
	fmt.Fprintf(b, "# Block on %s\n\n", subject)
	fmt.Fprintf(b, "- Kind: %s\n", kind)
	fmt.Fprintf(b, "- Reason: %s\n", reason)
	fmt.Fprintf(b, "- Permitted: %s\n", permitted)
	fmt.Fprintf(b, "- Repair scope: %s\n", scope)
}

// jobBlockText is a job's block record: why it blocked, every failed
// attempt with the validator's messages, the problem report, exactly where
// each moved file went, and the reports that concern the job.
func jobBlockText(o *Run, r *replay, n *named, kept []store.Move, reports []store.Report) []byte {
	var b strings.Builder
	blk := n.block
	blockHeader(&b, JobSubject(n.spec.job.Name), blk.kind, blk.reason, blk.permitted, repairScope(o.def))
	fmt.Fprintf(&b, "- Hand-outs in the run: %d\n", n.js.Handouts)
	fmt.Fprintf(&b, "- Expected output: %s\n", r.abs(n.spec.output))
	fmt.Fprintf(&b, "- Expected problem report: %s\n", r.abs(n.spec.problem))
	if len(blk.attempts) > 0 {
		b.WriteString("\n## Attempts\n\n")
		for _, a := range blk.attempts {
			fmt.Fprintf(&b, "- %s\n", a)
		}
	}
	if blk.problem != "" {
		// Quoted line by line: nothing the worker wrote can pass for a line
		// of the record.
		b.WriteString("\n## Problem report\n\n")
		for _, line := range strings.Split(strings.TrimRight(blk.problem, "\n"), "\n") {
			b.WriteString(strings.TrimRight("> "+OneLine(line), " ") + "\n")
		}
	}
	if len(kept) > 0 {
		b.WriteString("\n## Kept\n\n")
		for _, m := range kept {
			fmt.Fprintf(&b, "- %s is moved to %s\n", m.Source, m.Target)
		}
	}
	writeReports(&b, JobSubject(n.spec.job.Name), reports)
	return []byte(b.String())
}

// workflowBlockText is the block record of failures in the
// definition's own code: each failure with its place and its stack.
func workflowBlockText(blk *Block, r *replay, places map[string]int, reports []store.Report) []byte {
	var b strings.Builder
	blockHeader(&b, WorkflowSubject, blk.Kind, blk.Reason, blk.Permitted, blk.Scope)
	for _, f := range r.failures {
		if f.stop {
			fmt.Fprintf(&b, "\n## Stop\n\n%s\n", f.message)
			continue
		}
		where := "at " + f.place
		if f.returned {
			where = "returned by Run"
		}
		fmt.Fprintf(&b, "\n## %s, %s (%s)\n\n", f.message, where, inARow(places[f.place]))
		if f.detail != "" {
			fmt.Fprintf(&b, "```\n%s\n```\n", strings.TrimRight(f.detail, "\n"))
		}
	}
	writeReports(&b, WorkflowSubject, reports)
	return []byte(b.String())
}

// stopText is the record of a stop of the workflow that the step decides
// before the definition runs or without carrying out its replay: body says
// what the operator needs to know.
func stopText(o *Run, st *store.State, blk Block, body string, reports []store.Report) []byte {
	var b strings.Builder
	blockHeader(&b, blk.Subject, blk.Kind, blk.Reason, blk.Permitted, blk.Scope)
	b.WriteString(body)
	if blk.Kind == BlockDefinitionChanged {
		fmt.Fprintf(&b, "\nNothing was moved or handed out. The operator either goes back to the binary whose definition the run last agreed with "+
			"(%s), or lets these changes through with `custodian release %s workflow`: the next step then reopens the jobs "+
			"whose task changed and drops the ones no longer named.\n", o.builds(st).GoBack(o.records.Record.Version), shellQuote(o.records.Dir))
	}
	writeReports(&b, WorkflowSubject, reports)
	return []byte(b.String())
}

// writeReports lists the reports on subject and those that name no job.
func writeReports(b *strings.Builder, subject Subject, reports []store.Report) {
	var lines []string
	for _, rep := range reports {
		if rep.Job != "" && JobSubject(rep.Job) != subject {
			continue
		}
		on := ""
		if rep.Job != "" {
			on = " on " + rep.Job
		}
		lines = append(lines, fmt.Sprintf("- report %d, %s, %s%s: %s", rep.Number, rep.At, rep.Event, on, OneLine(rep.Text)))
	}
	if len(lines) > 0 {
		b.WriteString("\n## Reports\n\n")
		b.WriteString(strings.Join(lines, "\n"))
		b.WriteString("\n")
	}
}

// effectBlockText is an effect's block record. Code never repeats or
// undoes an effect, so only the operator can settle it.
func effectBlockText(o *Run, blk Block, eb effectBlock, reports []store.Report) []byte {
	var b strings.Builder
	blockHeader(&b, blk.Subject, blk.Kind, blk.Reason, blk.Permitted, blk.Scope)
	inputs := "none"
	if len(eb.inputs) > 0 {
		inputs = strings.Join(eb.inputs, ", ")
	}
	fmt.Fprintf(&b, "- Inputs: %s\n\n", inputs)
	writeResolve(&b, o, eb.name)
	writeReports(&b, WorkflowSubject, reports)
	return []byte(b.String())
}

// uncertainText is the record of an effect whose fate is uncertain: what
// is known, and what the operator does.
func uncertainText(o *Run, e EffectState, reports []store.Report) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Effect %s is uncertain\n\n", e.Name)
	fmt.Fprintf(&b, "- What is known: %s\n", OneLine(e.Detail))
	b.WriteString("- Permitted: stop and report to the operator; the operator establishes what took place\n\n")
	writeResolve(&b, o, e.Name)
	writeReports(&b, WorkflowSubject, reports)
	return []byte(b.String())
}

// writeResolve says how the operator settles an effect.
func writeResolve(b *strings.Builder, o *Run, name string) {
	run := shellQuote(o.records.Dir)
	fmt.Fprintf(b, "The operator establishes what is outside and records it with "+
		"`custodian resolve %s %s completed` (it stands) or `custodian resolve %s %s absent` "+
		"(it runs again at the next step that reaches it: remove whatever part of it took place first).\n",
		run, name, run, name)
}

func inARow(n int) string {
	if n == 1 {
		return "the first step to fail here"
	}
	return fmt.Sprintf("failed here in %d steps in a row", n)
}
