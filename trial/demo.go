package trial

import (
	"cmp"
	"fmt"
	"io"

	"github.com/custodian-run/custodian/workflow"
)

// DemoOptions says which run Demo sets up and drives.
type DemoOptions struct {
	// Scenario is the course to show; empty means clean.
	Scenario string
	// Dir is the run directory, new or empty; empty means a fresh one under
	// runs/, as Setup makes it.
	Dir string
}

// demoLaunch is what the parameters scenario's claims job carries in a demo.
var demoLaunch = map[string]string{"model": "small"}

// Demo sets up a trial run for a scenario and drives it with the scripted
// agent through the custodian binary at binary, every command in a process
// of its own, so that nothing but the records carries the run from one step
// to the next. It prints each round to w: the step it runs, what the step
// printed, exactly as an agent orchestrator reads it, and what the agent
// and its workers did; then the final outcome.
//
// The agent reads the text form of step, not --json: a demo shows what the
// binary prints, and an agent that follows the loop with nothing but that
// text shows the text is enough. The shell owns that text; the demo copies
// it and never renders an outcome itself.
//
// A step that fails ends the demo with its error, after the agent has done
// what the loop says for it (busy and uncertain end this way).
func Demo(w io.Writer, reg *workflow.Registry, binary string, opts DemoOptions) error {
	scenario := cmp.Or(opts.Scenario, "clean")
	setup := SetupOptions{Scenario: scenario, Dir: opts.Dir, Binary: binary}
	if scenario == "parameters" {
		setup.Launch = demoLaunch
	}
	dir, err := Setup(reg, setup)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run: %s\nscenario: %s\n", dir, scenario)
	agent := &Agent{
		Runner: BinaryText(binary, dir, w),
		RunDir: dir,
		Script: ScenarioScript(scenario),
		Log:    w,
	}
	tr, err := agent.Drive()
	if err != nil {
		return fmt.Errorf("demo of scenario %s in %s: %w", scenario, dir, err)
	}
	fmt.Fprintf(w, "final: %s\n", finalLine(tr))
	return nil
}

// finalLine says how the drive ended: the last outcome, and the stop the
// agent reported when it stopped.
func finalLine(tr Transcript) string {
	final := string(tr.Final.Kind)
	if n := len(tr.Reports); n > 0 && tr.Reports[n-1].Event == workflow.ReportStop {
		final += "; the agent stopped: " + tr.Reports[n-1].Text
	}
	return final
}

// ScenarioScript returns the harness that takes a scenario of the trial
// definition through its expected course: workers that write valid outputs,
// except that in retry reconcile's first worker misses the demand its
// prompt never made and the second meets it, and in problem the notes
// worker first reports that it cannot read its input, which the repair
// PutNotesInPlace fixes. The stop scenarios need no script: no repair is
// scripted, so the agent stops.
func ScenarioScript(scenario string) Script {
	switch scenario {
	case "retry":
		return Script{Workers: map[string][]Behaviour{
			"reconcile": {Valid, ValidWith("# reconcile\n\n- a point\n- another point\n\nChecked: yes\n")},
		}}
	case "problem":
		return Script{
			Workers: map[string][]Behaviour{
				"notes": {Problem("I cannot read the input file notes.md: it does not exist.\n"), Valid},
			},
			Repairs: map[string]Repair{"notes": PutNotesInPlace},
		}
	default:
		return Script{}
	}
}
