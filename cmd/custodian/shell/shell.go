// Package shell is custodian's command line: it parses arguments, calls the
// engine in package workflow, prints what the engine decided and maps every
// error to one exit code. It decides nothing itself.
//
// The custodian binary runs it with the built-in definitions. An author who
// writes definitions of their own builds a binary that runs the same shell
// with their own registry:
//
//	func main() {
//		reg, err := workflow.NewRegistry(review.Definition)
//		if err != nil {
//			log.Fatal(err)
//		}
//		os.Exit(shell.Main(reg, os.Args, os.Stdout, os.Stderr))
//	}
package shell

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
	"github.com/urfave/cli/v2"
)

// name prefixes every message, whatever the binary is called.
const name = "custodian"

// memoryLimit is the process's soft memory limit (debug.SetMemoryLimit)
// unless GOMEMLIMIT gives one.
const memoryLimit = 56 << 20

// New returns the command-line application for the definitions in reg. Its
// commands write their output to stdout and nothing else; an error is
// returned from Run, never printed and never turned into os.Exit, so that
// the caller (Main) maps it to an exit code in one place. extra are the
// commands another binary adds to the shell (custodian-temporal's); one
// named as a command of the shell takes its place.
func New(reg *workflow.Registry, stdout, stderr io.Writer, extra ...*cli.Command) *cli.App {
	app := &cli.App{
		Name:      name,
		HelpName:  name,
		Usage:     "run code-scheduled workflows of AI agents",
		UsageText: name + " COMMAND [arguments]",
		Version:   engine.Version,
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			startCommand(reg),
			stepCommand(reg),
			reportCommand(reg),
			releaseCommand(reg),
			resolveCommand(reg),
			decideCommand(reg),
			abandonCommand(reg),
			checkCommand(reg),
			driveCommand(reg),
			statusCommand(reg),
			logCommand(reg),
			graphCommand(reg),
			viewCommand(reg),
			serveCommand(reg),
			runsCommand(reg),
			trialCommand(reg),
			definitionsCommand(reg),
			versionCommand(),
		},
		// A --param or --launch value is one KEY=VALUE, commas and all.
		DisableSliceFlagSeparator: true,
		HideHelpCommand:           true,
		// Without an Action, urfave/cli answers an unknown command with its
		// help and exit status 3, which means busy here.
		Action:         unknownCommand,
		OnUsageError:   flagError,
		ExitErrHandler: func(*cli.Context, error) {},
	}
	for _, cmd := range extra {
		if i := slices.IndexFunc(app.Commands, func(c *cli.Command) bool { return c.Name == cmd.Name }); i >= 0 {
			app.Commands[i] = cmd
			continue
		}
		app.Commands = append(app.Commands, cmd)
	}
	for _, cmd := range app.Commands {
		configure(cmd, name)
	}
	return app
}

// configure gives cmd and its subcommands the shell's handling of malformed
// arguments: a flag error is a usage error, and there is no help command
// that would take the place of a positional argument. Its usage line is the
// one the docs give, flags last, which urfave/cli would print flags first.
func configure(cmd *cli.Command, parent string) {
	cmd.OnUsageError = flagError
	cmd.HideHelpCommand = true
	cmd.UsageText = strings.TrimSpace(parent + " " + cmd.Name + " " + cmd.ArgsUsage)
	for _, sub := range cmd.Subcommands {
		configure(sub, parent+" "+cmd.Name)
	}
}

// Main runs the command line args (args[0] is the program) and returns the
// exit status. It is the one place that maps errors to exit codes and prints
// them, as "custodian: <what happened>" and, where it helps,
// "custodian: hint: <what to do>".
func Main(reg *workflow.Registry, args []string, stdout, stderr io.Writer, extra ...*cli.Command) (code int) {
	defer func() {
		// The definition's own panics are caught where it runs; one that
		// gets here is the engine's, and must not read as a usage error,
		// which is what Go's own exit status for a panic means here.
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "%s: internal error: %v\n", name, v)
			fmt.Fprintf(stderr, "%s: hint: this is a defect in custodian; give this message to the operator\n", name)
			code = engine.ExitFailed
		}
	}()
	if os.Getenv("GOMEMLIMIT") == "" {
		// A step of ten thousand jobs keeps its prompts and records until
		// it commits; a soft bound makes the collector work as the heap
		// nears it rather than at twice what is live, so that such a step
		// stays under 64 MiB. GOMEMLIMIT raises it for a definition that
		// keeps more.
		debug.SetMemoryLimit(memoryLimit)
	}
	err := New(reg, stdout, stderr, extra...).Run(args)
	if err == nil {
		return engine.ExitOK
	}
	var status ExitStatus
	if errors.As(err, &status) {
		return int(status)
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, err)
	if h := engine.Hint(err); h != "" {
		fmt.Fprintf(stderr, "%s: hint: %s\n", name, h)
	}
	return engine.ExitCode(err)
}

// Usagef returns a usage error of the command c, with its usage as the
// hint, for a command another binary adds.
func Usagef(c *cli.Context, format string, args ...any) error { return usagef(c, format, args...) }

// WithRun is the action of a command on a run, RUN first and its flags
// anywhere, for a command another binary adds: parse reads the flags and
// the operands after RUN and returns what to do with the open run.
func WithRun(reg *workflow.Registry, parse func(c *cli.Context, args []string) (func(*engine.Run) error, error)) cli.ActionFunc {
	return withRun(reg, nil, parse)
}

// usagef returns a usage error of the command c, with its usage as the hint.
func usagef(c *cli.Context, format string, args ...any) error {
	return &engine.UsageError{Message: subject(c) + fmt.Sprintf(format, args...), Hint: usage(c)}
}

// subject is "step: " for a message about the step command, and nothing for
// the command line as a whole.
func subject(c *cli.Context) string {
	if c.Command == nil || c.Command.HelpName == "" || c.Command.HelpName == c.App.HelpName {
		return ""
	}
	return strings.TrimPrefix(c.Command.HelpName, c.App.HelpName+" ") + ": "
}

// usage is the hint of a usage error: the command's usage line.
func usage(c *cli.Context) string {
	if subject(c) == "" {
		return name + " --help lists the commands"
	}
	return "usage: " + c.Command.UsageText
}

// flagError is every command's OnUsageError: urfave/cli's own message for a
// flag it could not parse, as a usage error.
func flagError(c *cli.Context, err error, _ bool) error {
	return usagef(c, "%v", err)
}

// unknownCommand is the action of a command that only groups subcommands:
// the app itself, and trial.
func unknownCommand(c *cli.Context) error {
	if !c.Args().Present() {
		return usagef(c, "no command given")
	}
	return usagef(c, "unknown command %q", c.Args().First())
}

// withArgs returns an action that takes exactly the positional arguments
// names, calls fn with them, and parses the flags that follow them. A last
// name that ends in "..." takes any number of arguments, none included.
//
// urfave/cli/v2 parses flags only before the first positional argument, and
// leaves "custodian step RUN --json" with "--json" as a second argument;
// the command line in the docs puts flags last. So withArgs parses what
// follows: each flag is looked up among the command's own flags and set on
// the context, as if it had come first.
func withArgs(names []string, fn func(c *cli.Context, args []string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		args, err := operands(c)
		if err != nil {
			return err
		}
		if c.Bool("help") {
			return cli.ShowCommandHelp(c.Lineage()[1], c.Command.Name)
		}
		required, more := len(names), false
		if required > 0 && strings.HasSuffix(names[required-1], "...") {
			required, more = required-1, true
		}
		switch {
		case len(args) < required:
			return usagef(c, "missing %s", strings.Join(names[len(args):required], " "))
		case len(args) > required && !more:
			return usagef(c, "unexpected argument %q", args[required])
		}
		return fn(c, args)
	}
}

// withRun is withArgs for a command whose first argument is a run, RUN,
// followed by names: parse reads the command line and returns what to do
// with the run, which is opened only then, so that a malformed command
// line is one whatever the path names, and closed after.
func withRun(reg *workflow.Registry, names []string, parse func(c *cli.Context, args []string) (func(*engine.Run) error, error)) cli.ActionFunc {
	return withArgs(append([]string{"RUN"}, names...), func(c *cli.Context, args []string) error {
		act, err := parse(c, args[1:])
		if err != nil {
			return err
		}
		o, err := engine.Open(reg, args[0])
		if err != nil {
			return err
		}
		defer o.Close()
		return act(o)
	})
}

// printJSON prints v as one line of JSON, as every --json does.
func printJSON(c *cli.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s\n", data)
	return err
}

// operands sets the flags among c's arguments and returns the rest, in
// order. A "--" ends the flags.
func operands(c *cli.Context) ([]string, error) {
	var args []string
	rest := c.Args().Slice()
	for i := 0; i < len(rest); i++ {
		arg := rest[i]
		if arg == "--" {
			return append(args, rest[i+1:]...), nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			args = append(args, arg)
			continue
		}
		flagName, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		f := lookupFlag(c.Command.Flags, flagName)
		if f == nil {
			return nil, usagef(c, "flag provided but not defined: %s", arg)
		}
		switch {
		case hasValue:
		case takesValue(f):
			if i+1 == len(rest) {
				return nil, usagef(c, "flag needs an argument: %s", arg)
			}
			i++
			value = rest[i]
		default:
			value = "true"
		}
		// By its first name: urfave/cli keeps a value for each of a flag's
		// names, and the commands read the first.
		if err := c.Set(f.Names()[0], value); err != nil {
			return nil, usagef(c, "invalid value %q for flag %s: %v", value, arg, err)
		}
	}
	return args, nil
}

func lookupFlag(flags []cli.Flag, flagName string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == flagName {
				return f
			}
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	v, ok := f.(cli.DocGenerationFlag)
	return ok && v.TakesValue()
}

// pairs parses KEY=VALUE arguments of the flag flagName. A key may be given
// once.
func pairs(c *cli.Context, flagName string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range c.StringSlice(flagName) {
		key, value, ok := strings.Cut(p, "=")
		if !ok || key == "" {
			return nil, usagef(c, "--%s %q is not KEY=VALUE", flagName, p)
		}
		if !utf8.ValidString(p) {
			return nil, notUTF8(c, flagName, p)
		}
		if _, dup := out[key]; dup {
			return nil, usagef(c, "--%s %s is given twice", flagName, key)
		}
		out[key] = value
	}
	return out, nil
}

// text returns the value of the flag flagName, which must be UTF-8: a value
// that is not would be stored with its bad bytes replaced, and a harness
// would act on text nobody gave.
func text(c *cli.Context, flagName string) (string, error) {
	v := c.String(flagName)
	if !utf8.ValidString(v) {
		return "", notUTF8(c, flagName, v)
	}
	return v, nil
}

func notUTF8(c *cli.Context, flagName, value string) error {
	return &engine.UsageError{
		Message: subject(c) + fmt.Sprintf("--%s %q is not UTF-8 text", flagName, value),
		Hint:    "give the value as UTF-8; custodian keeps text as it is given and will not replace bytes it cannot read",
	}
}
