package workflow

import "fmt"

// Recognition is what a recognizer establishes about an effect whose start
// was journaled and whose completion was not.
type Recognition int

// What a recognizer can establish.
const (
	// Unknown: neither can be established, e.g. a publish that went part way.
	Unknown Recognition = iota
	// Completed: the effect took place in full.
	Completed
	// Absent: nothing took place, so running it is safe.
	Absent
)

func (r Recognition) String() string {
	switch r {
	case Completed:
		return "completed"
	case Absent:
		return "absent"
	default:
		return "unknown"
	}
}

// Recognizer looks at the world after a process ended inside an effect and
// says what took place. An error means it could not tell.
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
	case got == Completed || got == Absent:
		return got, ""
	default:
		return Unknown, "the recognizer could not establish whether it took place"
	}
}
