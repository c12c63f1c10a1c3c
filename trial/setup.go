package trial

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// holdBegins bounds how long Setup waits for the background step of the
// busy scenario to take the lock and begin its hold.
const holdBegins = 30 * time.Second

// sourceText is the text the trial's two lenses analyse, written to source.md.
const sourceText = `Teams that keep decision records make better decisions. A decision record
states the problem, the options that were considered and the reason one was
chosen, so a newcomer can see why the system is the way it is without asking
the people who built it, most of whom have moved on. Writing a record takes
an hour, and an hour is nothing next to the weeks a team loses when it
reverses a decision whose reasons it has forgotten. The records only help if
they are kept beside the code, because a wiki page is never read, and if
every significant change has one, because a record that is sometimes missing
is not trusted. Teams that adopt them therefore stop repeating old debates.
`

// notesText is what the problem scenario puts at incoming/notes.md, where the
// notes job, which reads notes.md, will not find it.
const notesText = `# Notes from the review meeting

- The examples of decision records come from two teams only.
- Nobody measured how long a reversed decision costs.
- One reviewer asked who decides what counts as a significant change.
`

// SetupOptions says what run Setup makes.
type SetupOptions struct {
	// Scenario is the course the run takes, one of Scenarios.
	Scenario string
	// Dir is the run directory; it must not exist or be empty. Empty means
	// a new directory runs/run-<12 hex digits> under the working directory,
	// a name that never contains a scenario's, so that the name tells an
	// agent orchestrator nothing about the course ahead.
	Dir string
	// Launch holds the launch parameters that the parameters scenario gives
	// the claims job. Other scenarios take none.
	Launch map[string]string
	// Hold is how many seconds the busy scenario's background step holds
	// the run's lock; zero means DefaultHold. Other scenarios take none.
	Hold int
	// Binary is the custodian binary that the busy scenario runs
	// `step RUN` with, in the background.
	Binary string
}

// Setup creates a run of the trial definition in reg for a scenario, and
// returns its absolute directory. It writes source.md and what the scenario
// needs, and starts the run:
//
//   - problem: the notes are put at incoming/notes.md, not notes.md, where
//     the notes job looks for them.
//   - parameters: the run's parameter launch is the JSON object of Launch.
//   - uncertain: the marker <run>.interrupt makes the publish effect end
//     the process halfway.
//   - busy: the marker <run>.hold makes the next step hold the lock for
//     Hold seconds. Setup starts that step in the background, in its own
//     process group, with its output going to <run>.hold.log, and returns
//     once the hold has begun, so that the next step is refused as busy.
func Setup(reg *workflow.Registry, opts SetupOptions) (string, error) {
	if err := opts.check(); err != nil {
		return "", err
	}
	if _, err := reg.Lookup(DefinitionName); err != nil {
		return "", err
	}
	dir, err := setupDir(opts.Dir)
	if err != nil {
		return "", err
	}
	params := workflow.Params{"scenario": opts.Scenario}
	files := map[string]string{"source.md": sourceText}
	switch opts.Scenario {
	case "problem":
		files["incoming/notes.md"] = notesText
	case "parameters":
		launch := opts.Launch
		if launch == nil {
			launch = map[string]string{}
		}
		data, err := json.Marshal(launch)
		if err != nil {
			return "", err
		}
		params["launch"] = string(data)
	case "busy":
		params["hold"] = strconv.Itoa(cmp.Or(opts.Hold, DefaultHold))
	}
	for rel, text := range files {
		if err := writeSetupFile(filepath.Join(dir, filepath.FromSlash(rel)), text); err != nil {
			return "", err
		}
	}
	o, err := engine.Start(reg, DefinitionName, dir, params)
	if err != nil {
		return "", err
	}
	o.Close()
	switch opts.Scenario {
	case "uncertain":
		err = writeSetupFile(InterruptMarker(o.Dir()), "")
	case "busy":
		err = startHold(opts.Binary, o.Dir())
	}
	if err != nil {
		return "", err
	}
	return o.Dir(), nil
}

func (opts SetupOptions) check() error {
	switch {
	case !slices.Contains(Scenarios, opts.Scenario):
		return &engine.RefusedError{
			Reason: fmt.Sprintf("trial setup: %q is not a scenario of the trial definition", opts.Scenario),
			Hint:   "the scenarios are: " + strings.Join(Scenarios, ", "),
		}
	case len(opts.Launch) > 0 && opts.Scenario != "parameters":
		return &engine.RefusedError{
			Reason: fmt.Sprintf("trial setup: scenario %s takes no launch parameters", opts.Scenario),
			Hint:   "launch parameters are for the parameters scenario",
		}
	case opts.Hold != 0 && opts.Scenario != "busy":
		return &engine.RefusedError{
			Reason: fmt.Sprintf("trial setup: scenario %s holds no lock", opts.Scenario),
			Hint:   "a hold is for the busy scenario",
		}
	case opts.Hold < 0:
		return &engine.RefusedError{Reason: fmt.Sprintf("trial setup: a hold of %d seconds", opts.Hold), Hint: "give a hold of one second or more"}
	case opts.Scenario == "busy" && opts.Binary == "":
		return errors.New("trial setup: the busy scenario needs the custodian binary to run a step in the background")
	}
	return nil
}

// setupDir returns the absolute run directory, made or checked: a given one
// must not exist or be empty; otherwise a new one gets a random name.
func setupDir(dir string) (string, error) {
	if dir == "" {
		return newSetupDir()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("trial setup: %w", err)
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return "", fmt.Errorf("trial setup: %w", err)
		}
		return abs, nil
	case err != nil:
		return "", fmt.Errorf("trial setup: %w", err)
	case len(entries) == 0:
		return abs, nil
	}
	if _, err := os.Stat(filepath.Join(abs, engine.StateDir, "run.json")); err == nil {
		return "", fmt.Errorf("trial setup %s: %w", abs, engine.ErrExists)
	}
	return "", &engine.RefusedError{
		Reason: fmt.Sprintf("trial setup: %s is not empty", abs),
		Hint:   "give --run a new or empty directory, or leave it out for a fresh one under runs/",
	}
}

// newSetupDir makes runs/run-<12 hex digits> under the working directory.
func newSetupDir() (string, error) {
	if err := os.MkdirAll("runs", 0o755); err != nil {
		return "", fmt.Errorf("trial setup: %w", err)
	}
	for {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("trial setup: %w", err)
		}
		name := "run-" + hex.EncodeToString(b[:])
		if slices.ContainsFunc(Scenarios, func(s string) bool { return strings.Contains(name, s) }) {
			continue
		}
		dir := filepath.Join("runs", name)
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("trial setup: %w", err)
		}
		return filepath.Abs(dir)
	}
}

// startHold starts `binary step dir` in the background with the marker
// <dir>.hold in place, and returns once the step has removed the marker:
// it then holds the run's lock. A goroutine waits for the step, so that it
// is reaped when it ends.
func startHold(binary, dir string) error {
	marker, logPath := HoldMarker(dir), HoldLog(dir)
	if err := writeSetupFile(marker, ""); err != nil {
		return err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("trial setup: %w", err)
	}
	cmd := exec.Command(binary, "step", dir)
	cmd.Stdout, cmd.Stderr = log, log
	detachHold(cmd)
	err = cmd.Start()
	log.Close()
	if err != nil {
		return fmt.Errorf("trial setup: start the holding step: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(holdBegins)
	for {
		if _, err := os.Stat(marker); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		select {
		case err := <-ended:
			if _, statErr := os.Stat(marker); errors.Is(statErr, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("trial setup: the holding step ended before its hold began (%v); its output is in %s", err, logPath)
		case <-timeout:
			_ = cmd.Process.Kill()
			return fmt.Errorf("trial setup: the holding step did not begin its hold within %v, and was ended; its output is in %s", holdBegins, logPath)
		case <-tick.C:
		}
	}
}

func writeSetupFile(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("trial setup: %w", err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("trial setup: %w", err)
	}
	return nil
}
