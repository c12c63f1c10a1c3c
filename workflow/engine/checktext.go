package engine

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteText writes the check as `custodian check` prints it: the first
// line "unchanged" or "changed"; then one item a job, effect or patch whose
// standing the next step would change, in step's form ("- NAME: reason",
// with its details indented under it); and last "next step: " and the
// outcome the next step would give, as step prints it.
func (c Check) WriteText(w io.Writer) error {
	var b strings.Builder
	if c.Changed {
		b.WriteString("changed\n")
	} else {
		b.WriteString("unchanged\n")
	}
	for _, g := range alikeItems(c.Items) {
		it := g[0]
		subject := it.Subject.String()
		if len(g) > 1 {
			names := make([]Subject, len(g))
			for i, it := range g {
				names[i] = it.Subject
			}
			subject = fmt.Sprintf("%d alike (%s)", len(g), listed(names))
		}
		fmt.Fprintf(&b, "%s%s: %s\n", itemLead, subject, OneLine(it.Reason))
		for _, d := range it.Details {
			fmt.Fprintf(&b, "%s%s\n", fieldLead, OneLine(d))
		}
	}
	for _, w := range c.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", OneLine(w))
	}
	if lacks := lacking(c.Patches); len(lacks) > 0 {
		fmt.Fprintf(&b, "patches: the run lacks %s, which this binary declares: in this run, ctx.Patched says false\n", join(lacks))
	}
	b.WriteString("next step: ")
	if c.Refusal != "" {
		fmt.Fprintf(&b, "refused: %s\n", OneLine(c.Refusal))
	} else if c.Next == nil {
		b.WriteString("not foreseen: it runs an effect or asks a recognizer first\n")
	} else if err := c.Next.WriteText(&b); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// lacking are the patches the definition declares that the run lacks.
func lacking(p CheckPatches) []string {
	var out []string
	for _, name := range p.Definition {
		if !slices.Contains(p.Run, name) {
			out = append(out, name)
		}
	}
	return out
}

// ManyAlike is how many alike things the texts for people say once: check's
// items, a changed definition's record, status's jobs. Fewer are said one
// by one.
const ManyAlike = 4

// alikeItems groups the items that say the same of their subjects (the
// same reason and details, but for a diff's line naming the job's file),
// in the order of each group's first item; a group of fewer than ManyAlike
// is split into items of their own.
func alikeItems(items []CheckItem) [][]CheckItem {
	var keys []string
	groups := map[string][]CheckItem{}
	for _, it := range items {
		key := it.Reason + "\n" + diffBody(strings.Join(it.Details, "\n"))
		if groups[key] == nil {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], it)
	}
	var out [][]CheckItem
	for _, key := range keys {
		g := groups[key]
		if len(g) < ManyAlike {
			for _, it := range g {
				out = append(out, []CheckItem{it})
			}
			continue
		}
		out = append(out, g)
	}
	return out
}
