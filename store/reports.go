package store

import (
	"fmt"
	"unicode/utf8"

	"github.com/custodian-run/custodian/internal/names"
)

// ReportFormat is the format of a line of reports.jsonl.
const ReportFormat = 2

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

// Reports reads the committed reports, oldest first: as many as the state
// counts. A line past them belongs to a report that ended before its
// commit, or, for a reader without the lock, to one that committed since
// the state was read: it must be whole, and is not returned. Fewer lines
// than the state counts, or a line that cannot be fully understood, make
// the file untrusted.
func (r *Run) Reports(committed int) ([]Report, error) {
	reports, _, err := r.readReports(committed)
	return reports, err
}

// readReports reads the committed reports, and their bytes.
func (r *Run) readReports(committed int) ([]Report, []byte, error) {
	rel := statePath("reports.jsonl")
	data, found, err := r.readLines(rel)
	if err != nil {
		return nil, nil, err
	}
	if !found && committed > 0 {
		return nil, nil, untrusted(r.abs(rel), "it is missing; the state counts %d reports", committed)
	}
	reports, err := decodeLines(r.abs(rel), data, ReportFormat, func(rep *Report) int { return rep.Format })
	if err != nil {
		return nil, nil, err
	}
	if len(reports) < committed {
		return nil, nil, untrusted(r.abs(rel), "it holds %d reports; the state counts %d", len(reports), committed)
	}
	for i, rep := range reports {
		switch {
		case rep.Number != i+1:
			return nil, nil, untrusted(r.abs(rel), "line %d holds report %d", i+1, rep.Number)
		case rep.Job != "" && !names.Valid(rep.Job):
			return nil, nil, untrusted(r.abs(rel), "line %d names job %q, which is not a name", i+1, rep.Job)
		}
	}
	end := 0
	for range committed {
		end += indexByte(data[end:], '\n') + 1
	}
	return reports[:committed], data[:end], nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// WriteReport numbers rep after the committed reports and writes
// reports.jsonl with it appended. The caller holds the lock and commits the
// report by saving a state that counts it. The file is replaced whole
// through the one write helper, which also drops a line a report that
// ended before its commit left.
func (r *Run) WriteReport(committed int, rep Report) (Report, error) {
	_, old, err := r.readReports(committed)
	if err != nil {
		return Report{}, err
	}
	if !utf8.ValidString(rep.Text) {
		return Report{}, fmt.Errorf("report: its text is not UTF-8")
	}
	rep.Format = ReportFormat
	rep.Number = committed + 1
	line, err := encode(rep)
	if err != nil {
		return Report{}, err
	}
	data := append(append([]byte{}, old...), line...)
	if err := r.write("report", statePath("reports.jsonl"), data); err != nil {
		return Report{}, err
	}
	return rep, nil
}
