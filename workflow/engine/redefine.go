package engine

import (
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// A changed definition never silently reopens accepted work. When a step
// finds accepted jobs whose prompt, launch parameters or output path the
// definition changed, accepted jobs it no longer names while nothing of
// the run changed (noLongerNamed), an accepted job no longer named whose
// output a new job claims (a rename without Formerly, which would take the
// output away and make it again), or a patch removed that the run lacks,
// it blocks on workflow with the kind definition-changed, which permits
// only stopping, and changes nothing: the operator goes back to the binary
// that started the run (whose step lifts the stop, letting nothing
// through), or releases the workflow, which lets exactly the changes the
// block listed through (WorkflowState.Allowed). Changes that come from the
// run's own course (an input changed, an upstream job reopened, a branch a
// file the definition looked at decides) reopen or drop jobs as they
// always did.

// change is one change of the definition that a step found.
type change struct {
	key         string   // what changed: a job's name, or "patch NAME"
	fingerprint string   // the change itself, so that a release lets only it through
	subject     string   // the job or patch, in words
	what        []string // what changed, a line each
	detail      string   // a diff, or ""
}

// allowed says whether the operator released this change.
func (r *replay) allowed(c change) bool {
	return r.state.Workflow.Allowed[c.key] == c.fingerprint
}

// redefined judges an accepted job against what the definition now says of
// it. A change of its prompt, launch parameters or output path by the
// build every accepted job was last held against is the run's own course (data the
// definition reads changed): the job reopens, and n.course says what
// changed. By another build, or an unknown one, it is new code: a change
// the operator has not let through is recorded, and the job is taken as
// accepted for the rest of the replay, so that one step finds every change
// and blocks on all of them. It says whether it found such a change.
func (r *replay) redefined(n *named) bool {
	was, now := *n.js.Input, n.current
	var what []string
	detail := ""
	if was.Prompt != now.Prompt {
		what = append(what, "the prompt changed")
		detail = r.promptDiff(n)
	}
	if was.Launch != now.Launch {
		what = append(what, fmt.Sprintf("the launch parameters changed: %s → %s", was.Launch, now.Launch))
	}
	if was.Output != now.Output {
		what = append(what, fmt.Sprintf("the output path changed: %s → %s", was.Output, now.Output))
	}
	if len(what) == 0 {
		// A release let through a change this binary does not make (the
		// operator went back to the binary that started the run): the
		// change it let through is not this one, and a later binary that
		// makes it again must stop again.
		delete(r.state.Workflow.Allowed, n.spec.job.Name)
		return false
	}
	if sameBuild(r.build, r.state.Checked) {
		n.course = what
		return false
	}
	c := change{key: n.spec.job.Name, fingerprint: sha256Hex([]byte(now.Prompt + "\x00" + now.Launch + "\x00" + now.Output)),
		subject: "job " + n.spec.job.Name, what: what, detail: detail}
	if r.allowed(c) {
		return false
	}
	r.changes = append(r.changes, c)
	return true
}

// finishedUnderNewCode says whether the run finished (its last step that
// carried out a replay was done) and this replay is another build's than
// the one its accepted jobs were held against: work it would start anew is
// the new code's, which the operator lets through or not. A finished run
// stays finished.
func (r *replay) finishedUnderNewCode() bool {
	return r.state.Last == string(KindDone) && !sameBuild(r.build, r.state.Checked)
}

// newWork records new work of a finished run under new code, unless the
// operator let it through.
func (r *replay) newWork(c change) {
	if !r.allowed(c) {
		r.changes = append(r.changes, c)
	}
}

// heldEveryAccepted says whether this replay held every accepted job the
// run names against the definition: a replay that ended at a wait before
// some of them cannot tell whether this build still gives them the same
// task.
func (r *replay) heldEveryAccepted() bool {
	if r.ranToEnd || sameBuild(r.build, r.state.Checked) {
		return true
	}
	for _, name := range r.state.Named {
		if js := r.state.Jobs[name]; js != nil && js.Accepted != "" && r.named[name] == nil {
			return false
		}
	}
	return true
}

// promptDiff is the unified diff of the job's last handed-out prompt
// against the prompt the definition gives now, without the frame.
func (r *replay) promptDiff(n *named) string {
	old := "(the prompt file of the last hand-out cannot be read)"
	rel := store.PromptPath(n.spec.job.Name, n.js.Handouts)
	if data, info, _, err := r.run.ReadText(rel, maxPromptRead); err == nil && info.Kind == store.Regular {
		if p, err := ParsePrompt(data); err == nil {
			old = p.Task
		}
	}
	return unifiedDiff(rel, "the prompt now", old+"\n", strings.TrimRight(n.spec.job.Prompt, " \t\r\n")+"\n")
}

// maxPromptRead bounds the read of an old prompt file for a diff.
const maxPromptRead = 4 << 20

// carryOver gives a newly named job the record of a former name, when the
// definition says it was renamed (Job.Formerly) and nothing else changed:
// its accepted output carries over, nothing is redone. A former job whose
// task changed too is a changed definition. It says whether the job now
// has a record.
func (r *replay) carryOver(n *named) bool {
	for _, former := range n.spec.job.Formerly {
		js := r.state.Jobs[former]
		if js == nil || js.Accepted == "" || r.named[former] != nil {
			continue
		}
		if sameInputs(*js.Input, n.current) && js.Input.Output == n.current.Output {
			n.js = cloneJob(js)
			n.carriedFrom = former
			return true
		}
		var what []string
		for _, c := range changes(*js.Input, n.current) {
			what = append(what, c+" changed")
		}
		if js.Input.Output != n.current.Output {
			what = append(what, fmt.Sprintf("the output path changed: %s → %s", js.Input.Output, n.current.Output))
		}
		c := change{key: former, fingerprint: "gone, renamed to " + n.spec.job.Name + " " + digest(n.current), subject: fmt.Sprintf("job %s, now %s", former, n.spec.job.Name),
			what: append([]string{"renamed to " + n.spec.job.Name + ", and its task changed, so its output cannot carry over"}, what...)}
		if !r.allowed(c) {
			r.changes = append(r.changes, c)
		}
		return false
	}
	return false
}

// renamedWithoutFormerly finds a new job that writes the output of an
// accepted job the replay does not name: a rename that did not say
// Formerly, whose output would be taken away and made again.
func (r *replay) renamedWithoutFormerly(n *named) {
	for _, old := range r.state.Named {
		js := r.state.Jobs[old]
		if js == nil || js.Accepted == "" || js.Input.Output != n.spec.output || r.named[old] != nil {
			continue
		}
		c := change{key: old, fingerprint: "gone, its output claimed by " + n.spec.job.Name, subject: "job " + old,
			what: []string{fmt.Sprintf("it is no longer named, and job %s writes its output %s; "+
				"if %s is %s renamed, declare Formerly: []string{%q} on it", n.spec.job.Name, n.spec.output, n.spec.job.Name, old, old)}}
		if !r.allowed(c) {
			r.changes = append(r.changes, c)
		}
	}
}

// noLongerNamed finds accepted jobs that a replay which ran to its end no
// longer names while the run is as the last such replay saw it: every job
// it names stands as it stood, and every path the definition looked at
// (Context.Path) is as it was. Then nothing of the run's own course
// changed, and the definition's code dropped them (removed, or renamed
// without Formerly). A job that a changed file or a newly accepted output
// leaves out (a manifest that lists one item fewer) is the run's course,
// and is dropped as before. Either way its output stays as it was
// accepted.
func (r *replay) noLongerNamed() {
	if !r.ranToEnd {
		return
	}
	for _, n := range r.order {
		if n.verdict != verdictAccepted || n.carriedFrom != "" || n.was == nil || n.was.Accepted != n.js.Accepted {
			return
		}
	}
	for rel, seen := range r.state.Looked {
		if r.lookAt(rel) != seen {
			return
		}
	}
	for _, name := range r.state.Named {
		js := r.state.Jobs[name]
		if js == nil || js.Accepted == "" || r.named[name] != nil || r.carried[name] {
			continue
		}
		c := change{key: name, fingerprint: "gone", subject: "job " + name,
			what: []string{"the definition no longer names it, and nothing of the run changed since the last step: it was removed, " +
				"or renamed without Formerly (declare Formerly on the new name to carry its output over); its output stays as it was accepted"}}
		if !r.allowed(c) {
			r.changes = append(r.changes, c)
		}
	}
}

// looked returns what lookAt says of each path the definition looked at.
func (r *replay) lookedNow() map[string]string {
	now := map[string]string{}
	for rel := range r.looked {
		now[rel] = r.lookAt(rel)
	}
	return now
}

// lookAt describes the path rel the definition looked at by what a branch
// may turn on, and what a copy of the run keeps: a file by its bytes'
// hash (one stat through the hash cache), a directory by its names,
// anything else by its kind. A path outside the run, or one that cannot be
// looked at, counts as such.
func (r *replay) lookAt(rel string) string {
	clean := path.Clean(filepath.ToSlash(rel))
	if !store.Clean(clean) {
		return "outside the run"
	}
	info, err := r.run.Stat(clean)
	if err != nil {
		return "cannot be looked at"
	}
	switch info.Kind {
	case store.Regular:
		c, err := r.files.Hash(clean, -1)
		if err != nil {
			return "cannot be looked at"
		}
		return "file " + c.SHA256
	case store.Directory:
		names, err := r.run.Names(clean)
		if err != nil {
			return "cannot be looked at"
		}
		return "directory " + sha256Hex([]byte(strings.Join(names, "\x00")))
	}
	return info.Kind.String()
}

// removedPatches finds patches the definition declared at the run's last
// step and no longer declares, which the run does not have: the run took
// the branch they guarded against, and that branch is gone.
func (r *replay) removedPatches(had []string) {
	for _, p := range r.state.Patches {
		if slices.Contains(r.def.Patches, p) || slices.Contains(had, p) {
			continue
		}
		c := change{key: "patch " + p, fingerprint: "removed", subject: "patch " + p,
			what: []string{"the definition no longer declares it, and this run was started without it: " +
				"the code the run took in its place is gone; keep the patch until runs without it are done"}}
		if !r.allowed(c) {
			r.changes = append(r.changes, c)
		}
	}
}

// changesReport is the block's reason and its record's body for the
// changes a step found.
func changesReport(changes []change) (reason, body string, keys map[string]string) {
	keys = map[string]string{}
	var subjects []string
	for _, c := range changes {
		keys[c.key] = c.fingerprint
		subjects = append(subjects, c.subject)
	}
	// Alike changes are said once, with the subjects they are of: a
	// prompt reworded in thirty jobs is one diff.
	var order []string
	alike := map[string][]change{}
	for _, c := range changes {
		key := strings.Join(c.what, "\n") + "\n" + diffBody(c.detail)
		if alike[key] == nil {
			order = append(order, key)
		}
		alike[key] = append(alike[key], c)
	}
	var b strings.Builder
	for _, key := range order {
		group := alike[key]
		if len(group) < ManyAlike {
			for _, c := range group {
				writeChange(&b, c.subject, c)
			}
			continue
		}
		names := make([]string, len(group))
		for i, c := range group {
			names[i] = c.subject
		}
		writeChange(&b, fmt.Sprintf("%d alike: %s", len(group), strings.Join(names, ", ")), group[0])
		fmt.Fprintf(&b, "\n(The diff of %s; the others take away and add the same lines.)\n", group[0].subject)
	}
	reason = "the definition changed under the run: " + strings.Join(subjects, ", ")
	return reason, b.String(), keys
}

// writeChange writes a change of the definition under its heading.
func writeChange(b *strings.Builder, heading string, c change) {
	fmt.Fprintf(b, "\n## %s\n\n", heading)
	for _, w := range c.what {
		fmt.Fprintf(b, "- %s\n", w)
	}
	if c.detail != "" {
		fmt.Fprintf(b, "\n```diff\n%s```\n", c.detail)
	}
}

// diffBody is what two jobs' alike changes share of a diff: the lines it
// takes away and adds, without its headers, which name one job's file,
// and its context, which may name the job.
func diffBody(diff string) string {
	var b strings.Builder
	for _, line := range strings.Split(diff, "\n") {
		if (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")) && !strings.HasPrefix(line, "+++ ") && !strings.HasPrefix(line, "--- ") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// sortedChanges orders changes by their key, so that a block lists them the
// same way at every step, and keeps one change a key: a job found no longer
// named at a rename and again at the end of the replay is one change.
func sortedChanges(changes []change) []change {
	byKey := map[string]change{}
	for _, c := range changes {
		if _, ok := byKey[c.key]; !ok {
			byKey[c.key] = c
		}
	}
	out := make([]change, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, byKey[k])
	}
	return out
}
