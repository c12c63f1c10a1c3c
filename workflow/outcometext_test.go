package workflow_test

import (
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The trial definition cannot end uncertain without effects in the engine,
// so the lines of that outcome are checked on an outcome made here.
func TestOutcome_WriteText(t *testing.T) {
	tests := []struct {
		name string
		out  workflow.Outcome
		want []string
	}{
		{
			name: "uncertain with a carried block",
			out: workflow.Outcome{
				Kind:    workflow.KindUncertain,
				Effects: []workflow.EffectState{{Name: "publish", Detail: "the journal says started; the recognizer found one of two files"}},
				Blocks: []workflow.Block{{
					Subject: "claims", Kind: workflow.BlockNoOutput, Reason: "no output, attempt 2 of 2",
					Record: "/abs/run/.custodian/jobs/claims/block-1.md", Permitted: workflow.PermitRepair, Scope: "anything",
				}},
			},
			want: []string{
				"uncertain",
				"- effect publish: the journal says started; the recognizer found one of two files",
				"  permitted: stop and report to the operator; the operator establishes what took place",
				"- also claims: no output, attempt 2 of 2",
				"  record: /abs/run/.custodian/jobs/claims/block-1.md",
			},
		},
		{
			name: "blocked on an effect and on workflow",
			out: workflow.Outcome{
				Kind: workflow.KindBlocked,
				Blocks: []workflow.Block{
					{Subject: "effect publish", Kind: workflow.BlockEffectInputsChanged, Reason: "the effect is completed and its inputs have changed since",
						Record: "/abs/run/.custodian/effect-blocks/publish.md", Permitted: workflow.PermitStop, Scope: "anything"},
					{Subject: "workflow", Kind: workflow.BlockWorkflowError, Reason: "panic: boom",
						Record: "/abs/run/.custodian/workflow/block-1.md", Permitted: workflow.PermitRepair, Scope: "fix the environment"},
				},
			},
			want: []string{
				"blocked",
				"- effect publish: the effect is completed and its inputs have changed since",
				"  record: /abs/run/.custodian/effect-blocks/publish.md",
				"  permitted: stop and report to the operator",
				"- workflow: panic: boom",
				"  record: /abs/run/.custodian/workflow/block-1.md",
				"  permitted: repair within this scope: fix the environment",
			},
		},
		{
			name: "launch parameters given as an empty object",
			out: workflow.Outcome{Kind: workflow.KindLaunch, Jobs: []workflow.Handout{
				{Name: "a", Prompt: "/abs/run/.custodian/jobs/a/prompt-1.md", Launch: []byte("{}")},
				{Name: "b", Prompt: "/abs/run/.custodian/jobs/b/prompt-3.md", Launch: []byte(`{"model":"small","n":2}`)},
			}},
			want: []string{
				"launch",
				"- a: `/abs/run/.custodian/jobs/a/prompt-1.md`",
				"- b: `/abs/run/.custodian/jobs/b/prompt-3.md` launch={\"model\":\"small\",\"n\":2}",
			},
		},
		{
			name: "done",
			out:  workflow.Outcome{Kind: workflow.KindDone},
			want: []string{"done"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, tt.out.WriteText(&b))
			assert.Equal(t, strings.Join(tt.want, "\n")+"\n", b.String())
		})
	}
}

func TestOutcome_WriteTextRefusesAnUnknownKind(t *testing.T) {
	var b strings.Builder
	require.Error(t, workflow.Outcome{Kind: "maybe"}.WriteText(&b))
	assert.Empty(t, b.String(), "half an outcome was printed")
}
