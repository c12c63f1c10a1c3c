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
