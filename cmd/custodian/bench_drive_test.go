package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pipelineDurations is the fixed table of worker times of the pipelines
// definition with items items, in seconds: log-normal around 2 s, from 0.5
// to 6 s, to a tenth of a second, from a seeded generator, so that every
// run of the benchmark asks the same of the drive.
func pipelineDurations(items int) map[string]float64 {
	r := rand.New(rand.NewPCG(32, 16))
	d := func() float64 {
		s := math.Exp(math.Log(2) + 0.6*r.NormFloat64())
		return math.Round(min(6, max(0.5, s))*10) / 10
	}
	durations := map[string]float64{}
	for i := 1; i <= items; i++ {
		durations[fmt.Sprintf("audit-%02d", i)] = d()
	}
	for i := 1; i <= items; i++ {
		durations[fmt.Sprintf("follow-%02d", i)] = d()
	}
	durations["join"] = d()
	return durations
}

// stageJob is a job of the pipelines as a schedule sees it: what it waits
// on, and how long its worker takes.
type stageJob struct {
	name  string
	after []string
	secs  float64
}

func pipelineJobs(items int, durations map[string]float64) []stageJob {
	var jobs, follows []stageJob
	var joined []string
	for i := 1; i <= items; i++ {
		audit, follow := fmt.Sprintf("audit-%02d", i), fmt.Sprintf("follow-%02d", i)
		jobs = append(jobs, stageJob{name: audit, secs: durations[audit]})
		follows = append(follows, stageJob{name: follow, after: []string{audit}, secs: durations[follow]})
		joined = append(joined, follow)
	}
	return append(append(jobs, follows...), stageJob{name: "join", after: joined, secs: durations["join"]})
}

// listSchedule is the ideal a drive without a round barrier comes near:
// each job starts as soon as what it waits on has ended and one of
// parallel places is free, in the order the definition names them. It
// returns when the last job ends.
func listSchedule(jobs []stageJob, parallel int) float64 {
	ended := map[string]float64{}
	var running []float64 // the end times of the jobs running
	now := 0.0
	for len(ended) < len(jobs) {
		for _, j := range jobs {
			if _, done := ended[j.name]; done || len(running) >= parallel {
				continue
			}
			ready := true
			for _, a := range j.after {
				end, ok := ended[a]
				ready = ready && ok && end <= now
			}
			if ready {
				ended[j.name] = now + j.secs
				running = append(running, now+j.secs)
			}
		}
		// On to the next end: its place is free.
		slices.Sort(running)
		now, running = running[0], running[1:]
	}
	last := 0.0
	for _, end := range ended {
		last = max(last, end)
	}
	return last
}

// roundSchedule is the same jobs under the round barrier that drive kept
// before: a round is every job that became ready at the last step, and the
// next step waits for the round's last worker.
func roundSchedule(jobs []stageJob, parallel int) float64 {
	done := map[string]bool{}
	total := 0.0
	for len(done) < len(jobs) {
		var round []stageJob
		for _, j := range jobs {
			if done[j.name] {
				continue
			}
			ready := true
			for _, a := range j.after {
				ready = ready && done[a]
			}
			if ready {
				round = append(round, stageJob{name: j.name, secs: j.secs})
			}
		}
		total += listSchedule(round, parallel)
		for _, j := range round {
			done[j.name] = true
		}
	}
	return total
}

func TestSchedules(t *testing.T) {
	jobs := []stageJob{{name: "a", secs: 1}, {name: "b", secs: 4}, {name: "c", after: []string{"a"}, secs: 1}, {name: "d", after: []string{"b", "c"}, secs: 2}}
	tests := []struct {
		name     string
		parallel int
		list     float64
		rounds   float64
	}{
		{"room for all", 4, 6, 4 + 1 + 2},
		{"one at a time", 1, 8, 5 + 1 + 2},
		// a and b start; a ends at 1 and c takes its place; d at 4.
		{"two places", 2, 6, 4 + 1 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listSchedule(jobs, tt.parallel); got != tt.list {
				t.Errorf("list schedule: %v, want %v", got, tt.list)
			}
			if got := roundSchedule(jobs, tt.parallel); got != tt.rounds {
				t.Errorf("round schedule: %v, want %v", got, tt.rounds)
			}
		})
	}
	d := pipelineDurations(16)
	for name, secs := range d {
		if secs < 0.5 || secs > 6 {
			t.Errorf("%s takes %v s, outside 0.5 to 6", name, secs)
		}
	}
}

// BenchmarkDrivePipelines measures what a run costs in the time a person
// waits: custodian drive on 16 items, each an audit then a follow-up that
// reads it, and a join of the follow-ups, with --max-parallel 16 and
// workers that take the times of pipelineDurations. It reports the wall
// time of the drive against the ideal list schedule of the same times and
// against the round barrier drive had before (docs/performance.md); make
// bench-drive runs it.
func BenchmarkDrivePipelines(b *testing.B) {
	const items, parallel = 16, 16
	durations := pipelineDurations(items)
	jobs := pipelineJobs(items, durations)
	ideal, rounds := listSchedule(jobs, parallel), roundSchedule(jobs, parallel)
	plan := map[string][]string{}
	for name, secs := range durations {
		plan[name] = []string{"slow:" + strconv.FormatFloat(secs, 'f', 1, 64)}
	}
	h := newHarness(b, plan)
	var wall time.Duration
	n := 0
	for b.Loop() {
		dir := filepath.Join(b.TempDir(), "pipelines")
		start := exec.Command(variantBinaries["fanout"], "start", "pipelines", "--run", dir, "--param", "items="+strconv.Itoa(items))
		if out, err := start.CombinedOutput(); err != nil {
			b.Fatalf("start: %v: %s", err, out)
		}
		cmd := exec.Command(variantBinaries["fanout"], append([]string{"drive", dir, "--max-parallel", strconv.Itoa(parallel)}, workerArgs("exec")...)...)
		cmd.Env = append(os.Environ(), h.env...)
		began := time.Now()
		out, err := cmd.Output()
		wall += time.Since(began)
		n++
		if err != nil || !strings.HasPrefix(string(out), "done") {
			b.Fatalf("drive: %v: %s", err, out)
		}
	}
	secs := wall.Seconds() / float64(n)
	b.ReportMetric(secs, "s/run")
	b.ReportMetric(ideal, "ideal-s")
	b.ReportMetric(rounds, "rounds-s")
	b.ReportMetric(100*(secs-ideal)/ideal, "%over-ideal")
}
