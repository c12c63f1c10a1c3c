// Command fakeworker plays a worker for the tests of package drive. By its
// arguments it is `claude -p` (an argument -p or --print), `codex exec` (a
// first argument exec), or a plain program that the exec profile runs with
// the prompt file as its only argument.
//
// As claude and codex it parses its flags as claude-code 2.1.197 and codex
// 0.171.0 do (their --help texts are the reference; an unknown flag ends it
// with status 2), requires -- before the instruction, and prints their
// JSON event streams. It reads the prompt file that the instruction
// ("Read `PATH` and follow it.") names, finds where to write with
// workflow.ParsePrompt, and does what its script says for the job whose
// directory (.custodian/jobs/JOB/) holds the prompt.
//
// It fails loudly (a message on stderr, status 97, no output) when its
// stdin is not /dev/null or CLAUDECODE is set: a driver must never let a
// worker inherit either.
//
// Environment:
//
//	FAKEWORKER_SCRIPT  a JSON file {"JOB": ["BEHAVIOUR", ...]}: one behaviour per
//	                   launch of the job, the last repeating; "valid" for a job it
//	                   does not name, and for every job without a script. Launches
//	                   are counted in the directory SCRIPT.launches.
//	FAKEWORKER_LOG     a file to which it appends "start JOB UNIXNANO PID" and
//	                   "end JOB UNIXNANO PID", one write per line.
//
// Behaviours: valid (an output every trial validator but the retry
// scenario's reconcile accepts), checked (valid, ending with the line
// "Checked: yes" that one demands), invalid, problem (a problem report),
// nothing, hang (sleeps for ever, printing nothing), hang-after-output (a
// valid output, then sleeps for ever), exit:N, slow:SECONDS (valid after a
// sleep of SECONDS, 1.5 for one and a half), usage-limit:SECONDS (the CLI's usage-limit messages with a reset
// time SECONDS ahead; status 1 and no output), spawn-and-hang (starts a
// child in its process group that ignores SIGTERM and sleeps, then hangs),
// say:TEXT (valid, replying TEXT as its final message).
package main

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/custodian-run/custodian/workflow/engine"
)

// sleeperEnv marks the child that spawn-and-hang starts.
const sleeperEnv = "FAKEWORKER_SLEEPER"

func main() {
	if os.Getenv(sleeperEnv) != "" {
		signal.Ignore(syscall.SIGTERM)
		sleepForever()
	}
	os.Exit(run(os.Args[1:]))
}

// exit is a way to end with a status and a message on stderr.
type exit struct {
	code int
	msg  string
}

func (e *exit) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &exit{code: code, msg: fmt.Sprintf(format, args...)}
}

func run(args []string) int {
	err := play(args)
	var e *exit
	switch {
	case err == nil:
		return 0
	case errors.As(err, &e):
		if e.msg != "" {
			fmt.Fprintln(os.Stderr, e.msg)
		}
		return e.code
	default:
		fmt.Fprintln(os.Stderr, "fakeworker:", err)
		return 1
	}
}

func play(args []string) error {
	if err := checkHarness(); err != nil {
		return fail(97, "fakeworker: %v", err)
	}
	var (
		cli    dialect
		prompt string
		err    error
	)
	switch {
	case len(args) > 0 && args[0] == "exec":
		cli = &codex{thread: rand.Text()}
		prompt, err = parseCodex(args[1:])
	case slices.Contains(args, "-p") || slices.Contains(args, "--print"):
		c := &claude{session: rand.Text()}
		cli = c
		prompt, err = c.parse(args)
	case len(args) >= 1 && !slices.ContainsFunc(args[1:], func(a string) bool { return !strings.HasPrefix(a, "--") || !strings.Contains(a, "=") }):
		// A plain worker takes the prompt file, and the launch parameters
		// an exec command gives it as --KEY=VALUE.
		cli, prompt = plain{}, args[0]
	default:
		err = fail(2, "fakeworker: as a plain worker it takes the prompt file and --KEY=VALUE launch parameters, not %q", args)
	}
	if err != nil {
		return err
	}
	data, err := os.ReadFile(prompt)
	if err != nil {
		return err
	}
	p, err := engine.ParsePrompt(data)
	if err != nil {
		return fmt.Errorf("%s: %w", prompt, err)
	}
	job := filepath.Base(filepath.Dir(prompt))
	b, err := behaviour(job)
	if err != nil {
		return err
	}
	logLine("start", job)
	code, err := behave(b, job, p, cli)
	if err != nil {
		return err
	}
	logLine("end", job)
	if code != 0 {
		return &exit{code: code}
	}
	return nil
}

// checkHarness fails when the worker was started as a driver must not
// start one.
func checkHarness() error {
	if v, ok := os.LookupEnv("CLAUDECODE"); ok {
		return fmt.Errorf("CLAUDECODE=%s is set: a nested claude would take itself for a session inside another", v)
	}
	in, err := os.Stdin.Stat()
	if err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	null, err := os.Stat(os.DevNull)
	if err != nil {
		return err
	}
	if in.Mode()&os.ModeCharDevice == 0 || !os.SameFile(in, null) {
		return errors.New("stdin is not /dev/null: codex exec would wait for it for ever")
	}
	return nil
}

var instruction = regexp.MustCompile("^Read `(.+)` and follow it\\.$")

// promptOf returns the prompt file an instruction names.
func promptOf(text string) (string, error) {
	m := instruction.FindStringSubmatch(text)
	if m == nil {
		return "", fail(2, "fakeworker: the instruction is not \"Read `PROMPT FILE` and follow it.\": %q", text)
	}
	return m[1], nil
}

// behaviour returns what this launch of job does, from the script.
func behaviour(job string) (string, error) {
	script := os.Getenv("FAKEWORKER_SCRIPT")
	if script == "" {
		return "valid", nil
	}
	data, err := os.ReadFile(script)
	if err != nil {
		return "", err
	}
	var plan map[string][]string
	if err := json.Unmarshal(data, &plan); err != nil {
		return "", fmt.Errorf("%s: %w", script, err)
	}
	n, err := claimLaunch(script, job)
	if err != nil {
		return "", err
	}
	list := plan[job]
	if len(list) == 0 {
		return "valid", nil
	}
	return list[min(n, len(list))-1], nil
}

// claimLaunch numbers this launch of job: it creates the first of
// JOB.1, JOB.2, ... that does not exist in SCRIPT.launches/, which
// O_EXCL lets exactly one of several workers running at once create.
func claimLaunch(script, job string) (int, error) {
	dir := script + ".launches"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	for n := 1; ; n++ {
		f, err := os.OpenFile(filepath.Join(dir, job+"."+strconv.Itoa(n)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			return n, f.Close()
		}
		if !errors.Is(err, fs.ErrExist) {
			return 0, err
		}
	}
}

// logLine appends one line to FAKEWORKER_LOG, in one write, so that the
// lines of workers running at once do not mix.
func logLine(event, job string) {
	path := os.Getenv("FAKEWORKER_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeworker:", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s %d %d\n", event, job, time.Now().UnixNano(), os.Getpid())
}

// behave does what b says and returns the exit status.
func behave(b, job string, p engine.Prompt, cli dialect) (int, error) {
	valid := fmt.Sprintf("# %s\n\n- a point\n- another point\n", job)
	name, arg, _ := strings.Cut(b, ":")
	n, _ := strconv.Atoi(arg)
	switch {
	case b == "hang":
		sleepForever()
	case b == "spawn-and-hang":
		self, err := os.Executable()
		if err != nil {
			return 0, err
		}
		child := exec.Command(self)
		child.Env = append(os.Environ(), sleeperEnv+"=1")
		if err := child.Start(); err != nil {
			return 0, err
		}
		fmt.Fprintln(os.Stderr, "spawned", child.Process.Pid)
		sleepForever()
	case name == "slow" && arg != "":
		secs, _ := strconv.ParseFloat(arg, 64)
		time.Sleep(time.Duration(secs * float64(time.Second)))
		b = "valid"
	}
	cli.begin()
	switch {
	case b == "valid":
		return 0, finish(cli, p.Output, valid)
	case b == "checked":
		return 0, finish(cli, p.Output, valid+"\nChecked: yes\n")
	case b == "invalid":
		return 0, finish(cli, p.Output, "a line without a heading\n")
	case b == "problem":
		return 0, finish(cli, p.Problem, "# Problem\n\nThe input file cannot be read.\n")
	case b == "nothing":
		cli.finish("I wrote nothing.")
		return 0, nil
	case name == "say":
		// The reply is the worker's own text, which custodian keeps and
		// shows: a hostile worker's, for the pages' tests.
		if err := os.WriteFile(p.Output, []byte(valid), 0o644); err != nil {
			return 0, err
		}
		cli.finish(arg)
		return 0, nil
	case b == "hang-after-output":
		if err := os.WriteFile(p.Output, []byte(valid), 0o644); err != nil {
			return 0, err
		}
		sleepForever()
	case name == "exit" && arg != "":
		return n, nil
	case name == "usage-limit" && arg != "":
		cli.limit(time.Now().Add(time.Duration(n) * time.Second))
		return 1, nil
	}
	return 0, fail(2, "fakeworker: unknown behaviour %q", b)
}

// finish writes text to path and ends the turn naming it.
func finish(cli dialect, path, text string) error {
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	cli.finish("Wrote `" + path + "`.")
	return nil
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// dialect is how a CLI reports a turn.
type dialect interface {
	begin()                // the events before any work
	finish(message string) // a turn that ended with message
	limit(resets time.Time)
}

// emit prints one event as a JSON line.
func emit(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(append(data, '\n'))
}

type obj = map[string]any

// claude plays claude -p --output-format stream-json --verbose.
type claude struct {
	session string
	values  map[string][]string
}

func (c *claude) begin() {
	emit(obj{"type": "system", "subtype": "init", "session_id": c.session, "cwd": cwd(),
		"model": c.last("--model", "claude-sonnet-5"), "permissionMode": c.last("--permission-mode", "default"),
		"allowedTools": c.values["--allowedTools"], "claude_code_version": "2.1.197"})
	c.assistant("Working on it.", nil)
}

func (c *claude) finish(message string) {
	c.assistant(message, nil)
	emit(obj{"type": "result", "subtype": "success", "is_error": false, "api_error_status": nil,
		"result": message, "session_id": c.session})
}

func (c *claude) limit(resets time.Time) {
	text := "You've hit your session limit · resets " + claudeTime(resets)
	emit(obj{"type": "rate_limit_event", "rate_limit_info": obj{"status": "rejected", "resetsAt": resets.Unix(),
		"rateLimitType": "five_hour"}, "session_id": c.session})
	c.assistant(text, "rate_limit")
	emit(obj{"type": "result", "subtype": "success", "is_error": true, "api_error_status": 429,
		"result": text, "session_id": c.session})
}

func (c *claude) assistant(text string, errWord any) {
	ev := obj{"type": "assistant", "message": obj{"role": "assistant",
		"content": []obj{{"type": "text", "text": text}}}, "session_id": c.session}
	if errWord != nil {
		ev["error"] = errWord
	}
	emit(ev)
}

func (c *claude) last(name, fallback string) string {
	if v := c.values[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return fallback
}

// claudeTime renders a reset time as claude 2.1 does, in UTC.
func claudeTime(t time.Time) string {
	t = t.UTC()
	layout := "3:04pm"
	if t.Minute() == 0 {
		layout = "3pm"
	}
	if time.Until(t) > 24*time.Hour {
		layout = "Jan 2, " + layout
	}
	return t.Format(layout) + " (UTC)"
}

// codex plays codex exec --json.
type codex struct{ thread string }

func (c *codex) begin() {
	emit(obj{"type": "thread.started", "thread_id": c.thread})
	emit(obj{"type": "turn.started"})
}

func (c *codex) finish(message string) {
	emit(obj{"type": "item.completed", "item": obj{"id": "item_0", "type": "agent_message", "text": message}})
	emit(obj{"type": "turn.completed", "usage": obj{"input_tokens": 10, "output_tokens": 3}})
}

func (c *codex) limit(resets time.Time) {
	text := codexLimitText(resets)
	emit(obj{"type": "error", "message": text})
	emit(obj{"type": "turn.failed", "error": obj{"message": text}})
}

// codexLimitText is codex 0.171's usage-limit message, in UTC as the codex
// profile runs it.
func codexLimitText(resets time.Time) string {
	t, now := resets.UTC(), time.Now().UTC()
	at := t.Format("3:04 PM")
	if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
		at = t.Format("Jan ") + strconv.Itoa(t.Day()) + ordinal(t.Day()) + t.Format(", 2006 3:04 PM")
	}
	return "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit " +
		"https://chatgpt.com/settings/usage to purchase more credits or try again at " + at + "."
}

func ordinal(day int) string {
	switch {
	case day/10 == 1:
		return "th"
	case day%10 == 1:
		return "st"
	case day%10 == 2:
		return "nd"
	case day%10 == 3:
		return "rd"
	}
	return "th"
}

// plain is a worker of the exec profile: text on stdout, and codex's
// message, as codex prints it without --json, on stderr.
type plain struct{}

func (plain) begin()                 { fmt.Println("working") }
func (plain) finish(message string)  { fmt.Println(message) }
func (plain) limit(resets time.Time) { fmt.Fprintln(os.Stderr, "ERROR: "+codexLimitText(resets)) }

func cwd() string {
	dir, _ := os.Getwd()
	return dir
}
