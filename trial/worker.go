package trial

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/custodian-run/custodian/workflow/engine"
)

// ErrNotAPrompt means a path is not the prompt file of a hand-out:
// RUN/.custodian/jobs/JOB/prompt-N.md.
var ErrNotAPrompt = errors.New("not a prompt file of a run")

// PromptOf is where a prompt file lies: the run, the job it was handed out
// to, and the attempt it is.
type PromptOf struct {
	Run     string
	Job     string
	Attempt int
}

// LocatePrompt says whose prompt file path is, from the path alone:
// RUN/.custodian/jobs/JOB/prompt-N.md.
func LocatePrompt(path string) (PromptOf, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return PromptOf{}, err
	}
	jobDir, file := filepath.Split(abs)
	jobDir = filepath.Clean(jobDir)
	jobs := filepath.Dir(jobDir)
	state := filepath.Dir(jobs)
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(file, "prompt-"), ".md"))
	if err != nil || n < 1 || !strings.HasPrefix(file, "prompt-") || !strings.HasSuffix(file, ".md") ||
		filepath.Base(jobs) != "jobs" || filepath.Base(state) != ".custodian" {
		return PromptOf{}, fmt.Errorf("%s: %w: the scripted worker is given RUN/.custodian/jobs/JOB/prompt-N.md", path, ErrNotAPrompt)
	}
	return PromptOf{Run: filepath.Dir(state), Job: filepath.Base(jobDir), Attempt: n}, nil
}

// Work is the scripted worker of a trial run: what `custodian trial worker
// PROMPT` does when custodian drive launches it. It reads its prompt file,
// as any worker does, to learn where to write, and does what the
// scenario's script (ScenarioScript) says for that attempt of its job. It
// returns what it did, in one line, for its output; the driver keeps that
// as evidence and believes none of it. A launch the script fails is an
// error.
func Work(prompt PromptOf, path, scenario string) (string, error) {
	script := ScenarioScript(scenario)
	behave := script.behaviour(prompt.Job, prompt.Attempt)
	h, err := followPrompt(engine.Handout{Name: prompt.Job, Attempt: prompt.Attempt, Prompt: path})
	if err != nil {
		return "", err
	}
	if err := behave(h); err != nil {
		return "", err
	}
	d := &drive{Agent: &Agent{RunDir: prompt.Run}}
	return d.reply(h), nil
}
