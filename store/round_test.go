package store_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/custodian-run/custodian/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A round of format 2 keeps the workflow that holds the run and each
// lease's host and expiry; one of format 1, which an earlier custodian
// wrote, is read as a round without them.
func TestRoundFormats(t *testing.T) {
	r := newRun(t)
	locked(t, r)
	in := &store.Round{Step: 3, Host: "run-host", Workflow: &store.Workflow{ID: "custodian-x", Namespace: "default", Address: "t:7233"},
		Workers: []store.Lease{{Job: "a", Attempt: 1, Launch: 2, Process: store.Process{Pid: 7, Start: "9"},
			Host: "worker-7", Expires: "2026-12-02T01:00:00Z"}}}
	require.NoError(t, r.SaveRound("round", in))
	got, err := r.LoadRound()
	require.NoError(t, err)
	assert.Equal(t, store.RoundFormat, got.Format)
	assert.Equal(t, in.Workflow, got.Workflow)
	assert.Equal(t, in.Workers, got.Workers)
	assert.Equal(t, "worker-7", got.Workers[0].Where(got))
	assert.True(t, got.Workers[0].Expired(time.Date(2026, 12, 2, 1, 0, 1, 0, time.UTC)))
	assert.False(t, got.Workers[0].Expired(time.Date(2026, 12, 2, 0, 59, 0, 0, time.UTC)))

	v1 := `{"format":1,"run":"` + r.Record.ID + `","step":2,"host":"h","driver":{"pid":5,"start":"6"},` +
		`"workers":[{"job":"a","attempt":1,"launch":1,"process":{"pid":8,"start":"9"}}]}`
	require.NoError(t, os.WriteFile(filepath.Join(r.Dir, ".custodian", "round.json"), []byte(v1), 0o644))
	old, err := r.LoadRound()
	require.NoError(t, err, "a round of format 1 was refused")
	assert.Nil(t, old.Workflow)
	require.Len(t, old.Workers, 1)
	assert.Equal(t, "h", old.Workers[0].Where(old))
	assert.False(t, old.Workers[0].Expired(time.Now()), "a lease without an expiry expired")
}

// A forged round is refused, not taken for a worker's lease.
func TestRoundForged(t *testing.T) {
	for name, body := range map[string]string{
		"expiry":        `"workers":[{"job":"a","attempt":1,"launch":1,"process":{"pid":8,"start":"9"},"host":"w","expires":"soon"}]`,
		"host":          `"workers":[{"job":"a","attempt":1,"launch":1,"process":{"pid":8,"start":"9"},"host":"w\n","expires":""}]`,
		"workflow":      `"workflow":{"id":"","namespace":"","address":""},"workers":[]`,
		"workflow name": `"workflow":{"id":"x\u001b[2J","namespace":"","address":""},"workers":[]`,
	} {
		t.Run(name, func(t *testing.T) {
			r := newRun(t)
			rec := `{"format":2,"run":"` + r.Record.ID + `","step":2,"host":"h","driver":{"pid":0,"start":""},` + body + `}`
			if name == "expiry" || name == "host" {
				rec = `{"format":2,"run":"` + r.Record.ID + `","step":2,"host":"h","driver":{"pid":0,"start":""},"workflow":null,` + body + `}`
			}
			require.NoError(t, os.WriteFile(filepath.Join(r.Dir, ".custodian", "round.json"), []byte(rec), 0o644))
			_, err := r.LoadRound()
			var recErr *store.RecordError
			assert.ErrorAs(t, err, &recErr)
		})
	}
}
