// Command profile profiles one case of the benchmark in process: it makes
// a run of the fan-out (testdata/bench/fanout) outside the profile, then
// profiles only the steps of the case asked for.
//
//	go run ./testdata/bench/profile -jobs 10000 -case cold -steps 10 -cpuprofile cpu.out
//	go tool pprof -top -cum cpu.out
//
// Cases: cold (a finished run without a hash cache), warm (a finished run
// with the cache warm), first (the first step of a fresh run; a run is made
// for each step, outside the profile).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/custodian-run/custodian/testdata/bench/fanout"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

var (
	jobs       = flag.Int("jobs", 10000, "jobs in the run")
	size       = flag.Int("size", 1<<10, "bytes of each input")
	which      = flag.String("case", "cold", "cold, warm or first")
	steps      = flag.Int("steps", 10, "steps profiled")
	validator  = flag.String("validator", "readfile", "the fan-out's parameter validator: readfile, head or none")
	cpuprofile = flag.String("cpuprofile", "", "write a CPU profile here")
	memprofile = flag.String("memprofile", "", "write an allocation profile here")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		os.Exit(1)
	}
}

func run() error {
	base, err := os.MkdirTemp("", "custodian-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	var o *engine.Run
	switch *which {
	case "cold", "warm":
		if o, err = finished(filepath.Join(base, "run")); err != nil {
			return err
		}
		defer o.Close()
		if *which == "warm" {
			time.Sleep(2100 * time.Millisecond) // past the cache's racy window
			if err := done(o); err != nil {
				return err
			}
		}
	case "first":
	default:
		return fmt.Errorf("-case %q: cold, warm or first", *which)
	}
	runtime.MemProfileRate = 0
	if *memprofile != "" {
		runtime.MemProfileRate = 4096
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var total time.Duration
	for i := range *steps {
		var err error
		var d time.Duration
		switch *which {
		case "cold":
			if err = os.Remove(filepath.Join(o.Dir(), ".custodian", "hashes")); errors.Is(err, os.ErrNotExist) {
				err = nil
			}
			if err == nil {
				start := time.Now()
				err = done(o)
				d = time.Since(start)
			}
		case "warm":
			start := time.Now()
			err = done(o)
			d = time.Since(start)
		case "first":
			d, err = first(filepath.Join(base, strconv.Itoa(i)))
		}
		if err != nil {
			return err
		}
		total += d
	}
	fmt.Printf("%s, %d jobs, %d-byte inputs: %v a step\n", *which, *jobs, *size, total/time.Duration(*steps))
	if *memprofile != "" {
		f, err := os.Create(*memprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		return pprof.Lookup("allocs").WriteTo(f, 0)
	}
	return nil
}

func start(dir string) (*engine.Run, error) {
	if err := fanout.Setup(dir, *jobs, *size); err != nil {
		return nil, err
	}
	return engine.Start(fanout.Registry(), fanout.Name, dir, workflow.Params{"jobs": strconv.Itoa(*jobs), "validator": *validator})
}

func first(dir string) (time.Duration, error) {
	pprof.StopCPUProfile()
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 0
	o, err := start(dir)
	if err != nil {
		return 0, err
	}
	// Kept to the end: removing many files while the next step runs would
	// make it pay for the file system's work.
	defer o.Close()
	runtime.MemProfileRate = rate
	// The step's one sync of the file system pays for no one else's writes.
	syscall.Sync()
	if *cpuprofile != "" {
		// Only the step is profiled: a profile is appended to per step.
		f, err := os.OpenFile(*cpuprofile+"."+filepath.Base(dir), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, err
		}
		defer pprof.StopCPUProfile()
	}
	begin := time.Now()
	out, err := o.Step()
	d := time.Since(begin)
	if err == nil && (out.Kind != engine.KindLaunch || len(out.Jobs) != *jobs) {
		err = fmt.Errorf("the first step gave %s with %d jobs", out.Kind, len(out.Jobs))
	}
	return d, err
}

func finished(dir string) (*engine.Run, error) {
	o, err := start(dir)
	if err != nil {
		return nil, err
	}
	steps := []func(string) error{
		func(dir string) error { return fanout.WriteOutputs(dir, *jobs) },
		fanout.WriteJoin,
	}
	for _, then := range steps {
		out, err := o.Step()
		if err == nil && out.Kind != engine.KindLaunch {
			err = fmt.Errorf("a step gave %s", out.Kind)
		}
		if err == nil {
			err = then(dir)
		}
		if err != nil {
			o.Close()
			return nil, err
		}
	}
	if err := done(o); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

func done(o *engine.Run) error {
	out, err := o.Step()
	if err == nil && out.Kind != engine.KindDone {
		err = fmt.Errorf("a step on the finished run gave %s", out.Kind)
	}
	return err
}
