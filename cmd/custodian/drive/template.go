package drive

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// template is the exec profile's --command: words, each a run of literal
// text and placeholders.
type template struct {
	words  [][]piece
	params []string // the launch parameters its {param:KEY} placeholders use
}

// piece is literal text, or a placeholder when name is set.
type piece struct {
	text string
	name string // instruction, prompt, job or param
	key  string // param's KEY
	// optional: {param:KEY?}, whose word is left out when the job has no
	// KEY; def, with hasDef: {param:KEY=DEFAULT}, which stands for KEY
	// when the job has none.
	optional bool
	def      string
	hasDef   bool
}

// placeholder matches what reads as a placeholder: a name in braces, with
// a key after a colon. Other braces ({}, a JSON object) are literal text; a
// name that is not a placeholder's is a mistake, refused.
var placeholder = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_-]*)(?::([^{}]*))?\}`)

// parseTemplate reads --command. It splits the command into words as a
// shell would, and finds the placeholders inside each word after that, so
// that a value put in their place always stays one argument. A program
// given by a relative path is taken from the directory drive runs in, not
// from the run directory the worker runs in.
func parseTemplate(command string) (*template, error) {
	words, err := splitWords(command)
	if err != nil {
		return nil, usage("--command %q is malformed: %v", command, err)
	}
	if len(words) == 0 || words[0] == "" {
		return nil, usage("--command names no program: give the program to run and its arguments, such as --command './worker {prompt}'")
	}
	if strings.Contains(words[0], "/") && !placeholder.MatchString(words[0]) {
		if words[0], err = filepath.Abs(words[0]); err != nil {
			return nil, err
		}
	}
	t := &template{}
	for _, w := range words {
		pieces, err := t.parseWord(w)
		if err != nil {
			return nil, err
		}
		t.words = append(t.words, pieces)
	}
	return t, nil
}

func (t *template) parseWord(w string) ([]piece, error) {
	var pieces []piece
	at := 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(w, -1) {
		if m[0] > at {
			pieces = append(pieces, piece{text: w[at:m[0]]})
		}
		p := piece{name: w[m[2]:m[3]]}
		hasKey := m[4] >= 0
		if hasKey {
			p.key = w[m[4]:m[5]]
		}
		if p.name == "param" {
			if key, def, ok := strings.Cut(p.key, "="); ok {
				p.key, p.def, p.hasDef = key, def, true
			} else if key, ok := strings.CutSuffix(p.key, "?"); ok {
				p.key, p.optional = key, true
			}
		}
		switch {
		case p.name == "param" && p.key == "":
			return nil, usage("--command's %s needs a key: {param:KEY} is replaced by the job's launch parameter KEY "+
				"({param:KEY?} leaves the argument out when the job has no KEY, {param:KEY=DEFAULT} gives DEFAULT)", w[m[0]:m[1]])
		case p.name == "param":
			t.params = append(t.params, p.key)
		case p.name != "instruction" && p.name != "prompt" && p.name != "job":
			return nil, usage("--command's %s is not a placeholder: use {instruction}, {prompt}, {job} or {param:KEY}", w[m[0]:m[1]])
		case hasKey:
			return nil, usage("--command's %s takes no key: write {%s}", w[m[0]:m[1]], p.name)
		}
		pieces = append(pieces, p)
		at = m[1]
	}
	if at < len(w) || len(pieces) == 0 {
		pieces = append(pieces, piece{text: w[at:]})
	}
	return pieces, nil
}

// args renders the command line for l. Every launch parameter must be used
// by a placeholder, and every placeholder's parameter must be given.
func (t *template) args(l launch) ([]string, error) {
	for _, key := range sortedKeys(l.params) {
		if !slices.Contains(t.params, key) {
			return nil, &LaunchError{Job: l.job, Param: key, Reason: fmt.Sprintf(
				"is used by no placeholder of --command: add {param:%s} where the worker takes it, or take it off the job", key)}
		}
	}
	args := make([]string, 0, len(t.words))
words:
	for _, pieces := range t.words {
		var b strings.Builder
		for _, p := range pieces {
			switch p.name {
			case "":
				b.WriteString(p.text)
			case "instruction":
				b.WriteString(Instruction(l.prompt))
			case "prompt":
				b.WriteString(l.prompt)
			case "job":
				b.WriteString(l.job)
			case "param":
				raw, ok := l.params[p.key]
				switch {
				case ok:
					b.WriteString(paramText(raw))
				case p.hasDef:
					b.WriteString(p.def)
				case p.optional:
					continue words // the argument is left out
				default:
					return nil, &LaunchError{Job: l.job, Param: p.key, Reason: fmt.Sprintf(
						"is missing: --command uses {param:%s}; give the job that launch parameter, "+
							"or change --command ({param:%s?} leaves the argument out, {param:%s=DEFAULT} gives a default)", p.key, p.key, p.key)}
				}
			}
		}
		args = append(args, b.String())
	}
	return args, nil
}

// paramText renders a launch parameter as a word: a string as its text,
// anything else as its JSON.
func paramText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return compact(raw)
}
