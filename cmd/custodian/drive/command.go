package drive

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Command is how one worker is started for one hand-out; Profile.Command
// builds it. Its command line and the names of its environment variables
// are evidence of the launch.
type Command struct {
	Job string // the job handed out
	// Args is the command line. Args[0], the program, is looked up when the
	// worker starts, on the PATH of Env: the worker's PATH says which
	// program it runs, not this process's.
	Args []string
	Dir  string   // the working directory: the run directory, absolute
	Env  []string // the worker's whole environment, KEY=VALUE
}

// EnvNames returns the names of the variables in the worker's environment,
// sorted. The evidence records these and never the values, which may hold
// credentials.
func (c *Command) EnvNames() []string {
	names := make([]string, 0, len(c.Env))
	for _, kv := range c.Env {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// scrubbed are the variables no worker inherits, whatever its profile: an
// exec worker may run claude or codex itself. Claude Code sets them in the
// shells it starts, and a claude started with them takes itself for a
// nested session (which some versions refuse to start), for a sub-agent,
// or for a part of a trace it is not in. The same goes for the variables
// codex sets for its tools (and every CODEX_SANDBOX* one).
var scrubbed = []string{
	"CLAUDECODE",
	"CLAUDE_CODE_ENTRYPOINT",
	"CLAUDE_CODE_SESSION_ID",
	"CLAUDE_CODE_CHILD_SESSION",
	"CLAUDE_CODE_EXECPATH",
	"CLAUDE_CODE_SSE_PORT",
	"AI_AGENT",
	"CLAUDE_EFFORT",
	"TRACEPARENT",
	"CODEX_THREAD_ID",
	"CODEX_SESSION_ID",
}

const scrubbedPrefix = "CODEX_SANDBOX"

// environ returns base without the variables named in unset (and those
// that begin with scrubbedPrefix), with set's KEY=VALUE pairs taking the
// place of any inherited value of their KEY.
func environ(base, unset, set []string) []string {
	drop := slices.Clone(unset)
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		drop = append(drop, name)
	}
	env := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, name) && !strings.HasPrefix(name, scrubbedPrefix) {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// lookPath finds program the way a shell would on the PATH in env. A
// program named with a slash is taken as it is. Relative entries of PATH
// are skipped, as os/exec refuses them: they would run a program that the
// run directory, which workers write, could supply.
func lookPath(program string, env []string) (string, error) {
	if strings.Contains(program, "/") {
		return program, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		file := filepath.Join(dir, program)
		if fi, err := os.Stat(file); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return file, nil
		}
	}
	return "", fmt.Errorf("%s is not on the worker's PATH: install it, or put its directory on PATH", program)
}

// StartError is a worker that could not be started: its program was not
// found, or could not be run. No process is left; the loop records the
// launch as failed-to-start.
type StartError struct {
	Job string
	Err error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("job %s: the worker did not start: %v", e.Job, e.Err)
}

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }
