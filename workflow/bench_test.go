package workflow_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/custodian-run/custodian/workflow"
)

// BenchmarkStepAccepted measures the step every run repeats most: a replay
// in which every job is already accepted, so the step judges each one (hash
// its input, hash its output, run its validator) and finds the run done.
func BenchmarkStepAccepted(b *testing.B) {
	cases := []struct {
		jobs      int
		inputSize int
	}{
		{10, 1 << 10},
		{100, 1 << 10},
		{1000, 1 << 10},
		{10000, 1 << 10},
		{100, 1 << 20},
	}
	for _, bc := range cases {
		b.Run(fmt.Sprintf("N=%d/input=%dKiB", bc.jobs, bc.inputSize>>10), func(b *testing.B) {
			o := acceptedRun(b, bc.jobs, bc.inputSize, false)
			b.ReportAllocs()
			for b.Loop() {
				out, err := o.Step()
				if err != nil {
					b.Fatal(err)
				}
				if out.Kind != workflow.KindDone {
					b.Fatalf("a step on an accepted run gave %s", out.Kind)
				}
			}
		})
	}
}

// BenchmarkStepSharedInput measures a step whose jobs all read one large
// input as well as their own: the shared one must be read once a step, not
// once a job.
func BenchmarkStepSharedInput(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("N=%d/shared=1MiB", n), func(b *testing.B) {
			o := acceptedRun(b, n, 1<<10, true)
			b.ReportAllocs()
			for b.Loop() {
				if out, err := o.Step(); err != nil || out.Kind != workflow.KindDone {
					b.Fatalf("step: %v, %v", out.Kind, err)
				}
			}
		})
	}
}

// acceptedRun starts a run of n jobs, each reading its own input of size
// bytes (and, when shared, one more input of 1 MiB that all of them read)
// and writing its own output, and takes it to done.
func acceptedRun(b *testing.B, n, size int, shared bool) *workflow.Orchestrator {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "run")
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		b.Fatal(err)
	}
	input := bytes.Repeat([]byte("x"), size)
	for i := range n {
		// Distinct bytes per input, so no hash can be shared between jobs.
		copy(input, fmt.Sprintf("input %d\n", i))
		if err := os.WriteFile(filepath.Join(dir, "in", fmt.Sprintf("%05d.md", i)), input, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var common []string
	if shared {
		common = []string{"shared.md"}
		if err := os.WriteFile(filepath.Join(dir, "shared.md"), bytes.Repeat([]byte("s"), 1<<20), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	def := &workflow.Definition{Name: "bench", Run: func(ctx *workflow.Context) error {
		handles := make([]*workflow.Handle, n)
		for i := range n {
			handles[i] = ctx.Agent(workflow.Job{
				Name:     fmt.Sprintf("job-%05d", i),
				Prompt:   "Summarize the input.",
				Output:   fmt.Sprintf("out/%05d.md", i),
				Inputs:   append([]string{fmt.Sprintf("in/%05d.md", i)}, common...),
				Validate: hasHeading,
			})
		}
		ctx.Wait(handles...)
		return nil
	}}
	reg, err := workflow.NewRegistry(def)
	if err != nil {
		b.Fatal(err)
	}
	o, err := workflow.Start(reg, def.Name, dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	out, err := o.Step()
	if err != nil {
		b.Fatal(err)
	}
	if out.Kind != workflow.KindLaunch || len(out.Jobs) != n {
		b.Fatalf("the first step gave %s with %d jobs", out.Kind, len(out.Jobs))
	}
	for _, j := range out.Jobs {
		if err := os.MkdirAll(filepath.Dir(j.Output), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(j.Output, []byte(validText), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if out, err = o.Step(); err != nil {
		b.Fatal(err)
	}
	if out.Kind != workflow.KindDone {
		b.Fatalf("the run is not done after every output was written: %s", out.Kind)
	}
	return o
}
