package picture_test

import (
	"io"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/custodian-run/custodian/picture"
	"github.com/custodian-run/custodian/testdata/bench/fanout"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// BenchmarkGraph measures `custodian graph` on a finished run of the
// fan-out of testdata/bench/fanout: reading the graph from the records and
// drawing it as Mermaid, grouped and one node per job. The budget is a
// person's: a 10,000-job run draws well under a second.
func BenchmarkGraph(b *testing.B) {
	for _, jobs := range []int{100, 10000} {
		o := finishedFanout(b, jobs)
		for _, opt := range []picture.Options{{}, {All: true}} {
			name := "N=" + strconv.Itoa(jobs) + "/all=" + strconv.FormatBool(opt.All)
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					g, err := o.Graph()
					if err != nil {
						b.Fatal(err)
					}
					if err := picture.Mermaid(io.Discard, g, opt); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// finishedFanout takes a run of the fan-out of jobs parts to its end.
func finishedFanout(b *testing.B, jobs int) *engine.Run {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "run")
	if err := fanout.Setup(dir, jobs, 1<<10); err != nil {
		b.Fatal(err)
	}
	o, err := engine.Start(fanout.Registry(), fanout.Name, dir, workflow.Params{"jobs": strconv.Itoa(jobs)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(o.Close)
	step := func(want engine.Kind) {
		out, err := o.Step()
		if err != nil || out.Kind != want {
			b.Fatalf("a step gave %s, %v; want %s", out.Kind, err, want)
		}
	}
	step(engine.KindLaunch)
	if err := fanout.WriteOutputs(dir, jobs); err != nil {
		b.Fatal(err)
	}
	step(engine.KindLaunch)
	if err := fanout.WriteJoin(dir); err != nil {
		b.Fatal(err)
	}
	step(engine.KindDone)
	return o
}

// BenchmarkSVG measures the picture of `custodian view`: the layout and
// its SVG, of a graph read once. The budget is the page's: a 10,000-job
// run drawn whole (--all) in a few seconds at most, grouped at once.
func BenchmarkSVG(b *testing.B) {
	for _, jobs := range []int{100, 10000} {
		o := finishedFanout(b, jobs)
		g, err := o.Graph()
		if err != nil {
			b.Fatal(err)
		}
		for _, opt := range []picture.Options{{}, {All: true}} {
			b.Run("N="+strconv.Itoa(jobs)+"/all="+strconv.FormatBool(opt.All), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := picture.SVG(io.Discard, g, opt); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
