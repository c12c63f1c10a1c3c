package store

import (
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The verdict cache, .custodian/verdicts, remembers which outputs a
// definition's validators accepted, so that a step over an accepted run
// does not ask every validator again about bytes it has already judged.
// A validator judges a job's output and its declared inputs and nothing
// else, so the same code asked about the same output made from the same
// inputs answers the same. An entry says that the code named in the
// header accepted the job's output under a key, which the caller makes
// from what the verdict depends on (the engine: the SHA-256 of the
// output's path and bytes and of the job's input state). The code is what
// the caller names (the binary's build, the run's definition, parameters
// and patches): a step by other code reads an empty cache, and asks every
// validator again.
//
// Like the hash cache it is derived data: a missing, damaged or foreign
// cache is an empty one, never an error, and costs one validation per
// accepted output.
//
// The file is lines of text, the first a header:
//
//	custodian verdicts 1 <run id> <code>
//	<key> <job>
//
// one line per job, the key of its last accepted output: 64 lower-case
// hexadecimal digits.

const verdictsHeader = "custodian verdicts 1"

// Verdicts is what one command knows of the validators' verdicts.
type Verdicts struct {
	run  *Run
	code string
	// accepted is the key of the output each job's validator last
	// accepted, for this code.
	accepted map[string]string
	dirty    bool
	// loading is closed once another goroutine has read the cache
	// (StepVerdicts); nil once waited for, or when there was nothing to
	// wait for.
	loading chan struct{}
}

// Verdicts reads the verdict cache for code, which names the code that
// judges: an empty code remembers nothing. A missing or damaged cache, or
// one of other code, is an empty one.
func (r *Run) Verdicts(code string) *Verdicts {
	v := &Verdicts{run: r, code: code, accepted: map[string]string{}}
	if !validCode(code) {
		v.code = ""
		return v
	}
	v.load(r.tree.readFile(statePath("verdicts"), maxRecord))
	return v
}

// StepVerdicts is Verdicts for a step: on a machine of more than one core,
// another goroutine reads the cache while the step reads its records, and
// v's first use waits for it.
func (r *Run) StepVerdicts(code string) *Verdicts {
	root := -1
	if validCode(code) && lookers() > 0 {
		root, _ = dupCloseOnExec(r.tree.fd)
	}
	if root < 0 {
		return r.Verdicts(code)
	}
	v := &Verdicts{run: r, code: code, accepted: map[string]string{}, loading: make(chan struct{})}
	go func() {
		defer close(v.loading)
		defer unix.Close(root)
		v.load(readStateFileAt(root, "verdicts"))
	}()
	return v
}

// load takes the verdicts of v's code from the cache's bytes, read up to
// a bound (cut: there were more); anything else is an empty cache.
func (v *Verdicts) load(data []byte, info FileInfo, cut bool, err error) {
	if err != nil || info.Kind != Regular || cut {
		return
	}
	if accepted, ok := readVerdicts(data, v.run.Record.ID, v.code); ok {
		v.accepted = accepted
	}
}

// ready waits for what StepVerdicts began on another goroutine.
func (v *Verdicts) ready() {
	if v.loading != nil {
		<-v.loading
		v.loading = nil
	}
}

// validCode says whether code may name code in the header: one field of
// printable characters.
func validCode(code string) bool {
	return code != "" && len(code) <= 256 && !strings.ContainsFunc(code, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

// readVerdicts reads a cache's bytes, or says they are not a cache of run
// and code. Sums and names are parts of data.
func readVerdicts(data []byte, run, code string) (map[string]string, bool) {
	text := unsafe.String(unsafe.SliceData(data), len(data))
	line, rest, found := strings.Cut(text, "\n")
	if !found || line != verdictsHeader+" "+run+" "+code {
		return nil, false
	}
	accepted := make(map[string]string, strings.Count(rest, "\n"))
	for len(rest) > 0 {
		line, rest, found = strings.Cut(rest, "\n")
		if !found || len(line) < 66 || line[64] != ' ' || !isHex(line[:64], 64) {
			return nil, false
		}
		job := line[65:]
		if !ValidName(job) {
			return nil, false
		}
		if _, dup := accepted[job]; dup {
			return nil, false
		}
		accepted[job] = line[:64]
	}
	return accepted, true
}

// Accepted says whether this code's validator of job accepted the output
// whose key, 64 hexadecimal digits, is key.
func (v *Verdicts) Accepted(job, key string) bool {
	v.ready()
	return v.code != "" && key != "" && v.accepted[job] == key
}

// Accept notes that the validator of job accepted the output whose key is
// key. A key that is not 64 lower-case hexadecimal digits is not kept.
func (v *Verdicts) Accept(job, key string) {
	v.ready()
	if v.code == "" || !isHex(key, 64) || !ValidName(job) || v.accepted[job] == key {
		return
	}
	v.accepted[job] = key
	v.dirty = true
}

// Save writes the verdict cache when this command learned a verdict it did
// not hold. A command that ends before it leaves the old cache, whose
// verdicts are as true as they were.
func (v *Verdicts) Save() error {
	v.ready()
	if !v.dirty {
		return nil
	}
	jobs := make([]string, 0, len(v.accepted))
	for job := range v.accepted {
		jobs = append(jobs, job)
	}
	slices.Sort(jobs)
	size := len(verdictsHeader) + len(v.run.Record.ID) + len(v.code) + 3
	for _, job := range jobs {
		size += 66 + len(job)
	}
	b := make([]byte, 0, size)
	b = append(b, verdictsHeader+" "...)
	b = append(b, v.run.Record.ID...)
	b = append(b, ' ')
	b = append(b, v.code...)
	b = append(b, '\n')
	for _, job := range jobs {
		b = append(b, v.accepted[job]...)
		b = append(b, ' ')
		b = append(b, job...)
		b = append(b, '\n')
	}
	if err := v.run.write("verdicts", statePath("verdicts"), b); err != nil {
		return err
	}
	v.dirty = false
	return nil
}
