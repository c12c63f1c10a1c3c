package engine

import (
	"slices"
	"sort"

	"github.com/custodian-run/custodian/store"
)

// findBlocks gathers the step's blocks in their stable order, jobs by name,
// then workflow, then effects by name, then questions by name, with the
// records of the workflow's, the effects' and the questions' blocks and the
// workflow's counts as they would commit.
func (run *Run) findBlocks(r *replay, byName []*named, reports []store.Report) ([]Block, []textFile, store.WorkflowState) {
	jobBlocked := slices.ContainsFunc(byName, func(n *named) bool { return n.block != nil })
	if !r.failed() && !jobBlocked && len(r.effectBlocks) == 0 && len(r.uncertain) == 0 && len(r.open) == 0 && !r.ranToEnd && !hasHandout(r) {
		// Defensive: a path ended with nothing to hand out and nothing blocking.
		r.fail(failure{kind: BlockStalled, message: "the definition ended a path with nothing to hand out", place: "stalled"})
	}
	var blocks []Block
	var texts []textFile
	for _, n := range byName {
		if n.block != nil {
			blocks = append(blocks, run.jobBlock(n))
		}
	}
	wstate, wb, wtext := run.workflowBlock(r, reports)
	if wb != nil {
		blocks = append(blocks, *wb)
		texts = append(texts, wtext)
	}
	sort.Slice(r.effectBlocks, func(i, j int) bool { return r.effectBlocks[i].name < r.effectBlocks[j].name })
	for _, eb := range r.effectBlocks {
		b, text := run.effectBlock(eb, reports)
		blocks = append(blocks, b)
		texts = append(texts, text)
	}
	qb, qtexts := run.decisionBlocks(r, reports)
	return append(blocks, qb...), append(texts, qtexts...), wstate
}

func (run *Run) jobBlock(n *named) Block {
	return Block{
		Subject:   JobSubject(n.spec.job.Name),
		Kind:      n.block.kind,
		Reason:    n.block.reason,
		Record:    run.abs(n.block.record),
		Permitted: n.block.permitted,
		Scope:     repairScope(run.def),
	}
}

// stoppedBlock is the standing block of a subject that permits only stopping.
func (run *Run) stoppedBlock(subject Subject, s *store.Stop) Block {
	return Block{
		Subject:   subject,
		Kind:      BlockKind(s.Kind),
		Reason:    s.Reason,
		Record:    run.abs(s.Record),
		Permitted: PermitStop,
		Scope:     repairScope(run.def),
	}
}

// workflowBlock counts this step's failures of the definition's own code,
// by place, and returns their block. A step without failures starts every
// count over.
func (run *Run) workflowBlock(r *replay, reports []store.Report) (store.WorkflowState, *Block, textFile) {
	w := r.state.Workflow
	// A place's count runs over consecutive failing steps: a place that did
	// not fail in this step starts over.
	w.Places = map[string]int{}
	if !r.failed() {
		return w, nil, textFile{}
	}
	permitted := PermitRepair
	kind := BlockWorkflowError
	reason := r.failures[0].message
	seen := map[string]bool{}
	for _, f := range r.failures {
		if f.kind != "" && kind == BlockWorkflowError {
			kind = f.kind
		}
		if f.stop {
			if kind != BlockWorkflowStop {
				reason = f.message
			}
			kind, permitted = BlockWorkflowStop, PermitStop
			continue
		}
		if !seen[f.place] {
			seen[f.place] = true
			w.Places[f.place] = r.state.Workflow.Places[f.place] + 1
		}
		if w.Places[f.place] > r.limits.Repairs {
			permitted = PermitStop
		}
	}
	w.Blocks++
	rel := store.WorkflowBlockPath(w.Blocks)
	if permitted == PermitStop {
		w.Stopped = &store.Stop{Kind: string(kind), Reason: reason, Record: rel}
	}
	b := &Block{
		Subject:   WorkflowSubject,
		Kind:      kind,
		Reason:    reason,
		Record:    run.abs(rel),
		Permitted: permitted,
		Scope:     repairScope(run.def),
	}
	return w, b, textFile{label: "block", rel: rel, data: workflowBlockText(b, r, w.Places, reports)}
}

func (run *Run) effectBlock(eb effectBlock, reports []store.Report) (Block, textFile) {
	rel := store.EffectBlockPath(eb.name)
	b := Block{
		Subject:   EffectSubject(eb.name),
		Kind:      eb.kind,
		Reason:    eb.reason,
		Record:    run.abs(rel),
		Permitted: PermitStop,
		Scope:     repairScope(run.def),
	}
	return b, textFile{label: "block", rel: rel, data: effectBlockText(run, b, eb, reports)}
}
