package trial

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
