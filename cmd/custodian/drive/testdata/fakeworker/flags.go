package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// arity is what an option takes after it.
type arity int

const (
	none     arity = iota // a switch
	one                   // one value: <value>
	optional              // commander's [value]
	many                  // commander's <values...>, clap's <FILE>...
)

// option is one option of a CLI.
type option struct {
	names   []string // names[0], the long name, keeps its values
	arity   arity
	choices []string
}

func opt(names string, a arity, choices ...string) option {
	return option{names: strings.Fields(names), arity: a, choices: choices}
}

// byName indexes options by each of their names.
func byName(list ...option) map[string]option {
	m := map[string]option{}
	for _, o := range list {
		for _, n := range o.names {
			m[n] = o
		}
	}
	return m
}

// claudeOptions are claude-code 2.1.197's, from `claude --help`.
var claudeOptions = byName(
	opt("--add-dir", many), opt("--agent", one), opt("--agents", one),
	opt("--allow-dangerously-skip-permissions", none),
	opt("--allowedTools --allowed-tools", many), opt("--append-system-prompt", one),
	opt("--ax-screen-reader", none), opt("--bg --background", none), opt("--bare", none),
	opt("--betas", many), opt("--brief", none), opt("--chrome", none), opt("--continue -c", none),
	opt("--dangerously-skip-permissions", none), opt("--debug -d", optional), opt("--debug-file", one),
	opt("--disable-slash-commands", none), opt("--disallowedTools --disallowed-tools", many),
	opt("--effort", one), opt("--exclude-dynamic-system-prompt-sections", none),
	opt("--fallback-model", one), opt("--file", many), opt("--fork-session", none),
	opt("--from-pr", optional), opt("--help -h", none), opt("--ide", none),
	opt("--include-hook-events", none), opt("--include-partial-messages", none),
	opt("--input-format", one, "text", "stream-json"), opt("--json-schema", one),
	opt("--max-budget-usd", one), opt("--mcp-config", many), opt("--model", one),
	opt("--name -n", one), opt("--no-chrome", none), opt("--no-session-persistence", none),
	opt("--output-format", one, "text", "json", "stream-json"),
	opt("--permission-mode", one, "acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"),
	opt("--plugin-dir", one), opt("--plugin-url", one), opt("--print -p", none),
	opt("--prompt-suggestions", optional), opt("--remote-control", optional),
	opt("--remote-control-session-name-prefix", one), opt("--replay-user-messages", none),
	opt("--resume -r", optional), opt("--safe-mode", none), opt("--session-id", one),
	opt("--setting-sources", one), opt("--settings", one), opt("--strict-mcp-config", none),
	opt("--system-prompt", one), opt("--tmux", optional), opt("--tools", many),
	opt("--verbose", none), opt("--version -v", none), opt("--worktree -w", optional),
)

// codexOptions are codex-cli 0.171.0's for exec, from `codex exec --help`.
var codexOptions = byName(
	opt("--config -c", one), opt("--enable", one), opt("--disable", one), opt("--remote", one),
	opt("--remote-auth-token-env", one), opt("--strict-config", none), opt("--image -i", many),
	opt("--model -m", one), opt("--oss", none), opt("--local-provider", one), opt("--profile -p", one),
	opt("--sandbox -s", one, "read-only", "workspace-write", "danger-full-access"),
	opt("--approve-for-me", none), opt("--dangerously-bypass-approvals-and-sandbox", none),
	opt("--dangerously-bypass-hook-trust", none), opt("--cd -C", one), opt("--worktree", none),
	opt("--add-dir", one), opt("--thread-source", one),
	opt("--cyber-access-program", one, "standard", "daybreak_blue", "daybreak_red"),
	opt("--skip-git-repo-check", none), opt("--trust", none), opt("--ephemeral", none),
	opt("--ignore-user-config", none), opt("--ignore-rules", none), opt("--output-schema", one),
	opt("--color", one, "always", "never", "auto"), opt("--json", none),
	opt("--output-last-message -o", one), opt("--help -h", none), opt("--version -V", none),
)

// parse reads claude's arguments as commander does: --name=value or
// --name value; an option of many values takes every argument after it up
// to the next that begins with a dash, unless given in the = form. It
// returns the prompt file of the instruction after --.
func (c *claude) parse(args []string) (string, error) {
	c.values = map[string][]string{}
	taking := "" // the option of many values that takes the next arguments
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return c.check(args[i+1:])
		}
		if taking != "" && !strings.HasPrefix(a, "-") {
			c.values[taking] = append(c.values[taking], a)
			continue
		}
		taking = ""
		if !strings.HasPrefix(a, "-") || a == "-" {
			return "", fail(2, "fakeworker: %q comes before --: the instruction must follow --, where no option can take it", a)
		}
		name, value, inline := a, "", false
		if strings.HasPrefix(a, "--") {
			name, value, inline = strings.Cut(a, "=")
		}
		o, ok := claudeOptions[name]
		if !ok || (inline && o.arity == none) {
			return "", fail(2, "error: unknown option '%s'", a)
		}
		switch {
		case o.arity == none:
			value = "true"
		case inline:
		case o.arity == optional:
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				value = args[i]
			}
		case i+1 == len(args) || (o.arity == many && strings.HasPrefix(args[i+1], "-")):
			return "", fail(2, "error: option '%s' argument missing", name)
		default:
			i++
			value = args[i]
		}
		if o.choices != nil && !slices.Contains(o.choices, value) {
			return "", fail(2, "error: option '%s' argument '%s' is invalid. Allowed choices are %s.", name, value, strings.Join(o.choices, ", "))
		}
		if o.arity == many && !inline {
			taking = o.names[0]
		}
		c.values[o.names[0]] = append(c.values[o.names[0]], value)
	}
	return "", fail(2, "fakeworker: no instruction: give it after --")
}

// check holds claude's own rules for -p, and the fake's: it plays only
// stream-json, and takes the instruction after -- alone.
func (c *claude) check(rest []string) (string, error) {
	if c.last("--output-format", "text") != "stream-json" {
		return "", fail(2, "fakeworker: it plays only --output-format stream-json")
	}
	if c.values["--verbose"] == nil {
		return "", fail(1, "Error: When using --print, --output-format=stream-json requires --verbose")
	}
	if e := c.last("--effort", "high"); !slices.Contains([]string{"low", "medium", "high", "xhigh", "max"}, e) {
		os.Stderr.WriteString("Warning: Unknown --effort value '" + e + "' — ignoring it and using the default effort. Valid values: low, medium, high, xhigh, max.\n")
	}
	if len(rest) != 1 {
		return "", fail(2, "fakeworker: it takes one instruction after --, not %d arguments", len(rest))
	}
	return promptOf(rest[0])
}

// parseCodex reads codex exec's arguments as clap does: --name=value,
// --name value, -xvalue, -x=value or -x value; a value may not begin with
// a dash. It returns the prompt file of the instruction after --.
func parseCodex(args []string) (string, error) {
	values := map[string][]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return checkCodex(values, args[i+1:])
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return "", fail(2, "fakeworker: %q comes before --: the instruction must follow --", a)
		}
		name, value, inline := a, "", false
		if strings.HasPrefix(a, "--") {
			name, value, inline = strings.Cut(a, "=")
		} else if len(a) > 2 {
			name, value, inline = a[:2], strings.TrimPrefix(a[2:], "="), true
		}
		o, ok := codexOptions[name]
		switch {
		case !ok:
			return "", fail(2, "error: unexpected argument '%s' found", a)
		case o.arity == none && inline:
			return "", fail(2, "error: unexpected value '%s' for '%s' found; no more were expected", value, name)
		case o.arity == none:
			value = "true"
		case inline:
		case i+1 == len(args) || strings.HasPrefix(args[i+1], "-"):
			return "", fail(2, "error: a value is required for '%s' but none was supplied", name)
		default:
			i++
			value = args[i]
		}
		if o.choices != nil && !slices.Contains(o.choices, value) {
			return "", fail(2, "error: invalid value '%s' for '%s'", value, name)
		}
		values[o.names[0]] = append(values[o.names[0]], value)
	}
	return "", fail(2, "fakeworker: no instruction: give it after --")
}

// checkCodex holds codex exec's own rules, and the fake's: it plays only
// --json, and takes the instruction after -- alone.
func checkCodex(values map[string][]string, rest []string) (string, error) {
	if values["--json"] == nil {
		return "", fail(2, "fakeworker: it plays only --json")
	}
	dir, _ := os.Getwd()
	if cd := values["--cd"]; len(cd) > 0 {
		dir = cd[len(cd)-1]
	}
	if values["--skip-git-repo-check"] == nil && !inGitRepo(dir) {
		return "", fail(1, "Not inside a trusted directory and --skip-git-repo-check was not specified.")
	}
	if len(rest) != 1 {
		return "", fail(2, "fakeworker: it takes one instruction after --, not %d arguments", len(rest))
	}
	return promptOf(rest[0])
}

func inGitRepo(dir string) bool {
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}
