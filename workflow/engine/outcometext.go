package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// The text of an outcome is what `custodian step` prints, and what an agent
// orchestrator reads: the outcome word on the first line, then one item per
// job, block or effect, each a "- " line followed by indented "key: value"
// lines. This file is the one place that writes it and reads it back.

// The fixed words of the text.
const (
	itemLead           = "- "
	fieldLead          = "  "
	fieldSeparator     = ": "
	launchParams       = " launch="
	noLaunchParameters = "{}"
	alsoLead           = "also "
	recordField        = "record"
	permittedField     = "permitted"
	permittedRepair    = "repair within this scope: "
	permittedStop      = "stop and report to the operator"
	permittedUncertain = "stop and report to the operator; the operator establishes what took place"
)

// WriteText writes the outcome as step prints it. It points at records and
// never repeats a validator's message.
func (o Outcome) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintln(&b, o.Kind)
	switch o.Kind {
	case KindLaunch:
		for _, j := range o.Jobs {
			fmt.Fprintf(&b, "%s%s: `%s`", itemLead, j.Name, j.Prompt)
			if l := string(j.Launch); l != "" && l != noLaunchParameters {
				fmt.Fprintf(&b, "%s%s", launchParams, l)
			}
			fmt.Fprintln(&b)
		}
	case KindBlocked:
		for _, blk := range o.Blocks {
			writeBlockText(&b, "", blk)
			if blk.Permitted == PermitRepair {
				writeField(&b, permittedField, permittedRepair+blk.Scope)
			} else {
				writeField(&b, permittedField, permittedStop)
			}
		}
	case KindUncertain:
		for _, e := range o.Effects {
			fmt.Fprintf(&b, "%s%s: %s\n", itemLead, EffectSubject(e.Name), OneLine(e.Detail))
			writeField(&b, recordField, e.Record)
			writeField(&b, permittedField, permittedUncertain)
		}
		for _, blk := range o.Blocks {
			writeBlockText(&b, alsoLead, blk)
		}
	case KindDone:
	default:
		return fmt.Errorf("an outcome %q has no text", o.Kind)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeBlockText(b *strings.Builder, lead string, blk Block) {
	fmt.Fprintf(b, "%s%s%s: %s\n", itemLead, lead, blk.Subject, OneLine(blk.Reason))
	writeField(b, recordField, blk.Record)
}

func writeField(b *strings.Builder, key, value string) {
	fmt.Fprintf(b, "%s%s%s%s\n", fieldLead, key, fieldSeparator, OneLine(value))
}

// OneLine keeps text on one line: a line break or another control
// character in it (a reason a definition gave, a report's text) is written
// as its Go escape, so that no text can begin a line of its own and pass
// for an item, a field or a line of a log.
func OneLine(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ParseOutcome reads the text WriteText writes, as an agent orchestrator
// reads it. The text names a job's prompt file but not its output, and no
// block kind or attempt number, so an outcome read this way leaves those
// empty.
func ParseOutcome(text string) (Outcome, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	kind := Kind(lines[0])
	if !kind.known() {
		return Outcome{}, fmt.Errorf("read step output: the first line: unknown outcome %q", kind)
	}
	items, err := parseItems(lines[1:])
	if err != nil {
		return Outcome{}, fmt.Errorf("read step output: %w", err)
	}
	out := Outcome{Kind: kind}
	for _, it := range items {
		switch kind {
		case KindLaunch:
			h, err := parseHandout(it)
			if err != nil {
				return Outcome{}, fmt.Errorf("read step output: %w", err)
			}
			out.Jobs = append(out.Jobs, h)
		case KindBlocked:
			b, err := parseBlock(it)
			if err != nil {
				return Outcome{}, fmt.Errorf("read step output: %w", err)
			}
			out.Blocks = append(out.Blocks, b)
		case KindUncertain:
			if err := parseUncertainItem(&out, it); err != nil {
				return Outcome{}, fmt.Errorf("read step output: %w", err)
			}
		case KindDone:
			return Outcome{}, fmt.Errorf("read step output: done is followed by %q", it.head)
		}
	}
	return out, nil
}

// item is one "- " line of the text and the indented lines under it.
type item struct {
	head   string            // the "- " line without its dash
	fields map[string]string // "  key: value" lines
	keys   []string          // the fields' keys, in order
}

func parseItems(lines []string) ([]item, error) {
	var items []item
	for _, line := range lines {
		if head, ok := strings.CutPrefix(line, itemLead); ok {
			items = append(items, item{head: head, fields: map[string]string{}})
			continue
		}
		field, ok := strings.CutPrefix(line, fieldLead)
		key, value, found := strings.Cut(field, fieldSeparator)
		if !ok || !found || len(items) == 0 {
			return nil, fmt.Errorf("line %q is neither an item nor a field of one", line)
		}
		it := &items[len(items)-1]
		if _, dup := it.fields[key]; dup {
			return nil, fmt.Errorf("item %q has two %s fields", it.head, key)
		}
		it.fields[key] = value
		it.keys = append(it.keys, key)
	}
	return items, nil
}

// expect requires that an item has exactly the fields named, in order.
func (it item) expect(keys ...string) error {
	if strings.Join(it.keys, "\x00") != strings.Join(keys, "\x00") {
		return fmt.Errorf("item %q has the fields %q, not %q", it.head, it.keys, keys)
	}
	return nil
}

// parseHandout reads "<name>: `<prompt>`" with an optional " launch=<json>".
func parseHandout(it item) (Handout, error) {
	if err := it.expect(); err != nil {
		return Handout{}, err
	}
	name, rest, ok := strings.Cut(it.head, ": `")
	if !ok || name == "" {
		return Handout{}, fmt.Errorf("launch line %q does not name a job and its prompt file", it.head)
	}
	// The prompt file's path ends at the line's last backtick, or, when
	// launch parameters follow (whose JSON may hold backticks), at the
	// first "` launch=".
	prompt, params, ok := strings.Cut(rest, "`"+launchParams)
	if ok {
		params = launchParams + params
	} else if prompt, ok = strings.CutSuffix(rest, "`"); !ok {
		return Handout{}, fmt.Errorf("launch line %q does not close its prompt file's path", it.head)
	}
	if prompt == "" {
		return Handout{}, fmt.Errorf("launch line %q names no prompt file", it.head)
	}
	launch := noLaunchParameters
	if params != "" {
		p, ok := strings.CutPrefix(params, launchParams)
		if !ok || !json.Valid([]byte(p)) {
			return Handout{}, fmt.Errorf("launch line %q: %q is not launch=<JSON>", it.head, params)
		}
		launch = p
	}
	return Handout{Name: name, Prompt: prompt, Launch: json.RawMessage(launch)}, nil
}

func parseBlock(it item) (Block, error) {
	if err := it.expect(recordField, permittedField); err != nil {
		return Block{}, err
	}
	subject, reason, ok := strings.Cut(it.head, fieldSeparator)
	if !ok {
		return Block{}, fmt.Errorf("block line %q does not name a subject and a reason", it.head)
	}
	b := Block{Subject: Subject(subject), Reason: reason, Record: it.fields[recordField]}
	permitted := it.fields[permittedField]
	if scope, ok := strings.CutPrefix(permitted, permittedRepair); ok {
		b.Permitted, b.Scope = PermitRepair, scope
	} else if permitted == permittedStop {
		b.Permitted = PermitStop
	} else {
		return Block{}, fmt.Errorf("block on %s: permitted %q is neither a repair nor a stop", subject, permitted)
	}
	return b, nil
}

// parseUncertainItem reads an item of an uncertain outcome: an effect whose
// fate is open, or, after "also ", a block found with it.
func parseUncertainItem(out *Outcome, it item) error {
	if rest, ok := strings.CutPrefix(it.head, alsoLead); ok {
		if err := it.expect(recordField); err != nil {
			return err
		}
		subject, reason, _ := strings.Cut(rest, fieldSeparator)
		out.Blocks = append(out.Blocks, Block{Subject: Subject(subject), Reason: reason, Record: it.fields[recordField]})
		return nil
	}
	subject, detail, _ := strings.Cut(it.head, fieldSeparator)
	name, ok := Subject(subject).Effect()
	if !ok {
		return fmt.Errorf("%q names neither an effect nor another block", it.head)
	}
	if err := it.expect(recordField, permittedField); err != nil {
		return err
	}
	if p := it.fields[permittedField]; p != permittedUncertain {
		return fmt.Errorf("effect %s: permitted %q is not %q", name, p, permittedUncertain)
	}
	out.Effects = append(out.Effects, EffectState{Name: name, Detail: detail, Record: it.fields[recordField]})
	return nil
}
