package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"

	"github.com/custodian-run/custodian/workflow"
)

// failure is a failure of the definition's own code in one step.
type failure struct {
	kind     BlockKind // empty for an error or a panic
	stop     bool
	returned bool   // an error Run returned, counted by its message
	message  string // one line
	place    string // where it is counted
	detail   string // the stack or the error's text, for the block record
}

func (r *replay) fail(f failure) { r.failures = append(r.failures, f) }

func (r *replay) failed() bool { return len(r.failures) > 0 }

// errorFailure is a failure for an error counted at place. An error that
// Run returns carries no stack, so it is counted by its message.
func (r *replay) errorFailure(err error, place string) failure {
	if stop, ok := asStop(err); ok {
		return failure{stop: true, message: stop, place: "stop"}
	}
	msg := firstLine("error: " + err.Error())
	f := failure{message: msg, place: place, detail: err.Error()}
	if place == "" {
		f.place, f.returned = "returned "+msg, true
	}
	return f
}

// asStop says whether err stops the run (workflow.ErrStop), and why: the
// reason Stopf gave, without what wraps it.
func asStop(err error) (string, bool) {
	var s interface{ StopReason() string }
	if errors.As(err, &s) {
		return s.StopReason(), true
	}
	if errors.Is(err, workflow.ErrStop) {
		return err.Error(), true
	}
	return "", false
}

func (r *replay) panicFailure(v any, pcs []uintptr, stack []byte) failure {
	if err, ok := v.(error); ok {
		if stop, ok := asStop(err); ok {
			return failure{stop: true, message: stop, place: "stop"}
		}
	}
	return failure{message: firstLine(fmt.Sprintf("panic: %v", v)), place: r.place(pcs), detail: string(stack)}
}

// place is where a failure is counted: the innermost frame in the
// definition's own package, so that a failure inside a shared helper or the
// standard library counts at the definition's line that called it.
func (r *replay) place(pcs []uintptr) string {
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, r.defPkg+".") {
			return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return "outside the definition's code"
		}
	}
}

func callers(skip int) []uintptr {
	pcs := make([]uintptr, 64)
	return pcs[:runtime.Callers(skip+1, pcs)]
}

// funcPackage returns the import path of the package that declares fn.
func funcPackage(fn any) string {
	name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	slash := strings.LastIndex(name, "/")
	if dot := strings.Index(name[slash+1:], "."); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
