// Command cli is `make bench-cli`: it builds the benchmark binary
// (testdata/bench/custodian-bench, custodian with the fan-out definition)
// and the floor program (testdata/bench/floor), makes runs of the fan-out
// at each size, times whole processes and prints, in one run, custodian's
// medians beside the floor's, their ratio, the peak memory of custodian's
// processes, the size of state.json, and the log-log slope of each case
// across the sizes.
//
//	go run ./testdata/bench/cli [-reps 5] [-sizes 10,100,1000,10000] [-big 100] [-work DIR]
//
// The cases, for N jobs with 1 KiB inputs and for -big jobs with 1 MiB
// inputs:
//
//   - first: the first step of a fresh run, which hands out N jobs (prompt
//     files written, then made durable before the commit);
//   - finished, cold: a step on a finished run (every job accepted, the
//     join too) without a hash cache, against the floor that reads and
//     hashes the N inputs and N outputs;
//   - finished, warm: the same step with the hash cache warm, against the
//     floor that lstats them.
//
// Every time is the median of -reps processes, page cache warm; the file
// system is synced before each timed process so that no process pays for
// another's writes, and no run is removed before the end.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/custodian-run/custodian/testdata/bench/fanout"
)

var (
	reps  = flag.Int("reps", 5, "processes timed per case; the median is shown")
	sizes = flag.String("sizes", "10,100,1000,10000", "job counts with 1 KiB inputs, comma-separated")
	big   = flag.Int("big", 100, "job count with 1 MiB inputs; 0 for none")
	work  = flag.String("work", "", "where to build and make runs; a new temporary directory when empty, removed at the end")
	bin   = flag.String("bin", "", "a custodian-bench binary to time instead of building one (to time another version)")
	// variants needs a binary whose fan-out takes the parameter validator.
	variants = flag.Bool("variants", true, "also time the largest size with the validators head and none")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-cli:", err)
		os.Exit(1)
	}
}

// sample is one timed process.
type sample struct {
	d   time.Duration
	rss int64 // peak resident set, bytes
}

// result is one case at one size.
type result struct {
	name      string
	n         int
	size      int
	custodian []sample
	floor     []sample
	floorName string
	state     int64 // state.json's size after the case, bytes
}

func run() error {
	ns, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	dir := *work
	if dir == "" {
		if dir, err = os.MkdirTemp("", "custodian-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	custodian, floor := filepath.Join(dir, "bin", "custodian-bench"), filepath.Join(dir, "bin", "floor")
	if *bin != "" {
		custodian = *bin
	} else if err := build(custodian, "./testdata/bench/custodian-bench"); err != nil {
		return err
	}
	if err := build(floor, "./testdata/bench/floor"); err != nil {
		return err
	}
	b := &bench{custodian: custodian, floor: floor, dir: dir}
	var all []*result
	for _, n := range ns {
		rs, err := b.size(n, 1<<10, "readfile")
		if err != nil {
			return fmt.Errorf("%d jobs: %w", n, err)
		}
		all = append(all, rs...)
	}
	if *big > 0 {
		rs, err := b.size(*big, 1<<20, "readfile")
		if err != nil {
			return fmt.Errorf("%d jobs of 1 MiB: %w", *big, err)
		}
		all = append(all, rs...)
	}
	// The validator's share, at the largest size: a validator that reads
	// only the head of each output, and none.
	if len(ns) > 0 && *variants {
		n := slices.Max(ns)
		for _, v := range []string{"head", "none"} {
			rs, err := b.size(n, 1<<10, v)
			if err != nil {
				return fmt.Errorf("%d jobs, validator %s: %w", n, v, err)
			}
			all = append(all, rs...)
		}
	}
	report(all, ns)
	budgets(all, ns)
	return nil
}

// A budget is what a user may wait for at 10,000 jobs with 1 KiB inputs
// (docs/performance.md): a bound on a case's median time, its peak memory
// or its state.
type budget struct {
	what  string
	check func(r *result) (measured string, met bool)
	cases []string
}

var budgetList = []budget{
	{"a step on a finished run, warm cache, at most 0.3 s", timeBudget(300 * time.Millisecond), []string{"finished, warm cache"}},
	{"a step on a finished run, cold cache, at most 0.5 s", timeBudget(500 * time.Millisecond), []string{"finished, cold cache"}},
	{"the first step, 10,000 hand-outs, under 1.5 s", timeBudget(1500 * time.Millisecond), []string{"first step"}},
	{"peak memory under 64 MiB", func(r *result) (string, bool) {
		p := peak(r.custodian)
		return fmt.Sprintf("%.1f MiB (%s)", float64(p)/(1<<20), r.name), p < 64<<20
	}, []string{"first step", "finished, cold cache", "finished, warm cache"}},
	{"state.json under 6 MB", func(r *result) (string, bool) {
		return bytesText(r.state), r.state < 6_000_000
	}, []string{"finished, warm cache"}},
}

func timeBudget(limit time.Duration) func(r *result) (string, bool) {
	return func(r *result) (string, bool) {
		m := median(r.custodian)
		return fmt.Sprintf("%s (floor %s, %s)", ms(m), ms(median(r.floor)), r.floorName), m <= limit
	}
}

// budgets holds the cases of 10,000 jobs with 1 KiB inputs and the default
// validator to the budgets, and says which are met; the floor of the same
// run says what the machine itself costs.
func budgets(all []*result, ns []int) {
	if !slices.Contains(ns, 10000) {
		return
	}
	fmt.Println()
	fmt.Println("budgets at 10,000 jobs, 1 KiB inputs (docs/performance.md)")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	for _, b := range budgetList {
		for _, r := range all {
			if r.n != 10000 || r.size != 1<<10 || !slices.Contains(b.cases, r.name) {
				continue
			}
			measured, met := b.check(r)
			verdict := "met"
			if !met {
				verdict = "OVER"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", b.what, measured, verdict)
		}
	}
	w.Flush()
}

func parseSizes(s string) ([]int, error) {
	var ns []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > fanout.MaxJobs {
			return nil, fmt.Errorf("-sizes: %q is not a job count", f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// build builds the package pkg of this module into out.
func build(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

type bench struct {
	custodian, floor, dir string
}

// size makes runs of n jobs with inputs of size bytes, whose outputs the
// validator named judges, and times every case. With another validator
// than the default it times only the finished run.
func (b *bench) size(n, size int, validator string) ([]*result, error) {
	fmt.Fprintf(os.Stderr, "bench-cli: %d jobs, %d-byte inputs, validator %s\n", n, size, validator)
	suffix, firsts, params := "", *reps, []string{"--param", "jobs=" + strconv.Itoa(n)}
	if validator != "readfile" {
		suffix, firsts = ", validator "+validator, 1
		params = append(params, "--param", "validator="+validator)
	}
	first := &result{name: "first step" + suffix, n: n, size: size, floorName: "write"}
	var runs []string
	for i := range firsts {
		run := filepath.Join(b.dir, fmt.Sprintf("run-%d-%d-%s-%d", n, size, validator, i))
		if err := fanout.Setup(run, n, size); err != nil {
			return nil, err
		}
		if _, _, err := b.custodianRun(append([]string{"start", fanout.Name, "--run", run}, params...)...); err != nil {
			return nil, err
		}
		s, out, err := b.custodianRun("step", run)
		if err != nil {
			return nil, err
		}
		if lines := bytes.Count(out, []byte("\n- ")); !bytes.HasPrefix(out, []byte("launch\n")) || lines != n {
			return nil, fmt.Errorf("the first step did not hand out %d jobs:\n%.500s", n, out)
		}
		first.custodian = append(first.custodian, s)
		runs = append(runs, run)
		if s, err = b.timed(b.floor, "-jobs="+strconv.Itoa(n), "-mode=write", run); err != nil {
			return nil, err
		}
		first.floor = append(first.floor, s)
	}
	// No run is removed before the end: a file system that just freed
	// many inodes makes the next ones it hands out slow (ext4 skips inodes
	// deleted in the last minutes), which would be charged to the next
	// case.
	run := runs[0]
	first.state = fileSize(filepath.Join(run, ".custodian", "state.json"))

	// Take the run to its end: every part accepted, then the join.
	if err := fanout.WriteOutputs(run, n); err != nil {
		return nil, err
	}
	if _, out, err := b.custodianRun("step", run); err != nil {
		return nil, err
	} else if !bytes.HasPrefix(out, []byte("launch\n- join:")) {
		return nil, fmt.Errorf("the second step did not hand out the join:\n%.500s", out)
	}
	if err := fanout.WriteJoin(run); err != nil {
		return nil, err
	}
	if _, out, err := b.custodianRun("step", run); err != nil {
		return nil, err
	} else if string(out) != "done\n" {
		return nil, fmt.Errorf("the run is not done:\n%.500s", out)
	}
	// A cache entry is trusted only for a file older, by the racy window,
	// than the step that stored it: let every file age first.
	time.Sleep(2500 * time.Millisecond)

	jobs := "-jobs=" + strconv.Itoa(n)
	cold := &result{name: "finished, cold cache" + suffix, n: n, size: size, floorName: "read+hash"}
	warm := &result{name: "finished, warm cache" + suffix, n: n, size: size, floorName: "stat"}
	cache := filepath.Join(run, ".custodian", "hashes")
	for range *reps {
		if err := os.Remove(cache); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		s, err := b.done(run)
		if err != nil {
			return nil, err
		}
		cold.custodian = append(cold.custodian, s)
		if s, err = b.timed(b.floor, jobs, "-mode=hash", run); err != nil {
			return nil, err
		}
		cold.floor = append(cold.floor, s)
	}
	for range *reps {
		s, err := b.done(run)
		if err != nil {
			return nil, err
		}
		warm.custodian = append(warm.custodian, s)
		if s, err = b.timed(b.floor, jobs, "-mode=stat", run); err != nil {
			return nil, err
		}
		warm.floor = append(warm.floor, s)
	}
	cold.state = fileSize(filepath.Join(run, ".custodian", "state.json"))
	warm.state = cold.state
	if validator != "readfile" {
		return []*result{cold, warm}, nil
	}
	return []*result{first, cold, warm}, nil
}

// done times a step on a finished run, which must say done.
func (b *bench) done(run string) (sample, error) {
	s, out, err := b.custodianRun("step", run)
	if err == nil && string(out) != "done\n" {
		err = fmt.Errorf("a step on the finished run said:\n%.500s", out)
	}
	return s, err
}

func (b *bench) custodianRun(args ...string) (sample, []byte, error) {
	return b.timedOut(b.custodian, args...)
}

func (b *bench) timed(prog string, args ...string) (sample, error) {
	s, _, err := b.timedOut(prog, args...)
	return s, err
}

// timedOut runs prog with args after a sync of the file system, and says
// how long it took, from the start of the process to its end, and its
// peak memory.
func (b *bench) timedOut(prog string, args ...string) (sample, []byte, error) {
	syscall.Sync()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(prog, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return sample{}, nil, fmt.Errorf("%s %s: %w\n%s", filepath.Base(prog), strings.Join(args, " "), err, stderr.Bytes())
	}
	s := sample{d: d}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.rss = ru.Maxrss << 10 // kilobytes on Linux
	}
	return s, stdout.Bytes(), nil
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return info.Size()
}

func median(ss []sample) time.Duration {
	if len(ss) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(ss))
	for i, s := range ss {
		ds[i] = s.d
	}
	slices.Sort(ds)
	if len(ds)%2 == 1 {
		return ds[len(ds)/2]
	}
	return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
}

func peak(ss []sample) int64 {
	var m int64
	for _, s := range ss {
		m = max(m, s.rss)
	}
	return m
}

func report(all []*result, ns []int) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "jobs\tinput\tcase\tcustodian\tfloor\t÷ floor\tpeak RSS\tstate.json\t")
	for _, r := range all {
		floor, ratio := "", ""
		if len(r.floor) > 0 {
			floor = fmt.Sprintf("%s %s", ms(median(r.floor)), r.floorName)
			ratio = fmt.Sprintf("%.2f", float64(median(r.custodian))/float64(median(r.floor)))
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%.1f MiB\t%s\t\n", r.n, bytesText(int64(r.size)), r.name,
			ms(median(r.custodian)), floor, ratio, float64(peak(r.custodian))/(1<<20), bytesText(r.state))
	}
	w.Flush()
	if len(ns) < 2 {
		return
	}
	fmt.Println()
	fmt.Printf("log-log slope of time against jobs, 1 KiB inputs, %d..%d jobs (1 = linear); and from the last two sizes alone\n", ns[0], ns[len(ns)-1])
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	series := func(name string, pick func(*result) []sample) {
		var xs, ys []float64
		for _, r := range all {
			if r.name == name && r.size == 1<<10 && len(pick(r)) > 0 {
				xs = append(xs, math.Log(float64(r.n)))
				ys = append(ys, math.Log(median(pick(r)).Seconds()))
			}
		}
		if len(xs) < 2 {
			return
		}
		k := len(xs) - 1
		last := (ys[k] - ys[k-1]) / (xs[k] - xs[k-1])
		fmt.Fprintf(w, "%s\t%.2f\t%.2f\n", strings.TrimSpace(name), slope(xs, ys), last)
	}
	custodian := func(r *result) []sample { return r.custodian }
	floor := func(r *result) []sample { return r.floor }
	series("first step", custodian)
	series("finished, cold cache", custodian)
	series("finished, warm cache", custodian)
	fmt.Fprintf(w, "floor:\t\t\n")
	series("finished, cold cache", floor)
	series("finished, warm cache", floor)
	w.Flush()
}

// slope is the least-squares slope of ys against xs.
func slope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	return num / den
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func bytesText(n int64) string {
	switch {
	case n < 0:
		return "-"
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
