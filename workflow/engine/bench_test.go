package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/custodian-run/custodian/testdata/bench/fanout"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// The benchmarks run the fan-out of testdata/bench/fanout: N jobs, each
// with its own input, each output judged by a validator that reads it, and
// a join job that reads all N outputs. `make bench` runs them; `make
// bench-cli` times the same cases as whole processes against the floor.
// docs/performance.md gives the method and the numbers.

// benchSizes are the job counts with 1 KiB inputs, and one case of 100
// jobs with 1 MiB inputs.
var benchSizes = []struct{ jobs, input int }{
	{10, 1 << 10},
	{100, 1 << 10},
	{1000, 1 << 10},
	{10000, 1 << 10},
	{100, 1 << 20},
}

func benchName(jobs, input int) string {
	return fmt.Sprintf("N=%d/input=%dKiB", jobs, input>>10)
}

// BenchmarkStepFirst measures the first step of a run, which hands out
// every job: N prompt files written and made durable, then the commit.
//
// It runs first, and removes its runs only at its end: a file system that
// has just freed many inodes hands out new ones slowly (ext4 passes over
// inodes deleted in the last minutes), which a step that makes twenty
// thousand would pay for.
func BenchmarkStepFirst(b *testing.B) {
	base := b.TempDir()
	for _, bc := range benchSizes {
		b.Run(benchName(bc.jobs, bc.input), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				b.StopTimer()
				o := startFanout(b, filepath.Join(base, fmt.Sprintf("%d-%d-%d", bc.jobs, bc.input, i)), bc.jobs, bc.input)
				i++
				// The step's one sync of the file system pays for no one
				// else's writes.
				syscall.Sync()
				b.StartTimer()
				out, err := o.Step()
				if err != nil {
					b.Fatal(err)
				}
				if out.Kind != engine.KindLaunch || len(out.Jobs) != bc.jobs {
					b.Fatalf("the first step gave %s with %d jobs", out.Kind, len(out.Jobs))
				}
				b.StopTimer()
				o.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkStepFinished measures the step every run repeats most: a replay
// of a finished run, in which every job is accepted, so the step judges
// each one (hash its input and its output, run its validator), hashes the
// join's N inputs, and finds the run done. Cold: no hash cache, so every
// file is read; warm: the cache knows every file, so each costs an lstat.
func BenchmarkStepFinished(b *testing.B) {
	for _, bc := range benchSizes {
		b.Run(benchName(bc.jobs, bc.input)+"/cache=cold", func(b *testing.B) {
			o, dir := finishedRun(b, bc.jobs, bc.input)
			cache := filepath.Join(dir, ".custodian", "hashes")
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if err := os.Remove(cache); err != nil && !errors.Is(err, os.ErrNotExist) {
					b.Fatal(err)
				}
				b.StartTimer()
				stepDone(b, o)
			}
		})
		b.Run(benchName(bc.jobs, bc.input)+"/cache=warm", func(b *testing.B) {
			o, _ := finishedRun(b, bc.jobs, bc.input)
			// A cache entry is trusted only for a file older, by the racy
			// window, than the step that stored it.
			time.Sleep(2100 * time.Millisecond)
			stepDone(b, o)
			b.ReportAllocs()
			for b.Loop() {
				stepDone(b, o)
			}
		})
	}
}

// startFanout makes a run of the fan-out in dir, with its inputs in place.
func startFanout(b *testing.B, dir string, jobs, input int) *engine.Run {
	b.Helper()
	if err := fanout.Setup(dir, jobs, input); err != nil {
		b.Fatal(err)
	}
	o, err := engine.Start(fanout.Registry(), fanout.Name, dir, workflow.Params{"jobs": strconv.Itoa(jobs)})
	if err != nil {
		b.Fatal(err)
	}
	return o
}

// finishedRun takes a run of the fan-out to its end: every part accepted,
// then the join.
func finishedRun(b *testing.B, jobs, input int) (*engine.Run, string) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "run")
	o := startFanout(b, dir, jobs, input)
	b.Cleanup(o.Close)
	if out, err := o.Step(); err != nil || out.Kind != engine.KindLaunch || len(out.Jobs) != jobs {
		b.Fatalf("the first step: %v, %v", out.Kind, err)
	}
	if err := fanout.WriteOutputs(dir, jobs); err != nil {
		b.Fatal(err)
	}
	if out, err := o.Step(); err != nil || out.Kind != engine.KindLaunch || len(out.Jobs) != 1 {
		b.Fatalf("the second step: %v, %v", out.Kind, err)
	}
	if err := fanout.WriteJoin(dir); err != nil {
		b.Fatal(err)
	}
	stepDone(b, o)
	return o, dir
}

func stepDone(b *testing.B, o *engine.Run) {
	out, err := o.Step()
	if err != nil {
		b.Fatal(err)
	}
	if out.Kind != engine.KindDone {
		b.Fatalf("a step on a finished run gave %s", out.Kind)
	}
}

// BenchmarkStepSharedInput measures a step whose jobs all read one large
// input as well as their own: the shared one must be read once a step, not
// once a job.
func BenchmarkStepSharedInput(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("N=%d/shared=1MiB", n), func(b *testing.B) {
			o := sharedInputRun(b, n)
			b.ReportAllocs()
			for b.Loop() {
				stepDone(b, o)
			}
		})
	}
}

// sharedInputRun starts a run of n jobs, each reading its own input of 1
// KiB and one more input of 1 MiB that all of them read, and takes it to
// done.
func sharedInputRun(b *testing.B, n int) *engine.Run {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "run")
	if err := fanout.Setup(dir, n, 1<<10); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shared.md"), bytes.Repeat([]byte("s"), 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	def := &workflow.Definition{Name: "bench", Run: func(ctx *workflow.Context) error {
		handles := make([]*workflow.Handle, n)
		for i := range n {
			handles[i] = ctx.Agent(workflow.Job{
				Name:     fanout.JobName(i),
				Prompt:   "Summarize the input.",
				Output:   fanout.Output(i),
				Inputs:   []string{fanout.Input(i), "shared.md"},
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
	o, err := engine.Start(reg, def.Name, dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(o.Close)
	if out, err := o.Step(); err != nil || out.Kind != engine.KindLaunch || len(out.Jobs) != n {
		b.Fatalf("the first step: %v, %v", out.Kind, err)
	}
	if err := fanout.WriteOutputs(dir, n); err != nil {
		b.Fatal(err)
	}
	stepDone(b, o)
	return o
}

// TestBenchPrograms builds and vets the benchmark's programs, which
// `go vet ./...` and `go build ./...` skip because they lie under
// testdata/, so that `make bench-cli` cannot rot unseen.
func TestBenchPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on the path")
	}
	cmd := exec.Command(gobin, "vet", "./testdata/bench/...")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet ./testdata/bench/...: %v\n%s", err, out)
	}
}

// TestFanout runs the benchmark's fan-out once at a small size, so that
// the benchmarks' definition and helpers stay correct.
func TestFanout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := fanout.Setup(dir, 3, 1<<10); err != nil {
		t.Fatal(err)
	}
	o, err := engine.Start(fanout.Registry(), fanout.Name, dir, workflow.Params{"jobs": "3"})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	steps := []struct {
		want engine.Kind
		jobs int
		then func(string) error
	}{
		{engine.KindLaunch, 3, func(dir string) error { return fanout.WriteOutputs(dir, 3) }},
		{engine.KindLaunch, 1, fanout.WriteJoin},
		{engine.KindDone, 0, nil},
	}
	for i, s := range steps {
		out, err := o.Step()
		if err != nil {
			t.Fatal(err)
		}
		if out.Kind != s.want || len(out.Jobs) != s.jobs {
			t.Fatalf("step %d gave %s with %d jobs, want %s with %d", i+1, out.Kind, len(out.Jobs), s.want, s.jobs)
		}
		if s.then != nil {
			if err := s.then(dir); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFanoutListed runs a step over more jobs than Files looks at one by
// one in a directory, so that their outputs and problem reports are found
// through the directory's listing: an output that is missing, a named pipe
// or a link is still told apart, and a problem report is still found.
func TestFanoutListed(t *testing.T) {
	const n = 200
	dir := filepath.Join(t.TempDir(), "run")
	if err := fanout.Setup(dir, n, 1<<10); err != nil {
		t.Fatal(err)
	}
	o, err := engine.Start(fanout.Registry(), fanout.Name, dir, workflow.Params{"jobs": strconv.Itoa(n)})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	out, err := o.Step()
	if err != nil || out.Kind != engine.KindLaunch || len(out.Jobs) != n {
		t.Fatalf("the first step: %v, %v", out.Kind, err)
	}
	if err := fanout.WriteOutputs(dir, n); err != nil {
		t.Fatal(err)
	}
	path := func(i int) string { return filepath.Join(dir, fanout.Output(i)) }
	for _, err := range []error{
		os.Remove(path(100)),
		os.Remove(path(150)), syscall.Mkfifo(path(150), 0o644),
		os.Remove(path(199)), os.Symlink(filepath.Join(dir, fanout.Output(0)), path(199)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	out, err = o.Step()
	if err != nil {
		t.Fatal(err)
	}
	var again []string
	for _, j := range out.Jobs {
		again = append(again, fmt.Sprintf("%s attempt %d", j.Name, j.Attempt))
	}
	want := []string{"part-00100 attempt 2", "part-00150 attempt 2", "part-00199 attempt 2"}
	if out.Kind != engine.KindLaunch || !slices.Equal(again, want) {
		t.Fatalf("the second step gave %s with %v, want launch with %v", out.Kind, again, want)
	}

	// The step moved the pipe and the link aside; a problem report now
	// stands beside one output.
	if err := fanout.WriteOutputs(dir, n); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "out", "00150.problem.md"), []byte("I cannot.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = o.Step()
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != engine.KindBlocked || len(out.Blocks) != 1 || out.Blocks[0].Subject != engine.JobSubject("part-00150") ||
		out.Blocks[0].Kind != engine.BlockProblemReport {
		t.Fatalf("the third step gave %s with blocks %+v, want the problem report of part-00150", out.Kind, out.Blocks)
	}
}
