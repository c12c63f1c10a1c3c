package engine

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Prompt is a prompt file: what a worker reads, whole, when it is told
// "Read `PROMPT FILE` and follow it." The engine writes one at every
// hand-out. Its frame (everything but Task) is not part of the input state.
// This file is the one place that writes the frame and reads it back.
type Prompt struct {
	// Task is the job's prompt, without trailing white space.
	Task string
	// Inputs are the absolute paths of the job's declared inputs, in the
	// order the definition declared them.
	Inputs []string
	// Missing are the inputs, among Inputs, that did not exist when the job
	// was handed out: the worker is told so rather than left to find out.
	Missing []string
	// Output is where the worker writes the result, absolute.
	Output string
	// Problem is where the worker writes why it could not finish, absolute.
	Problem string
	// Refusals say why the previous attempt was refused; empty on a first
	// attempt and after an acceptance.
	Refusals []string
}

// The lines of the frame. Paths are put between the backticks.
const (
	inputsHeading   = "## Inputs"
	whereHeading    = "## Where to write"
	refusedHeading  = "## Why the previous attempt was refused"
	writeResult     = "Write the result to `%s`."
	writeProblem    = "If you cannot finish the task, write why to `%s` instead."
	replyInOneLine  = "Reply in one line that names the file you wrote. Do not repeat or summarize its content."
	listItem        = "- "
	continuedItem   = "  "
	pathItemPattern = listItem + "`%s`"
	missingInput    = " (it did not exist when this job was handed out)"
)

// Text renders the prompt file: the task, then (when there are inputs)
// "## Inputs" with one line per input, then "## Where to write" with the
// output and problem paths and the request to reply in one line, and on a
// retry "## Why the previous attempt was refused" with one item per
// message. A message of several lines continues indented under its item,
// so that no line of it can pass for a heading of the frame.
func (p Prompt) Text() []byte {
	var b bytes.Buffer
	// Sized once: a step that hands out ten thousand jobs would otherwise
	// grow ten thousand buffers three or four times each.
	size := len(p.Task) + 2*len(p.Output) + 512
	for _, in := range p.Inputs {
		size += len(in) + len(missingInput) + 8
	}
	for _, m := range p.Refusals {
		size += 2 * len(m)
	}
	b.Grow(size)
	b.WriteString(strings.TrimRight(p.Task, " \t\r\n"))
	b.WriteString("\n\n")
	if len(p.Inputs) > 0 {
		b.WriteString(inputsHeading + "\n\n")
		for _, in := range p.Inputs {
			fmt.Fprintf(&b, pathItemPattern, in)
			if slices.Contains(p.Missing, in) {
				b.WriteString(missingInput)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(whereHeading + "\n\n")
	fmt.Fprintf(&b, writeResult+"\n", p.Output)
	fmt.Fprintf(&b, writeProblem+"\n\n", p.Problem)
	b.WriteString(replyInOneLine + "\n")
	if len(p.Refusals) > 0 {
		b.WriteString("\n" + refusedHeading + "\n\n")
		for _, m := range p.Refusals {
			b.WriteString(listItem + strings.ReplaceAll(m, "\n", "\n"+continuedItem) + "\n")
		}
	}
	return b.Bytes()
}

// ErrNotPrompt means a file is not a prompt file the engine wrote.
var ErrNotPrompt = errors.New("not a prompt file")

// ParsePrompt reads a prompt file back into its parts. The frame is found
// from the end, so a task that quotes the frame's headings does not
// mislead it about where to write. It fails with ErrNotPrompt when the
// file does not end with the frame.
func ParsePrompt(data []byte) (Prompt, error) {
	text := string(data)
	where := strings.LastIndex(text, "\n"+whereHeading+"\n\n")
	if where < 0 {
		return Prompt{}, fmt.Errorf("%w: it has no %q section", ErrNotPrompt, whereHeading)
	}
	head, frame := text[:where+1], text[where+1+len(whereHeading)+2:]
	var p Prompt
	lines := strings.Split(frame, "\n")
	if len(lines) < 5 {
		return Prompt{}, fmt.Errorf("%w: its %q section is cut short", ErrNotPrompt, whereHeading)
	}
	var ok1, ok2 bool
	p.Output, ok1 = between(lines[0], writeResult)
	p.Problem, ok2 = between(lines[1], writeProblem)
	if !ok1 || !ok2 || lines[2] != "" || lines[3] != replyInOneLine {
		return Prompt{}, fmt.Errorf("%w: its %q section does not name the output and problem paths", ErrNotPrompt, whereHeading)
	}
	rest := strings.Join(lines[4:], "\n")
	if rest != "" {
		refusals, err := parseRefusals(rest)
		if err != nil {
			return Prompt{}, err
		}
		p.Refusals = refusals
	}
	p.Task, p.Inputs, p.Missing = splitInputs(head)
	return p, nil
}

// parseRefusals reads what follows the request to reply in one line: nothing,
// or the refusal section.
func parseRefusals(rest string) ([]string, error) {
	body, ok := strings.CutPrefix(rest, "\n"+refusedHeading+"\n\n")
	if !ok || !strings.HasSuffix(body, "\n") {
		return nil, fmt.Errorf("%w: it goes on after the request to reply in one line", ErrNotPrompt)
	}
	var refusals []string
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if item, ok := strings.CutPrefix(line, listItem); ok {
			refusals = append(refusals, item)
			continue
		}
		more, ok := strings.CutPrefix(line, continuedItem)
		if !ok || len(refusals) == 0 {
			return nil, fmt.Errorf("%w: line %q of its refusals is not an item", ErrNotPrompt, line)
		}
		refusals[len(refusals)-1] += "\n" + more
	}
	return refusals, nil
}

// splitInputs splits what precedes the "Where to write" section into the
// task and the inputs list. head ends with the blank line before the
// section. When the task itself ends with something shaped like an inputs
// section and the job has none, the two cannot be told apart; the task is
// then read shorter, which changes no path.
func splitInputs(head string) (task string, inputs, missing []string) {
	task = strings.TrimSuffix(head, "\n\n")
	at := strings.LastIndex(head, "\n"+inputsHeading+"\n\n")
	if at < 0 {
		return task, nil, nil
	}
	list := strings.TrimSuffix(head[at+1+len(inputsHeading)+2:], "\n\n")
	for _, line := range strings.Split(list, "\n") {
		line, gone := strings.CutSuffix(line, missingInput)
		in, ok := between(line, pathItemPattern)
		if !ok {
			return task, nil, nil
		}
		inputs = append(inputs, in)
		if gone {
			missing = append(missing, in)
		}
	}
	return strings.TrimSuffix(head[:at+1], "\n\n"), inputs, missing
}

// between cuts the %s out of a line made by fmt.Sprintf(pattern, s).
func between(line, pattern string) (string, bool) {
	prefix, suffix, _ := strings.Cut(pattern, "%s")
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, suffix)
}

// promptText is the prompt file of a job's hand-out.
func promptText(r *replay, n *named) []byte {
	p := Prompt{
		Task:    n.spec.job.Prompt,
		Output:  r.abs(n.spec.output),
		Problem: r.abs(n.spec.problem),
	}
	gone := map[string]bool{}
	for _, f := range n.current.Files {
		gone[f.Path] = f.SHA256 == ""
	}
	for _, in := range n.spec.listed {
		p.Inputs = append(p.Inputs, inputPath(r.dir, in))
		if gone[in] {
			p.Missing = append(p.Missing, inputPath(r.dir, in))
		}
	}
	if t := n.js.Trouble; t != nil && t.Failures > 0 {
		p.Refusals = t.Messages
	}
	return p.Text()
}

func inputPath(runDir, key string) string {
	if filepath.IsAbs(filepath.FromSlash(key)) {
		return filepath.FromSlash(key)
	}
	return filepath.Join(runDir, filepath.FromSlash(key))
}
