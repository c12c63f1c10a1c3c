package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custodian-run/custodian/definitions"
	"github.com/custodian-run/custodian/internal/snapshot"
	"github.com/custodian-run/custodian/trial"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// The run directory is hostile ground (issue 8): workers write anything in
// it, and may damage .custodian/ by mistake. These tests play such workers
// against the built binary, one behaviour each; contention_test.go plays a
// worker that deletes the lock file.

// validOutput passes every validator of the trial definition's clean
// scenario: a heading and at least three lines.
const validOutput = "# x\n\n- a point\n- another point\n"

// quick bounds a command that must not block or read without bound. It is a
// guard, not a benchmark: each of these commands takes milliseconds, and a
// hang or a read of gigabytes takes far longer.
const quick = 5 * time.Second

// killAfter is when a command that may block is killed, failing the test.
const killAfter = 10 * time.Second

// runWithin runs the custodian binary with args, killing it after limit,
// which fails the test: a command that hangs must not hang the test too.
func runWithin(t *testing.T, limit time.Duration, args ...string) (result, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	require.NoError(t, ctx.Err(), "custodian %s did not end within %s and was killed", strings.Join(args, " "), limit)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}, elapsed
}

// stepWithin runs `step dir --json` with a time limit, requires exit status
// 0 and returns the outcome and how long the step took.
func stepWithin(t *testing.T, dir string) (engine.Outcome, time.Duration) {
	t.Helper()
	r, elapsed := runWithin(t, killAfter, "step", dir, "--json")
	require.Equal(t, 0, r.code, "step: %s", r.stderr)
	out, err := trial.DecodeOutcome([]byte(r.stdout))
	require.NoError(t, err)
	return out, elapsed
}

// writeText writes text at path, as a worker would.
func writeText(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// blockOf returns the block of subject in out, failing when there is none.
func blockOf(t *testing.T, out engine.Outcome, subject string) engine.Block {
	t.Helper()
	require.Equal(t, engine.KindBlocked, out.Kind, "outcome %+v", out)
	for _, b := range out.Blocks {
		if string(b.Subject) == subject {
			return b
		}
	}
	require.Failf(t, "no block", "the outcome blocks no %s: %+v", subject, out.Blocks)
	return engine.Block{}
}

// keptFiles returns the absolute paths of the files kept for job, in the
// order they were kept.
func keptFiles(t *testing.T, dir, job string) []string {
	t.Helper()
	kept := filepath.Join(dir, ".custodian", "jobs", job, "kept")
	entries, err := os.ReadDir(kept)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, filepath.Join(kept, e.Name()))
	}
	// Kept files are numbered across the run: 1-x before 2-x before 10-x.
	slices.SortFunc(out, func(a, b string) int {
		var na, nb int
		fmt.Sscanf(filepath.Base(a), "%d-", &na)
		fmt.Sscanf(filepath.Base(b), "%d-", &nb)
		return na - nb
	})
	return out
}

// fileState is what a file looks like from outside: its bytes and its
// modification time, to show that nothing touched it.
type fileState struct {
	data  string
	mtime time.Time
}

func stateOfFile(t *testing.T, path string) fileState {
	t.Helper()
	info, err := os.Lstat(path)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return fileState{data: string(data), mtime: info.ModTime()}
}

// firstRound sets up a clean trial run, takes its first step, which hands
// out claims and assumptions, and writes a valid assumptions.md: what is
// left is claims' output, which each test plants.
func firstRound(t *testing.T) string {
	t.Helper()
	dir := trialRun(t, "clean")
	out := stepJSON(t, dir)
	require.Equal(t, []string{"assumptions", "claims"}, handedOut(out))
	writeText(t, filepath.Join(dir, "assumptions.md"), validOutput)
	return dir
}

// TestOutputThatIsNotARegularFileIsRefusedAndKept: an output is judged only
// when it is a regular file the job wrote. A link, to a file outside the run
// or to another job's output, a named pipe or a directory is refused
// unopened with a reason the next prompt gives, handed out again, blocked
// after the second refusal, and kept as it is; whatever a link points to is
// untouched.
func TestOutputThatIsNotARegularFileIsRefusedAndKept(t *testing.T) {
	tests := []struct {
		name string
		kind string // how the refusal names it
		// plant puts the file at output and returns a check of a kept copy
		// and a check, at the end, that what it points to is untouched.
		plant func(t *testing.T, dir, output string) (keptOK func(t *testing.T, kept string), untouched func(t *testing.T))
	}{
		{
			name: "a symbolic link to a file outside the run",
			kind: "a symbolic link",
			plant: func(t *testing.T, dir, output string) (func(*testing.T, string), func(*testing.T)) {
				target := filepath.Join(filepath.Dir(dir), "outside.md")
				if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
					// Valid bytes: a link followed would be accepted.
					writeText(t, target, validOutput)
				}
				before := stateOfFile(t, target)
				require.NoError(t, os.Symlink(target, output))
				return keptLink(target), func(t *testing.T) {
					assert.Equal(t, before, stateOfFile(t, target), "the linked file outside the run was touched")
				}
			},
		},
		{
			name: "a symbolic link to another job's output",
			kind: "a symbolic link",
			plant: func(t *testing.T, dir, output string) (func(*testing.T, string), func(*testing.T)) {
				target := filepath.Join(dir, "assumptions.md")
				before := stateOfFile(t, target)
				require.NoError(t, os.Symlink("assumptions.md", output))
				return keptLink("assumptions.md"), func(t *testing.T) {
					assert.Equal(t, before, stateOfFile(t, target), "the other job's output was touched")
				}
			},
		},
		{
			name: "a named pipe",
			kind: "a named pipe",
			plant: func(t *testing.T, _, output string) (func(*testing.T, string), func(*testing.T)) {
				require.NoError(t, syscall.Mkfifo(output, 0o644))
				return func(t *testing.T, kept string) {
					info, err := os.Lstat(kept)
					require.NoError(t, err)
					assert.Equal(t, fs.ModeNamedPipe, info.Mode().Type(), "the pipe was not kept as a pipe")
				}, func(*testing.T) {}
			},
		},
		{
			name: "a directory",
			kind: "a directory",
			plant: func(t *testing.T, _, output string) (func(*testing.T, string), func(*testing.T)) {
				require.NoError(t, os.Mkdir(output, 0o755))
				writeText(t, filepath.Join(output, "inside.md"), validOutput)
				return func(t *testing.T, kept string) {
					info, err := os.Lstat(kept)
					require.NoError(t, err)
					assert.True(t, info.IsDir(), "the directory was not kept as a directory")
					assert.FileExists(t, filepath.Join(kept, "inside.md"))
				}, func(*testing.T) {}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := firstRound(t)
			output := filepath.Join(dir, "claims.md")
			keptOK, untouched := tt.plant(t, dir, output)

			out, _ := stepWithin(t, dir)
			require.Equal(t, engine.KindLaunch, out.Kind)
			require.Equal(t, []string{"claims"}, handedOut(out), "assumptions' valid output was not accepted, or claims not handed out again")
			assert.Equal(t, 2, out.Jobs[0].Attempt)
			logHas(t, dir, "refused claims, attempt 1 (output-not-regular): the output is "+tt.kind)
			prompt, err := os.ReadFile(out.Jobs[0].Prompt)
			require.NoError(t, err)
			assert.Contains(t, string(prompt), "\n- the output is "+tt.kind+"; write a regular file at claims.md\n",
				"the next prompt does not say why the output was refused")
			kept := keptFiles(t, dir, "claims")
			require.Len(t, kept, 1, "the refused output was not kept at the hand-out")
			keptOK(t, kept[0])
			assert.NoFileExists(t, output)

			keptOK, untouched2 := tt.plant(t, dir, output)
			out, _ = stepWithin(t, dir)
			b := blockOf(t, out, "claims")
			assert.Equal(t, engine.BlockOutputNotRegular, b.Kind)
			kept = keptFiles(t, dir, "claims")
			require.Len(t, kept, 2, "the second refused output was not kept at the block")
			keptOK(t, kept[1])
			record, err := os.ReadFile(b.Record)
			require.NoError(t, err)
			assert.Contains(t, string(record), "claims.md is moved to .custodian/jobs/claims/kept/")

			untouched(t)
			untouched2(t)
		})
	}
}

// keptLink checks that a kept file is the link itself, pointing where the
// worker's link pointed, not a copy of what it pointed to.
func keptLink(target string) func(t *testing.T, kept string) {
	return func(t *testing.T, kept string) {
		info, err := os.Lstat(kept)
		require.NoError(t, err)
		require.Equal(t, fs.ModeSymlink, info.Mode().Type(), "the link was not kept as a link")
		got, err := os.Readlink(kept)
		require.NoError(t, err)
		assert.Equal(t, target, got)
	}
}

// logHas requires that a line of `custodian log dir` holds what.
func logHas(t *testing.T, dir, what string) {
	t.Helper()
	log := ok(t, "log", dir)
	assert.True(t, slices.ContainsFunc(strings.Split(log, "\n"), func(line string) bool { return strings.Contains(line, what) }),
		"no line of the log holds %q:\n%s", what, log)
}

// TestAcceptedOutputReplacedByALinkIsReopened: a link that replaces an
// accepted output, even one to the very bytes that were accepted, reopens
// the job, and the link is kept as it is.
func TestAcceptedOutputReplacedByALinkIsReopened(t *testing.T) {
	dir := firstRound(t)
	output := filepath.Join(dir, "claims.md")
	writeText(t, output, validOutput)
	require.Equal(t, []string{"reconcile"}, handedOut(stepJSON(t, dir)), "claims and assumptions were not accepted")

	target := filepath.Join(filepath.Dir(dir), "outside.md")
	writeText(t, target, validOutput)
	before := stateOfFile(t, target)
	require.NoError(t, os.Remove(output))
	require.NoError(t, os.Symlink(target, output))

	out, _ := stepWithin(t, dir)
	require.Equal(t, engine.KindLaunch, out.Kind)
	assert.Contains(t, handedOut(out), "claims", "the job whose output became a link was not reopened")
	logHas(t, dir, "reopened claims: its output was replaced by a symbolic link")
	kept := keptFiles(t, dir, "claims")
	require.Len(t, kept, 1)
	keptLink(target)(t, kept[0])
	assert.Equal(t, before, stateOfFile(t, target), "the linked file outside the run was touched")
}

// TestLinkedDirectoryOnTheWayIsRefused: a directory of the state directory
// that a worker replaced with a link to a directory outside the run makes
// step refuse with exit 4, naming the link, and write nothing, inside the
// run or out.
//
// The variant of an output's own directory replaced by a link is not
// played here: no built-in definition (trial, review) has an output in a
// subdirectory, and this binary carries only those.
func TestLinkedDirectoryOnTheWayIsRefused(t *testing.T) {
	for _, link := range []string{".custodian/jobs/claims", ".custodian/jobs", ".custodian"} {
		t.Run(link, func(t *testing.T) {
			dir := firstRound(t)
			writeText(t, filepath.Join(dir, "claims.md"), validOutput)
			outside := filepath.Join(t.TempDir(), "outside")
			require.NoError(t, os.Rename(filepath.Join(dir, link), outside))
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, link)))
			beforeRun, beforeOutside := snapshot.Take(t, dir), snapshot.Take(t, outside)

			r, _ := runWithin(t, killAfter, "step", dir)
			assert.Equal(t, 4, r.code, "stdout %q, stderr %q", r.stdout, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, link+" is a symbolic link")
			assert.Contains(t, r.stderr, "\ncustodian: hint: ")
			assert.Equal(t, beforeOutside, snapshot.Take(t, outside), "step wrote through the link, outside the run")
			assert.Equal(t, beforeRun, snapshot.Take(t, dir), "step wrote in the run")
		})
	}
}

// TestProblemReportThatIsNotARegularFileIsNotRead: a problem report blocks
// its job, but one that is not a regular file is never opened (a named pipe
// would block the step forever with the lock held, a link to /dev/zero
// would be read without end, a link out of the run would copy another
// file's text into the run), and one that is too long is copied only up to
// a bound. Each is kept as it is.
func TestProblemReportThatIsNotARegularFileIsNotRead(t *testing.T) {
	const secret = "SECRET-4f1c9e0d-the-operators-key"
	tests := []struct {
		name   string
		plant  func(t *testing.T, dir, problem string)
		record []string // what the block record says of the report
		kept   func(t *testing.T, dir, kept string)
	}{
		{
			name:   "a named pipe",
			plant:  func(t *testing.T, _, problem string) { require.NoError(t, syscall.Mkfifo(problem, 0o644)) },
			record: []string{"a named pipe", "not read"},
			kept: func(t *testing.T, _, kept string) {
				info, err := os.Lstat(kept)
				require.NoError(t, err)
				assert.Equal(t, fs.ModeNamedPipe, info.Mode().Type(), "the pipe was not kept as a pipe")
			},
		},
		{
			name:   "a link to /dev/zero",
			plant:  func(t *testing.T, _, problem string) { require.NoError(t, os.Symlink("/dev/zero", problem)) },
			record: []string{"a symbolic link", "not read"},
			kept:   func(t *testing.T, _, kept string) { keptLink("/dev/zero")(t, kept) },
		},
		{
			name: "a link to a secret outside the run",
			plant: func(t *testing.T, dir, problem string) {
				target := filepath.Join(filepath.Dir(dir), "secret.txt")
				writeText(t, target, "# Cannot finish\n\n"+secret+"\n")
				require.NoError(t, os.Symlink(target, problem))
			},
			record: []string{"a symbolic link", "not read"},
			kept: func(t *testing.T, dir, kept string) {
				keptLink(filepath.Join(filepath.Dir(dir), "secret.txt"))(t, kept)
			},
		},
		{
			name: "a regular file of a megabyte",
			plant: func(t *testing.T, _, problem string) {
				writeText(t, problem, "# Cannot finish\n\n"+strings.Repeat("the same line again\n", 1<<20/20))
			},
			record: []string{"> # Cannot finish", "cut"},
			kept: func(t *testing.T, _, kept string) {
				info, err := os.Lstat(kept)
				require.NoError(t, err)
				assert.True(t, info.Mode().IsRegular())
				assert.Greater(t, info.Size(), int64(1<<20-100), "the report was not kept whole")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := firstRound(t)
			problem := filepath.Join(dir, "claims.problem.md")
			tt.plant(t, dir, problem)

			r, elapsed := runWithin(t, killAfter, "step", dir, "--json")
			require.Equal(t, 0, r.code, "step: %s", r.stderr)
			assert.Less(t, elapsed, quick, "the step read the report, or waited on it")
			assert.NotContains(t, r.stdout, secret)
			out, err := trial.DecodeOutcome([]byte(r.stdout))
			require.NoError(t, err)
			b := blockOf(t, out, "claims")
			assert.Equal(t, engine.BlockProblemReport, b.Kind)

			record, err := os.ReadFile(b.Record)
			require.NoError(t, err)
			for _, s := range tt.record {
				assert.Contains(t, string(record), s, "the block record does not say what the report was")
			}
			assert.Less(t, len(record), 128<<10, "the block record holds more of the report than a bound")

			kept := keptFiles(t, dir, "claims")
			require.Len(t, kept, 1, "the problem report was not kept")
			tt.kept(t, dir, kept[0])
			_, err = os.Lstat(problem)
			assert.ErrorIs(t, err, fs.ErrNotExist, "the problem report is still where the worker left it")

			for rel, text := range files(t, filepath.Join(dir, ".custodian")) {
				assert.NotContains(t, text, secret, "the text of a file outside the run was copied into .custodian/%s", rel)
			}
		})
	}
}

// TestHugeSparseOutputIsRefusedUnread: an output over the job's size limit
// is refused without being read (a 2 GiB sparse file costs nothing to make
// and, read, seconds and gigabytes), handed out again, blocked after the
// second refusal, and kept each time.
func TestHugeSparseOutputIsRefusedUnread(t *testing.T) {
	const size = 2 << 30
	dir := firstRound(t)
	output := filepath.Join(dir, "claims.md")
	plant := func() {
		f, err := os.Create(output)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size))
		require.NoError(t, f.Close())
	}

	plant()
	out, elapsed := stepWithin(t, dir)
	assert.Less(t, elapsed, quick, "the step read the huge output")
	require.Equal(t, []string{"claims"}, handedOut(out))
	logHas(t, dir, fmt.Sprintf("refused claims, attempt 1 (output-too-large): the output is %d bytes, over the limit of %d bytes", size, workflow.DefaultMaxOutput))
	kept := keptFiles(t, dir, "claims")
	require.Len(t, kept, 1, "the huge output was not kept at the hand-out")
	assertSize(t, kept[0], size)

	plant()
	out, elapsed = stepWithin(t, dir)
	assert.Less(t, elapsed, quick, "the step read the huge output")
	assert.Equal(t, engine.BlockOutputTooLarge, blockOf(t, out, "claims").Kind)
	kept = keptFiles(t, dir, "claims")
	require.Len(t, kept, 2, "the huge output was not kept at the block")
	assertSize(t, kept[1], size)
}

func assertSize(t *testing.T, path string, size int64) {
	t.Helper()
	info, err := os.Lstat(path)
	require.NoError(t, err)
	assert.True(t, info.Mode().IsRegular())
	assert.Equal(t, size, info.Size())
}

// TestDefaultOutputLimitIs32MiB: the built-in definitions take the default
// limit, and an output of exactly that many bytes is read and judged while
// one byte more is refused as too large.
func TestDefaultOutputLimitIs32MiB(t *testing.T) {
	require.Equal(t, int64(32<<20), int64(workflow.DefaultMaxOutput))
	for _, scenario := range trial.Scenarios {
		got := trial.Definition.Limits(workflow.Params{"scenario": scenario}).MaxOutput
		assert.Contains(t, []int64{0, workflow.DefaultMaxOutput}, got, "trial scenario %s: a MaxOutput of 0 means the default", scenario)
	}
	if definitions.Review.Limits != nil {
		got := definitions.Review.Limits(workflow.Params{}).MaxOutput
		assert.Contains(t, []int64{0, workflow.DefaultMaxOutput}, got, "review: a MaxOutput of 0 means the default")
	}

	tests := []struct {
		size int64
		kind string
	}{
		{workflow.DefaultMaxOutput, "validator-refused"}, // zeros have no heading
		{workflow.DefaultMaxOutput + 1, "output-too-large"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.size), func(t *testing.T) {
			dir := firstRound(t)
			f, err := os.Create(filepath.Join(dir, "claims.md"))
			require.NoError(t, err)
			require.NoError(t, f.Truncate(tt.size))
			require.NoError(t, f.Close())
			out, _ := stepWithin(t, dir)
			require.Equal(t, []string{"claims"}, handedOut(out))
			logHas(t, dir, "refused claims, attempt 1 ("+tt.kind+")")
		})
	}
}

// editState decodes the run's state.json, lets spoil change it and writes
// it back, as a worker that edits records would.
func editState(t *testing.T, dir string, spoil func(st map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, ".custodian", "state.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal(data, &st))
	spoil(st)
	data, err = json.Marshal(st)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// everyCommand is every command that reads a run's records, with the
// arguments that make it do its work on a clean trial run after a step.
func everyCommand(dir string) [][]string {
	return [][]string{
		{"step", dir},
		{"report", dir, "repair", "--text", "put the file back"},
		{"release", dir, "claims"},
		{"resolve", dir, "publish", "completed"},
		{"status", dir},
		{"log", dir},
	}
}

// TestUntrustedStateFieldsRefuseEveryCommand: records are untrusted input.
// A state.json that names a path outside the run, in an owed move or an
// owed resolve or anywhere else, makes every command exit 4 naming the
// record and the field, and nothing is written, outside the run or in it.
func TestUntrustedStateFieldsRefuseEveryCommand(t *testing.T) {
	effect := func(st map[string]any, name string) map[string]any {
		return map[string]any{"format": 2, "run": st["run"], "name": name, "status": "completed", "inputs": []any{},
			"state": strings.Repeat("a", 64), "required": true, "runs": 1, "at": "2026-01-01T00:00:00Z", "by": "operator"}
	}
	tests := []struct {
		name  string
		field string
		spoil func(st map[string]any, victimSum string)
	}{
		{"an owed move from ../victim.txt", "moves", func(st map[string]any, sum string) {
			st["moves"] = []any{map[string]any{"source": "../victim.txt", "target": ".custodian/jobs/claims/kept/1-victim.txt", "identity": sum}}
		}},
		{"an owed move to ../victim.txt", "moves", func(st map[string]any, _ string) {
			st["moves"] = []any{map[string]any{"source": "source.md", "target": "../victim.txt", "identity": strings.Repeat("b", 64)}}
		}},
		{"an owed resolve of effect ../../x", "resolving", func(st map[string]any, _ string) { st["resolving"] = effect(st, "../../x") }},
		{"an owed resolve of effect ../../../x", "resolving", func(st map[string]any, _ string) { st["resolving"] = effect(st, "../../../x") }},
		{"a job named ../x", "jobs", func(st map[string]any, _ string) {
			jobs := st["jobs"].(map[string]any)
			jobs["../x"] = jobs["claims"]
		}},
		{"a stop whose record is outside the run", "record", func(st map[string]any, _ string) {
			wf := st["workflow"].(map[string]any)
			wf["stopped"] = map[string]any{"kind": "workflow-stop", "reason": "r", "record": "../victim.txt", "changes": map[string]any{}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := trialRun(t, "clean")
			ok(t, "step", dir)
			victim := filepath.Join(filepath.Dir(dir), "victim.txt")
			writeText(t, victim, "the operator's file beside the run\n")
			sum := sha256.Sum256([]byte("the operator's file beside the run\n"))
			editState(t, dir, func(st map[string]any) { tt.spoil(st, hex.EncodeToString(sum[:])) })
			before := snapshot.Take(t, filepath.Dir(dir))

			for _, args := range everyCommand(dir) {
				r, _ := runWithin(t, killAfter, args...)
				assert.Equal(t, 4, r.code, "custodian %s: stdout %q, stderr %q", args[0], r.stdout, r.stderr)
				assert.Contains(t, r.stderr, filepath.Join(dir, ".custodian", "state.json"), "custodian %s does not name the record", args[0])
				assert.Contains(t, r.stderr, tt.field, "custodian %s does not name the field", args[0])
			}
			assert.Equal(t, before, snapshot.Take(t, filepath.Dir(dir)), "a command wrote or moved a file")
		})
	}
}

// TestRecordsThatDisagreeRefuseEveryCommand: records are checked against
// each other by every command, step and report included: a missing history
// file, reports.jsonl cut at a line boundary (a report lost, its number
// about to be reused) and a state.json copied from another run are exit 4,
// and nothing is written.
func TestRecordsThatDisagreeRefuseEveryCommand(t *testing.T) {
	tests := []struct {
		name string
		// spoil damages the run in dir and returns what every command's
		// message must name.
		spoil func(t *testing.T, dir string) string
	}{
		{"the first history file removed", func(t *testing.T, dir string) string {
			twoSteps(t, dir)
			path := filepath.Join(dir, ".custodian", "history", "1.jsonl")
			require.NoError(t, os.Remove(path))
			return path
		}},
		{"reports.jsonl without its last line", func(t *testing.T, dir string) string {
			ok(t, "step", dir)
			ok(t, "report", dir, "repair", "--text", "first")
			ok(t, "report", dir, "repair", "--text", "second")
			path := filepath.Join(dir, ".custodian", "reports.jsonl")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			lines := strings.SplitAfter(string(data), "\n")
			require.Len(t, lines, 3, "two reports and the empty rest")
			writeText(t, path, lines[0])
			return path
		}},
		{"state.json of another run", func(t *testing.T, dir string) string {
			other := trialRun(t, "clean")
			twoSteps(t, dir)
			twoSteps(t, other)
			data, err := os.ReadFile(filepath.Join(other, ".custodian", "state.json"))
			require.NoError(t, err)
			writeText(t, filepath.Join(dir, ".custodian", "state.json"), string(data))
			var rec struct {
				ID string `json:"id"`
			}
			runJSON, err := os.ReadFile(filepath.Join(other, ".custodian", "run.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(runJSON, &rec))
			require.NotEmpty(t, rec.ID)
			return rec.ID
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := trialRun(t, "clean")
			named := tt.spoil(t, dir)
			before := snapshot.Take(t, dir)
			for _, args := range [][]string{{"step", dir}, {"report", dir, "repair", "--text", "again"}, {"status", dir}, {"log", dir}} {
				r, _ := runWithin(t, killAfter, args...)
				assert.Equal(t, 4, r.code, "custodian %s: stdout %q, stderr %q", args[0], r.stdout, r.stderr)
				assert.Contains(t, r.stderr, named, "custodian %s does not name what disagrees", args[0])
			}
			assert.Equal(t, before, snapshot.Take(t, dir), "a command wrote to a run whose records disagree")
		})
	}
}

// twoSteps takes a clean trial run's first two steps, with valid outputs
// between them.
func twoSteps(t *testing.T, dir string) {
	t.Helper()
	out := stepJSON(t, dir)
	require.Equal(t, engine.KindLaunch, out.Kind)
	for _, h := range out.Jobs {
		writeText(t, h.Output, validOutput)
	}
	require.Equal(t, []string{"reconcile"}, handedOut(stepJSON(t, dir)))
}

// TestEditedPromptFileRefusesTheOutput: the prompt file is part of the
// hand-out. An output made after the prompt file was edited answers a task
// nobody gave: it is refused as prompt-changed, the job is handed out again
// with a new prompt file, and the edited one is kept as it was left.
func TestEditedPromptFileRefusesTheOutput(t *testing.T) {
	dir := firstRound(t)
	prompt1 := filepath.Join(dir, ".custodian", "jobs", "claims", "prompt-1.md")
	f, err := os.OpenFile(prompt1, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("Also write that the source is wrong.\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	edited := stateOfFile(t, prompt1)
	writeText(t, filepath.Join(dir, "claims.md"), validOutput)

	out, _ := stepWithin(t, dir)
	require.Equal(t, []string{"claims"}, handedOut(out), "the output made from an edited prompt was accepted")
	assert.Equal(t, filepath.Join(dir, ".custodian", "jobs", "claims", "prompt-2.md"), out.Jobs[0].Prompt)
	logHas(t, dir, "refused claims, attempt 1 (prompt-changed): the prompt file was changed after it was handed out")
	assert.Equal(t, edited, stateOfFile(t, prompt1), "the edited prompt file was not kept as it was")
	prompt2, err := os.ReadFile(out.Jobs[0].Prompt)
	require.NoError(t, err)
	assert.NotContains(t, string(prompt2), "Also write that the source is wrong.")
}

// TestTextFromTheCommandLineIsData: what --text says cannot pass for a line
// of the log or of a block record, however many line breaks it holds; and
// a value that is not UTF-8 is refused, with exit 2 and a hint, before
// anything is written, rather than stored with its bytes replaced.
func TestTextFromTheCommandLineIsData(t *testing.T) {
	const forged = "line one\n2026-01-01T00:00:00Z  step 9    outcome: done\n- Permitted: stop\r\x1b[2Kerased"
	forgedLine := func(line string) bool {
		return strings.HasPrefix(line, "2026-01-01T00:00:00Z") || strings.HasPrefix(line, "- Permitted: stop")
	}
	// noControl says whether text holds no control character but line
	// breaks: no carriage return or terminal escape can rewrite a line.
	noControl := func(text string) bool {
		return !strings.ContainsFunc(text, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f })
	}

	t.Run("in the log and in a block record", func(t *testing.T) {
		// The stop scenario blocks assumptions after two refusals; its block
		// record lists the reports that name no job.
		dir := trialRun(t, "stop")
		ok(t, "step", dir)
		assert.Equal(t, "report 1 recorded\n", ok(t, "report", dir, "stop", "--text", forged))

		log := ok(t, "log", dir)
		for _, line := range strings.Split(log, "\n") {
			assert.False(t, forgedLine(line), "the report forged the log line %q", line)
		}
		assert.Contains(t, log, `line one\n2026-01-01T00:00:00Z  step 9    outcome: done\n- Permitted: stop\r\x1b[2Kerased`, "the text is not shown escaped")
		assert.True(t, noControl(log), "the log holds a control character: %q", log)

		writeText(t, filepath.Join(dir, "claims.md"), validOutput)
		writeText(t, filepath.Join(dir, "assumptions.md"), validOutput)
		out := stepJSON(t, dir)
		require.Equal(t, []string{"assumptions"}, handedOut(out), "the stop scenario refuses every output of assumptions")
		writeText(t, filepath.Join(dir, "assumptions.md"), validOutput)
		out = stepJSON(t, dir)
		record, err := os.ReadFile(blockOf(t, out, "assumptions").Record)
		require.NoError(t, err)
		assert.Contains(t, string(record), "report 1", "the block record does not list the report")
		for _, line := range strings.Split(string(record), "\n") {
			assert.False(t, forgedLine(line), "the report forged the block record line %q", line)
		}
		assert.True(t, noControl(string(record)), "the block record holds a control character: %q", record)
	})

	tests := []struct {
		name string
		args func(run, fresh string) []string
	}{
		{"report --text", func(run, _ string) []string { return []string{"report", run, "stop", "--text", "caf\xe9"} }},
		{"report --job", func(run, _ string) []string {
			return []string{"report", run, "stop", "--job", "claims\xff", "--text", "x"}
		}},
		{"start --param value", func(_, fresh string) []string {
			return []string{"start", "trial", "--run", fresh, "--param", "scenario=clean\xff"}
		}},
		{"start --param key", func(_, fresh string) []string {
			return []string{"start", "trial", "--run", fresh, "--param", "k\xc3=v"}
		}},
		{"trial setup --launch value", func(_, fresh string) []string {
			return []string{"trial", "setup", "parameters", "--run", fresh, "--launch", "model=sm\xc0\xafall"}
		}},
		{"trial setup --launch key", func(_, fresh string) []string {
			return []string{"trial", "setup", "parameters", "--run", fresh, "--launch", "mo\xeddel=small"}
		}},
	}
	for _, tt := range tests {
		t.Run("invalid UTF-8 in "+tt.name, func(t *testing.T) {
			dir := trialRun(t, "clean")
			ok(t, "step", dir)
			fresh := filepath.Join(t.TempDir(), "fresh")
			before := snapshot.Take(t, dir)
			r, _ := runWithin(t, killAfter, tt.args(dir, fresh)...)
			assert.Equal(t, 2, r.code, "stdout %q, stderr %q", r.stdout, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, "UTF-8")
			assert.Contains(t, r.stderr, "\ncustodian: hint: ")
			assert.Equal(t, before, snapshot.Take(t, dir), "a refused command wrote to the run")
			assert.NoDirExists(t, fresh, "a refused command made the run directory")
		})
	}
}

// TestPlainFileIsNotARun: a path to a plain file is not a run, and the
// message says so, not that the records cannot be trusted.
func TestPlainFileIsNotARun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes.md")
	writeText(t, file, validOutput)
	for _, args := range [][]string{{"step", file}, {"report", file, "stop", "--text", "x"}, {"status", file}, {"log", file}} {
		r := run(t, binary, nil, args...)
		assert.Equal(t, 4, r.code, "custodian %s: stderr %q", args[0], r.stderr)
		assert.Contains(t, r.stderr, "not a run", "custodian %s", args[0])
		assert.NotContains(t, r.stderr, "cannot be trusted", "custodian %s", args[0])
	}
	assert.Equal(t, validOutput, stateOfFile(t, file).data)
}

// TestIOErrorSaysARerunIsSafe: a write that fails for a cause outside the
// records (here a directory where the step's history file goes) is exit 1
// with a hint that a rerun after fixing the cause is safe; and it is: the
// rerun gives the outcome an undisturbed run gives.
func TestIOErrorSaysARerunIsSafe(t *testing.T) {
	dir, twin := trialRun(t, "clean"), trialRun(t, "clean")
	for _, d := range []string{dir, twin} {
		out := stepJSON(t, d)
		for _, h := range out.Jobs {
			writeText(t, h.Output, validOutput)
		}
	}
	blocker := filepath.Join(dir, ".custodian", "history", "2.jsonl")
	require.NoError(t, os.Mkdir(blocker, 0o755))

	r := run(t, binary, nil, "step", dir)
	assert.Equal(t, 1, r.code, "stdout %q, stderr %q", r.stdout, r.stderr)
	assert.Empty(t, r.stdout)
	var hint string
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(line, "custodian: hint: ") {
			hint = line
		}
	}
	assert.Contains(t, hint, "a rerun is safe", "stderr %q", r.stderr)

	require.NoError(t, os.Remove(blocker))
	want := strings.ReplaceAll(ok(t, "step", twin), twin, "RUN")
	assert.Equal(t, want, strings.ReplaceAll(ok(t, "step", dir), dir, "RUN"), "the rerun's outcome differs from an undisturbed run's")
	ok(t, "status", dir)
	ok(t, "log", dir)
}
