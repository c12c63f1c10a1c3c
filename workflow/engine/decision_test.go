package engine_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// boundedReview is the guide's bounded review: a draft and a check of it,
// at most rounds times; when the last check still finds problems, a person
// decides whether the draft ships as it is.
func boundedReview(rounds int) *workflow.Definition {
	return &workflow.Definition{Name: "bounded-review", Run: func(ctx *workflow.Context) error {
		for i := 1; ; i++ {
			draft := job(fmt.Sprintf("draft-%d", i))
			draft.Inputs = nil
			ctx.Agent(draft).Wait()
			check := job(fmt.Sprintf("check-%d", i))
			check.Inputs = []string{draft.Output}
			report, err := os.ReadFile(ctx.Agent(check).Wait())
			if err != nil {
				return err
			}
			if !strings.Contains(string(report), "problem") {
				break
			}
			if i == rounds {
				answer := ctx.Decide(fmt.Sprintf("after-check-%d", i),
					fmt.Sprintf("%d checks found problems; read check-%d.md. Ship the draft as it is, or stop?", i, i), "ship", "stop")
				if answer == "stop" {
					ctx.Stop("the operator chose not to ship the draft")
				}
				break
			}
		}
		ctx.Agent(job("publish-notes")).Wait()
		return nil
	}}
}

// reviewAtQuestion runs the bounded review to its question: every check
// finds a problem.
func reviewAtQuestion(t *testing.T) *harness {
	t.Helper()
	h := startRun(t, boundedReview(2), nil)
	for i := 1; i <= 2; i++ {
		h.work(h.launch(fmt.Sprintf("draft-%d", i)), nil)
		h.work(h.launch(fmt.Sprintf("check-%d", i)), map[string]reply{fmt.Sprintf("check-%d", i): {output: "# Check\n\na problem remains\n"}})
	}
	return h
}

func TestADefinitionAsksAPerson(t *testing.T) {
	h := reviewAtQuestion(t)
	c, err := h.o.Check()
	require.NoError(t, err)
	assert.Contains(t, c.Items, engine.CheckItem{Subject: engine.DecisionSubject("after-check-2"), Details: []string{},
		Reason: "the definition asks the operator: 2 checks found problems; read check-2.md. Ship the draft as it is, or stop? " +
			"(choices: ship, stop); the next step blocks until the operator records a choice"})

	for range 2 {
		b := h.blocked()["decision after-check-2"]
		assert.Equal(t, engine.BlockAwaitingDecision, b.Kind)
		assert.Equal(t, engine.PermitStop, b.Permitted)
		assert.Equal(t, "the definition asks the operator: 2 checks found problems; read check-2.md. Ship the draft as it is, or stop? (choices: ship, stop)", b.Reason)
		assert.Equal(t, h.path(".custodian/decision-blocks/after-check-2.md"), b.Record)
		record := recordText(t, b.Record)
		assert.Contains(t, record, "## The choices\n\n- `ship`\n- `stop`\n")
		assert.Contains(t, record, "custodian decide "+h.dir+" after-check-2 CHOICE --text WHY")
		assert.Nil(t, h.state().Workflow.Stopped, "a question is no stop: nothing to release")
		assert.Zero(t, h.state().Workflow.Blocks, "a question counts toward no limit")
	}
	assert.Equal(t, map[string]store.Question{"after-check-2": {
		Text: "2 checks found problems; read check-2.md. Ship the draft as it is, or stop?", Choices: []string{"ship", "stop"}}}, h.state().Questions)

	s, err := h.o.Status()
	require.NoError(t, err)
	require.Len(t, s.Questions, 1)
	assert.Equal(t, []string{"ship", "stop"}, s.Questions[0].Choices)
	assert.Equal(t, "stop and report it: a block permits only stopping (decision after-check-2)", s.Agent)
	assert.Contains(t, s.Operator, "then choose: custodian decide "+h.dir+" after-check-2 ship|stop --text WHY")

	// Only a choice the question offers, on a question the run waits on.
	var usage *engine.UsageError
	require.ErrorAs(t, h.o.Decide("after-check-2", "maybe", ""), &usage)
	assert.Equal(t, "choose one of: ship, stop", usage.Hint)
	assert.ErrorIs(t, h.o.Decide("after-check-1", "ship", ""), engine.ErrRefused)

	require.NoError(t, h.o.Decide("after-check-2", "ship", "the remaining problem is cosmetic"))
	assert.Empty(t, h.state().Questions)
	assert.Equal(t, "ship", h.state().Decisions["after-check-2"].Choice)
	events, err := h.o.Log()
	require.NoError(t, err)
	last := events[len(events)-1]
	assert.Equal(t, engine.EventDecide, last.Type)
	assert.Equal(t, "decision after-check-2", last.Subject)
	assert.Equal(t, "ship: the remaining problem is cosmetic", last.Text)
	s, err = h.o.Status()
	require.NoError(t, err)
	assert.Contains(t, s.Settled, engine.DecisionSubject("after-check-2"))
	assert.NotContains(t, s.Operator, "custodian decide")
	assert.ErrorIs(t, h.o.Decide("after-check-2", "stop", ""), engine.ErrRefused, "a question decided is not decided again")

	c, err = h.o.Check()
	require.NoError(t, err)
	assert.Contains(t, c.Items, engine.CheckItem{Subject: engine.DecisionSubject("after-check-2"), Details: []string{},
		Reason: "the operator chose ship; the path that asked goes on"})

	// The replay returns the choice, at every step from now on.
	h.work(h.launch("publish-notes"), nil)
	h.done()
	h.reopen()
	h.done()
}

func TestAChoiceCanStopTheRun(t *testing.T) {
	h := reviewAtQuestion(t)
	h.blocked()
	require.NoError(t, h.o.Decide("after-check-2", "stop", ""))
	b := h.blocked()["workflow"]
	assert.Equal(t, engine.BlockWorkflowStop, b.Kind)
	assert.Equal(t, "the operator chose not to ship the draft", b.Reason)
}

func TestAQuestionHoldsEveryHandout(t *testing.T) {
	def := &workflow.Definition{Name: "gate", Run: func(ctx *workflow.Context) error {
		ctx.Parallel(
			func() {
				if ctx.Decide("go-ahead", "Spend money on the audit?", "yes", "no") == "yes" {
					ctx.Agent(job("audit")).Wait()
				}
			},
			func() { ctx.Agent(job("notes")).Wait() },
		)
		return nil
	}}
	h := startRun(t, def, source)
	blocks := h.blocked()
	assert.Equal(t, []string{"decision go-ahead"}, subjects(blocks), "nothing is handed out while a question is open")
	require.NoError(t, h.o.Decide("go-ahead", "yes", ""))
	h.work(h.launch("audit", "notes"), nil)
	h.done()
}

func TestAChoiceTheDefinitionNoLongerOffersIsAskedAgain(t *testing.T) {
	choices := []string{"ship", "stop"}
	def := &workflow.Definition{Name: "asks", Run: func(ctx *workflow.Context) error {
		ctx.Decide("ship-it", "Ship it?", choices...)
		return nil
	}}
	h := startRun(t, def, nil)
	h.blocked()
	require.NoError(t, h.o.Decide("ship-it", "stop", ""))
	h.done()

	choices = []string{"ship", "hold"}
	b := h.blocked()["decision ship-it"]
	assert.Contains(t, recordText(t, b.Record), "The operator chose `stop` at ")
	assert.Contains(t, recordText(t, b.Record), "which the definition no longer offers: it asks again.")
}

func TestAQuestionMustBeOneAPersonCanAnswer(t *testing.T) {
	tests := []struct {
		name     string
		ask      func(ctx *workflow.Context)
		contains string
	}{
		{"a bad name", func(ctx *workflow.Context) { ctx.Decide("Ship It", "Ship it?", "yes") }, `decision name "Ship It" is not a plain lower-case identifier`},
		{"no question", func(ctx *workflow.Context) { ctx.Decide("ship-it", " ", "yes") }, "decision ship-it: the question is empty"},
		{"control characters", func(ctx *workflow.Context) { ctx.Decide("ship-it", "Ship\x1b[2Jit?", "yes") }, "holds control characters"},
		{"no choices", func(ctx *workflow.Context) { ctx.Decide("ship-it", "Ship it?") }, "give the choices the operator picks from"},
		{"a choice that is not a name", func(ctx *workflow.Context) { ctx.Decide("ship-it", "Ship it?", "Yes please") }, `choice name "Yes please"`},
		{"a choice twice", func(ctx *workflow.Context) { ctx.Decide("ship-it", "Ship it?", "yes", "yes") }, "choice yes is given twice"},
		{"one name, two questions", func(ctx *workflow.Context) {
			ctx.Parallel(func() { ctx.Decide("ship-it", "Ship it?", "yes") }, func() { ctx.Decide("ship-it", "Ship it now?", "yes") })
		}, "decision ship-it is asked twice in one step, with different questions or choices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRun(t, &workflow.Definition{Name: "asks", Run: func(ctx *workflow.Context) error { tt.ask(ctx); return nil }}, nil)
			before := h.stateBytes()
			_, err := h.o.Step()
			var de *workflow.DefinitionError
			require.True(t, errors.As(err, &de), "%v", err)
			assert.Contains(t, de.Rule, tt.contains)
			assert.Equal(t, before, h.stateBytes(), "a definition error changes nothing")
		})
	}
}
