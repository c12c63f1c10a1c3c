package store

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A state's jobs are read in two halves on two goroutines when there are
// many: what is read, and every refusal with its words, must be what one
// reading of the whole gives.

// inHalves makes the test read every map of records in halves, however
// small, or never.
func inHalves(t *testing.T, on bool) {
	t.Helper()
	old, procs := minHalves, runtime.GOMAXPROCS(2)
	minHalves = 1 << 62
	if on {
		minHalves = 0
	}
	t.Cleanup(func() {
		minHalves = old
		runtime.GOMAXPROCS(procs)
	})
}

// manyJobs is sampleState with n more jobs, of every kind of record.
func manyJobs(n int) *State {
	st := sampleState()
	for i := range n {
		name := fmt.Sprintf("job-%04d", i)
		in := Inputs{Output: name + ".md", Prompt: sum64(name), Launch: "{}", Files: []FileHash{{Path: "in/" + name, SHA256: sum64("in " + name)}}}
		js := &JobState{Handouts: 1 + i%3, Input: &in}
		switch i % 4 {
		case 0:
			js.Accepted = sum64("out " + name)
		case 1:
			js.Outstanding = &Handout{Prompt: sum64("prompt " + name)}
		case 2:
			js.Trouble = &Trouble{Failures: 1, Messages: []string{"m"}, History: []string{"h"}, LastFailure: &Failure{Kind: "no-output", Reason: "r"}}
		}
		st.Jobs[name] = js
	}
	return st
}

// decodeBoth decodes data whole and in halves into fresh values of T, and
// requires both to say the same.
func decodeBoth[T any](t *testing.T, data []byte) (*T, error) {
	t.Helper()
	var whole, halves T
	inHalves(t, false)
	errWhole := decodeStrict(data, &whole)
	inHalves(t, true)
	errHalves := decodeStrict(data, &halves)
	if errWhole != nil {
		require.Error(t, errHalves, "read in halves, a record read whole as %v is taken", errWhole)
		assert.Equal(t, errWhole.Error(), errHalves.Error())
		return nil, errHalves
	}
	require.NoError(t, errHalves)
	assert.EqualExportedValues(t, whole, halves)
	return &halves, nil
}

func TestHalves_ReadWhatOneReadingReads(t *testing.T) {
	data := mustEncodeT(t, manyJobs(2000))
	inHalves(t, true)
	var d decoder
	d.data = data
	d.pos = bytes.Index(data, []byte(`"jobs":{`)) + len(`"jobs":{`)
	require.GreaterOrEqual(t, d.halfway(typeOfJobs), 0, "no comma between two jobs was found")

	st, err := decodeBoth[State](t, data)
	require.NoError(t, err)
	assert.Len(t, st.Jobs, 2002)
	assert.Equal(t, data, mustEncodeT(t, st), "the records read in halves are written as they were")
}

func TestHalves_RefuseWhatOneReadingRefuses(t *testing.T) {
	good := string(mustEncodeT(t, manyJobs(400)))
	late := `"job-0398":{"handouts":`
	require.Contains(t, good, late)
	tests := []struct {
		name string
		data string
	}{
		{"an unknown field late", strings.Replace(good, late, `"job-0398":{"repairs":1,"handouts":`, 1)},
		{"a key of the first half again in the second", strings.Replace(good, late, `"job-0001":{"handouts":`, 1)},
		{"a key twice in the second half", strings.Replace(good, `"job-0399":{"handouts":`, `"job-0398":{"handouts":`, 1)},
		{"a bad escape in a key late", strings.Replace(good, late, `"job\x":{"handouts":`, 1)},
		{"cut in the second half", good[:strings.Index(good, late)+len(late)]},
		{"no closing brace", strings.Replace(good, `}},"workflow"`, `},"workflow"`, 1)},
		{"an unknown field early", strings.Replace(good, `"job-0001":{"handouts":`, `"job-0001":{"repairs":1,"handouts":`, 1)},
		{"errors in both halves", strings.Replace(strings.Replace(good, late, `"job-0398":{"repairs":1,"handouts":`, 1),
			`"job-0001":{"handouts":`, `"job-0001":{"again":1,"handouts":`, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NotEqual(t, good, tt.data, "the spoiler changed nothing")
			_, err := decodeBoth[State](t, []byte(tt.data))
			assert.Error(t, err)
		})
	}
	// What the codec takes and the state's checks refuse is taken alike.
	for _, data := range []string{
		strings.Replace(good, late, `"job-0398":null,"x":{"handouts":`, 1),
		strings.Replace(good, late, `"job\u0000":{"handouts":`, 1),
	} {
		_, err := decodeBoth[State](t, []byte(data))
		assert.NoError(t, err)
	}
}

// A comma that looks like one between two jobs but lies in another map
// further on is never reached by the first half, which reads the whole
// map; what the second half read there is dropped.
func TestHalves_ACommaInAnotherMap(t *testing.T) {
	type twoMaps struct {
		A map[string]*JobState `json:"a"`
		B map[string]*JobState `json:"b"`
	}
	v := twoMaps{A: map[string]*JobState{"x": {Handouts: 1}}, B: manyJobs(400).Jobs}
	got, err := decodeBoth[twoMaps](t, mustEncodeT(t, v))
	require.NoError(t, err)
	assert.Len(t, got.A, 1)
	assert.Len(t, got.B, 402)
}

var typeOfJobs = reflect.TypeFor[map[string]*JobState]()

func mustEncodeT(t *testing.T, v any) []byte {
	t.Helper()
	data, err := encode(v)
	require.NoError(t, err)
	return data
}

// A state of many jobs is checked in two halves at once, and the job its
// refusal names is the first, by name, that fails, as for a few.
func TestCheck_ManyJobsInHalves(t *testing.T) {
	inHalves(t, true)
	for _, n := range []int{10, minCheckHalves + 10} {
		t.Run(fmt.Sprint(n, " jobs"), func(t *testing.T) {
			st := manyJobs(n)
			st.Abandoned, st.Resolving = nil, nil
			require.NoError(t, st.check())
			for _, name := range []string{fmt.Sprintf("job-%04d", n-1), "job-0005", fmt.Sprintf("job-%04d", n/2)} {
				st.Jobs[name].Handouts = -1
			}
			err := st.check()
			require.Error(t, err)
			assert.Contains(t, err.Error(), `jobs["job-0005"]`)
		})
	}
}
