// Package fanout is the workflow custodian's benchmarks measure: N jobs,
// each reading its own input and writing its own output, which a validator
// judges, and then one join job that reads all N outputs. It is not in the
// built-in registry a user sees: the Go benchmarks (workflow/bench_test.go)
// and the benchmark binary (testdata/bench/custodian-bench) register it
// themselves.
//
// The files lie at fixed places in the run directory, so that the floor
// program (testdata/bench/floor) reads exactly the files a step reads:
//
//	in/<i>.md    the input of job part-<i>, written by Setup
//	out/<i>.md   the output of job part-<i>, written by WriteOutputs
//	join.md      the output of job join, written by WriteJoin
//
// where <i> is the job's number in five digits.
package fanout

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/custodian-run/custodian/workflow"
)

// Name is the definition's name.
const Name = "fanout"

// MaxJobs bounds the parameter jobs.
const MaxJobs = 100000

// Definition is the fan-out. Parameter jobs (default 10) says how many jobs
// fan out; parameter validator (default readfile) how each output is
// judged.
var Definition = &workflow.Definition{
	Name: Name,
	Doc:  "benchmark: N jobs with their own input, each output validated, then a join of all N outputs",
	Params: []workflow.Param{{
		Name:    "jobs",
		Doc:     "how many jobs fan out",
		Default: "10",
		Validate: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxJobs {
				return fmt.Errorf("a whole number from 1 to %d", MaxJobs)
			}
			return nil
		},
	}, {
		Name:    "validator",
		Doc:     "how each output is judged: readfile (os.ReadFile, as most validators read), head (its first bytes, three system calls) or none",
		Default: "readfile",
		Validate: func(v string) error {
			if _, ok := validators[v]; !ok {
				return fmt.Errorf("readfile, head or none")
			}
			return nil
		},
	}},
	Run: run,
}

// validators are what the parameter validator names.
var validators = map[string]workflow.Validator{
	"readfile": HasHeading,
	"head":     HeadHasHeading,
	"none":     nil,
}

// Registry returns a registry that holds only the fan-out.
func Registry() *workflow.Registry {
	reg, err := workflow.NewRegistry(Definition)
	if err != nil {
		panic(err)
	}
	return reg
}

func run(ctx *workflow.Context) error {
	n, err := strconv.Atoi(ctx.Param("jobs"))
	if err != nil {
		return err
	}
	validate := validators[ctx.Param("validator")]
	handles := make([]*workflow.Handle, n)
	outputs := make([]string, n)
	for i := range n {
		outputs[i] = Output(i)
		handles[i] = ctx.Agent(workflow.Job{
			Name:     JobName(i),
			Prompt:   "Summarize the input in a few lines, under a level-one heading.",
			Output:   outputs[i],
			Inputs:   []string{Input(i)},
			Validate: validate,
		})
	}
	ctx.Wait(handles...)
	ctx.Agent(workflow.Job{
		Name:     "join",
		Prompt:   "Join the summaries into one document, under a level-one heading.",
		Output:   JoinOutput,
		Inputs:   outputs,
		Validate: validate,
	}).Wait()
	return nil
}

// JobName is the name of the i-th job.
func JobName(i int) string { return fmt.Sprintf("part-%05d", i) }

// Input is the run-relative path of the i-th job's input.
func Input(i int) string { return fmt.Sprintf("in/%05d.md", i) }

// Output is the run-relative path of the i-th job's output.
func Output(i int) string { return fmt.Sprintf("out/%05d.md", i) }

// JoinOutput is the run-relative path of the join's output.
const JoinOutput = "join.md"

// heading is what every output must start with.
var heading = []byte("# ")

// HasHeading is the default validator: it reads the output whole, with
// os.ReadFile, as most validators do, and refuses one whose first line is
// not a level-one heading.
func HasHeading(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(b, heading) {
		return workflow.Refuse("start with a level-one heading")
	}
	return nil
}

// HeadHasHeading judges as HasHeading does from the output's first bytes,
// read with three system calls: os.ReadFile makes ten on Linux, most of
// them to register the file with the runtime's poller and back.
func HeadHasHeading(path string) error {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var head [len("# ")]byte
	n, err := syscall.Read(fd, head[:])
	if err != nil {
		return &os.PathError{Op: "read", Path: path, Err: err}
	}
	if !bytes.HasPrefix(head[:n], heading) {
		return workflow.Refuse("start with a level-one heading")
	}
	return nil
}

// Setup writes the n inputs of a run in dir, size bytes each, every one
// different, so that no hash can be shared between jobs.
func Setup(dir string, n, size int) error {
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		return err
	}
	input := bytes.Repeat([]byte("x"), size)
	for i := range n {
		copy(input, fmt.Sprintf("input %d\n", i))
		if err := os.WriteFile(filepath.Join(dir, Input(i)), input, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// OutputText is what WriteOutputs writes: it passes HasHeading.
const OutputText = "# Summary\n\nThe input, in a few lines.\n"

// WriteOutputs writes the n outputs of a run in dir, as its workers would.
func WriteOutputs(dir string, n int) error {
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		return err
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, Output(i)), []byte(OutputText), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteJoin writes the join's output of a run in dir.
func WriteJoin(dir string) error {
	return os.WriteFile(filepath.Join(dir, JoinOutput), []byte("# Joined\n\nEvery summary.\n"), 0o644)
}
