package engine

// Overview is what a run's page shows, read from one read of the records:
// where the run stands, its graph, and every named job's story.
type Overview struct {
	Status  Status
	Graph   Graph
	Stories []JobStory
}

// Overview reads the run's status, graph and stories at once, so that the
// three agree with one another even while a loop commits. Like Status, it
// takes no lock and writes nothing.
func (run *Run) Overview() (Overview, error) {
	rec, err := run.read()
	if err != nil {
		return Overview{}, err
	}
	s, err := run.status(rec, true)
	if err != nil {
		return Overview{}, err
	}
	history, err := run.records.History(rec.state.Seq)
	if err != nil {
		return Overview{}, err
	}
	stories, err := run.stories(rec, history, rec.state.Named)
	if err != nil {
		return Overview{}, err
	}
	return Overview{Status: s, Graph: graphOf(s, rec.state, rec.effects), Stories: stories}, nil
}
