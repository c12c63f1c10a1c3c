package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
)

// maxRecord bounds how much of a record is read. A record of a run of a
// hundred thousand jobs is tens of megabytes; one that a worker replaced
// with a link to /dev/zero, or with a huge file, is refused rather than
// read without end.
const maxRecord = 256 << 20

// readRecord reads the record at rel, a path in the state directory
// relative to the run, strictly, and checks its format. found is false
// when there is no file at rel. Anything else that is not a whole regular
// file of the right format is untrusted.
func (r *Run) readRecord(rel string, v any, want int, format func() int) (found bool, err error) {
	return r.readRecordOf(rel, v, want, format, nil)
}

// older are the formats of a record that a reader reads besides its own,
// with the fields, by struct type, that each lacks (decodeOlder).
type older map[int]map[reflect.Type][]string

// readRecordOf is readRecord for a record that is read in the older formats
// old too, as what the custodian that wrote it knew; the caller then holds
// it as its own format.
func (r *Run) readRecordOf(rel string, v any, want int, format func() int, old older) (found bool, err error) {
	data, info, cut, err := r.tree.readFile(rel, maxRecord)
	switch {
	case err != nil:
		return false, &RecordError{Path: r.abs(rel), Err: err}
	case info.Kind == Missing:
		return false, nil
	case info.Kind != Regular:
		return false, untrusted(r.abs(rel), "it is %s, not a regular file", info.Kind)
	case cut:
		return false, untrusted(r.abs(rel), "it is larger than %d bytes", maxRecord)
	}
	err = decodeRecord(r.abs(rel), data, v, want, format)
	var f *FormatError
	if errors.As(err, &f) && old[f.Got] != nil {
		reflect.ValueOf(v).Elem().SetZero() // what the first reading left
		if err := decodeOlder(data, v, old[f.Got]); err != nil {
			return true, &RecordError{Path: r.abs(rel), Err: err}
		}
		if got := format(); got != f.Got {
			return true, &RecordError{Path: r.abs(rel), Err: &FormatError{Got: got, Want: want}}
		}
		return true, nil
	}
	return true, err
}

// decodeRecord decodes a record strictly, in one pass, and checks its
// format version. Only when that fails is the format looked for on its
// own, so that a record of another format says so rather than name the
// first field that format does not share.
func decodeRecord(abs string, data []byte, v any, want int, format func() int) error {
	if err := decodeStrict(data, v); err != nil {
		var head struct {
			Format *int `json:"format"`
		}
		if json.Unmarshal(data, &head) == nil && head.Format != nil && *head.Format != want {
			return &RecordError{Path: abs, Err: &FormatError{Got: *head.Format, Want: want}}
		}
		return &RecordError{Path: abs, Err: err}
	}
	if got := format(); got != want {
		return &RecordError{Path: abs, Err: &FormatError{Got: got, Want: want}}
	}
	return nil
}

// FormatError is a record of another format than this custodian reads.
type FormatError struct {
	Got, Want int
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("it has format %d; this custodian reads format %d", e.Got, e.Want)
}

// writeRecord replaces the record at rel with v.
func (r *Run) writeRecord(label, rel string, v any) error {
	data, err := encode(v)
	if err != nil {
		return fmt.Errorf("write %s: %w", r.abs(rel), err)
	}
	return r.write(label, rel, data)
}

// write replaces the record at rel with data. It is the one place that
// writes a record: the bytes go to a temporary file beside it, which is
// synced and renamed over it, and then the directory is synced, so a record
// is the old one or the new one, even across a power cut. It writes only
// under the lock, to the state directory it locked. label names the write
// point for crash tests.
func (r *Run) write(label, rel string, data []byte) error {
	crashPoint(label)
	if err := r.stillLocked(); err != nil {
		return err
	}
	if err := r.tree.writeAtomic(rel, data); err != nil {
		return r.writeError(rel, err)
	}
	return nil
}

// writeError names a failed write. A link in the state directory is a
// record that cannot be trusted; anything else is an I/O error, which a
// rerun after fixing its cause handles.
func (r *Run) writeError(rel string, err error) error {
	if errors.Is(err, ErrLink) {
		return &RecordError{Path: r.abs(rel), Err: err}
	}
	return &IOError{Op: "write", Path: r.abs(rel), Err: err}
}

// readLines reads a JSON-lines record, one strict record a line, each of
// format want, for what decodeLines makes of them.
func (r *Run) readLines(rel string) (data []byte, found bool, err error) {
	data, info, cut, err := r.tree.readFile(rel, maxRecord)
	switch {
	case err != nil:
		return nil, false, &RecordError{Path: r.abs(rel), Err: err}
	case info.Kind == Missing:
		return nil, false, nil
	case info.Kind != Regular:
		return nil, false, untrusted(r.abs(rel), "it is %s, not a regular file", info.Kind)
	case cut:
		return nil, false, untrusted(r.abs(rel), "it is larger than %d bytes", maxRecord)
	}
	return data, true, nil
}

// decodeLines decodes a JSON-lines record, one strict record a line, each
// of format want. A last line without its newline is incomplete: the
// record was cut short.
func decodeLines[T any](abs string, data []byte, want int, format func(*T) int) ([]T, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if data[len(data)-1] != '\n' {
		return nil, untrusted(abs, "its last line is incomplete")
	}
	var out []T
	start := 0
	for i := 0; start < len(data); i++ {
		end := start
		for data[end] != '\n' {
			end++
		}
		var v T
		if err := decodeRecord(abs, data[start:end], &v, want, func() int { return format(&v) }); err != nil {
			var rerr *RecordError
			if errors.As(err, &rerr) {
				rerr.Err = fmt.Errorf("line %d: %w", i+1, rerr.Err)
			}
			return nil, err
		}
		out = append(out, v)
		start = end + 1
	}
	return out, nil
}

// abs returns the absolute path of rel, a path relative to the run.
func (r *Run) abs(rel string) string { return filepath.Join(r.Dir, filepath.FromSlash(rel)) }

// statePath returns the run-relative path of name in the state directory.
func statePath(name ...string) string {
	return path.Join(append([]string{StateDir}, name...)...)
}
