package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/custodian-run/custodian/internal/names"
	"github.com/custodian-run/custodian/store"
)

// A definition asks the operator with Context.Decide. A question without a
// recorded choice ends the calling path, as a wait on a job that is not
// accepted does, and the step blocks on decision NAME (awaiting-decision),
// which permits only stopping; the operator's `custodian decide` records
// the choice in the state and the history, and the next replay returns it.
// The questions the last step asked and found no choice for are the
// state's Questions; the choices, its Decisions.

// Decide is Context.Decide.
func (r *replay) Decide(name, text string, choices []string) string {
	q, err := r.question(name, text, choices)
	if err != nil {
		r.breakRule(err)
	}
	if asked, ok := r.asked[name]; ok && !sameQuestion(asked, q) {
		r.breakRule(r.rule("decision %s is asked twice in one step, with different questions or choices; give each question its own name", name))
	}
	r.asked[name] = q
	if d, ok := r.state.Decisions[name]; ok && slices.Contains(q.Choices, d.Choice) {
		return d.Choice
	}
	r.open[name] = q
	r.endPath()
	return ""
}

// question is the question Decide asks, or the rule it breaks.
func (r *replay) question(name, text string, choices []string) (store.Question, error) {
	if p := names.Problem("decision", name); p != "" {
		return store.Question{}, r.rule("%s", p)
	}
	if strings.TrimSpace(text) == "" || !utf8.ValidString(text) ||
		strings.ContainsFunc(text, func(c rune) bool { return unicode.IsControl(c) && c != '\n' && c != '\t' }) {
		return store.Question{}, r.rule("decision %s: the question is empty or holds control characters; ask it in words a person reads", name)
	}
	if len(choices) == 0 {
		return store.Question{}, r.rule("decision %s: give the choices the operator picks from", name)
	}
	for i, c := range choices {
		if p := names.Problem("choice", c); p != "" {
			return store.Question{}, r.rule("decision %s: %s; the operator types it", name, p)
		}
		if slices.Contains(choices[:i], c) {
			return store.Question{}, r.rule("decision %s: choice %s is given twice", name, c)
		}
	}
	return store.Question{Text: text, Choices: slices.Clone(choices)}, nil
}

func sameQuestion(a, b store.Question) bool {
	return a.Text == b.Text && slices.Equal(a.Choices, b.Choices)
}

// decisionBlocks are the blocks of the questions this step asked and found
// no choice for, by name, with their records.
func (run *Run) decisionBlocks(r *replay, reports []store.Report) ([]Block, []textFile) {
	var blocks []Block
	var texts []textFile
	for _, name := range slices.Sorted(maps.Keys(r.open)) {
		q := r.open[name]
		rel := store.DecisionBlockPath(name)
		b := Block{
			Subject:   DecisionSubject(name),
			Kind:      BlockAwaitingDecision,
			Reason:    fmt.Sprintf("the definition asks the operator: %s (choices: %s)", OneLine(strings.TrimSpace(q.Text)), join(q.Choices)),
			Record:    run.abs(rel),
			Permitted: PermitStop,
			Scope:     repairScope(run.def),
		}
		blocks = append(blocks, b)
		texts = append(texts, textFile{label: "block", rel: rel, data: decisionBlockText(run, b, name, q, r.state.Decisions[name], reports)})
	}
	return blocks, texts
}

// decisionBlockText is the record of a question that waits for the
// operator's choice.
func decisionBlockText(run *Run, b Block, name string, q store.Question, was store.Decision, reports []store.Report) []byte {
	var t strings.Builder
	blockHeader(&t, b.Subject, b.Kind, b.Reason, b.Permitted, b.Scope)
	fmt.Fprintf(&t, "\n## The question\n\n%s\n\n## The choices\n\n", strings.TrimSpace(q.Text))
	for _, c := range q.Choices {
		fmt.Fprintf(&t, "- `%s`\n", c)
	}
	if was.Choice != "" {
		fmt.Fprintf(&t, "\nThe operator chose `%s` at %s, which the definition no longer offers: it asks again.\n", was.Choice, was.At)
	}
	fmt.Fprintf(&t, "\nThe path that asks waits; nothing is handed out while a question is open. The operator records a choice, "+
		"and why, with:\n\n    custodian decide %s %s CHOICE --text WHY\n\nThen the loop resumes: the next step's replay returns the choice.\n",
		shellQuote(run.records.Dir), name)
	writeReports(&t, b.Subject, reports)
	return []byte(t.String())
}

// Decide records the operator's choice on the question name, which the
// last step asked (Context.Decide), and why: the next replay returns it.
// Only the operator decides, as only the operator resolves.
func (run *Run) Decide(name, choice, text string) error {
	return run.locked(func(rec *loaded) error {
		st := rec.state
		q, ok := st.Questions[name]
		if !ok {
			open := slices.Sorted(maps.Keys(st.Questions))
			hint := "custodian status RUN shows the questions the run waits on; it waits on none"
			if len(open) > 0 {
				hint = "the run waits on: " + join(open)
			}
			if d, decided := st.Decisions[name]; decided {
				return refused(hint, "decision %s was made at %s (%s); the last step asked nothing by that name", name, d.At, d.Choice)
			}
			return refused(hint, "the last step of run %s asked no question named %q", run.records.Dir, name)
		}
		if !slices.Contains(q.Choices, choice) {
			return &UsageError{Message: fmt.Sprintf("decide: %q is not a choice of decision %s", choice, name),
				Hint: "choose one of: " + join(q.Choices)}
		}
		if strings.ContainsFunc(text, unicode.IsControl) || !utf8.ValidString(text) {
			return &UsageError{Message: "decide: --text holds control characters or is not UTF-8", Hint: "say why in one line of text"}
		}
		st.Decisions[name] = store.Decision{Choice: choice, Text: text, At: store.Now()}
		delete(st.Questions, name)
		why := choice
		if text != "" {
			why += ": " + text
		}
		return run.commit("decide", st, sealHistory(st, rec.effects, []store.Event{{Type: store.EventDecide, Subject: string(DecisionSubject(name)), Text: why}}))
	})
}
