package store

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
)

// ReportFormat is the format of a line of reports.jsonl.
const ReportFormat = 1

// Report is one report of the agent orchestrator, a line of reports.jsonl.
type Report struct {
	Format int    `json:"format"`
	Number int    `json:"number"`
	Event  string `json:"event"`
	Job    string `json:"job"` // empty when the report names no job
	Text   string `json:"text"`
	At     string `json:"at"`
	// Seq is how many commands had committed their history when the report
	// was made: in the run's history it follows history/<Seq>.jsonl.
	Seq int `json:"seq"`
	// Step is how many steps had given an outcome when it was made.
	Step int `json:"step"`
}

// Reports reads every report, oldest first. A line it cannot fully
// understand makes the whole file untrusted.
func (r *Run) Reports() ([]Report, error) {
	reports, _, err := r.readReports()
	return reports, err
}

// readReports reads and checks reports.jsonl, returning its bytes too.
func (r *Run) readReports() ([]Report, []byte, error) {
	path := r.path("reports.jsonl")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, &RecordError{Path: path, Err: err}
	}
	reports, err := decodeLines(path, data, ReportFormat, func(rep *Report) int { return rep.Format })
	if err != nil {
		return nil, nil, err
	}
	for i, rep := range reports {
		if rep.Number != i+1 {
			return nil, nil, untrusted(path, "line %d holds report %d", i+1, rep.Number)
		}
	}
	return reports, data, nil
}

// AppendReport numbers rep after the reports already recorded and appends
// it. The caller holds the lock. The file is replaced whole through the one
// write helper, so a crash leaves either every line or none of the new one;
// reports are few, so rewriting them costs little.
func (r *Run) AppendReport(rep Report) (Report, error) {
	existing, old, err := r.readReports()
	if err != nil {
		return Report{}, err
	}
	rep.Format = ReportFormat
	rep.Number = len(existing) + 1
	line, err := json.Marshal(rep)
	if err != nil {
		return Report{}, err
	}
	data := append(append(old, line...), '\n')
	if err := writeFile("report", r.path("reports.jsonl"), data); err != nil {
		return Report{}, err
	}
	return rep, nil
}
