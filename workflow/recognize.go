package workflow

import "fmt"

// Recognition is what a recognizer establishes about an effect whose start
// was journaled and whose completion was not: Completed, Absent, or
// Unknown, which may say what the recognizer did establish (Unknownf).
type Recognition struct {
	fate   fate
	reason string // for an unknown fate: what is known
}

type fate int

const (
	fateUnknown fate = iota
	fateCompleted
	fateAbsent
)

// What a recognizer can establish.
var (
	// Unknown: neither can be established, e.g. a publish that went part way.
	Unknown = Recognition{}
	// Completed: the effect took place in full.
	Completed = Recognition{fate: fateCompleted}
	// Absent: nothing took place, so running it is safe.
	Absent = Recognition{fate: fateAbsent}
)

// Unknownf returns Unknown with what the recognizer did establish, which
// the operator is shown: "only the copy was published, not the index".
func Unknownf(format string, args ...any) Recognition {
	return Recognition{reason: fmt.Sprintf(format, args...)}
}

// String says what was established: completed, absent or unknown.
func (r Recognition) String() string {
	switch r.fate {
	case fateCompleted:
		return "completed"
	case fateAbsent:
		return "absent"
	default:
		return "unknown"
	}
}

// Reason returns what an unknown recognition says is known, or "".
func (r Recognition) Reason() string { return r.reason }

// Recognizer looks at the world after a process ended inside an effect and
// says what took place. An error means it could not look; a recognizer that
// looked and cannot tell returns Unknown, or Unknownf with what it found.
type Recognizer func() (Recognition, error)

// recognize asks a recognizer, turning its absence, its failure or a panic
// into Unknown with the reason.
func recognize(rec Recognizer) (result Recognition, why string) {
	if rec == nil {
		return Unknown, "the definition gives no recognizer"
	}
	defer func() {
		if v := recover(); v != nil {
			result, why = Unknown, fmt.Sprintf("the recognizer failed: %v", v)
		}
	}()
	got, err := rec()
	switch {
	case err != nil:
		return Unknown, "the recognizer failed: " + err.Error()
	case got.fate != fateUnknown:
		return got, ""
	case got.reason != "":
		return Unknown, "the recognizer established: " + got.reason
	default:
		return Unknown, "the recognizer could not establish whether it took place"
	}
}
