package engine

import (
	"fmt"
	"io"
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
	for _, it := range c.Items {
		fmt.Fprintf(&b, "%s%s: %s\n", itemLead, it.Subject, OneLine(it.Reason))
		for _, d := range it.Details {
			fmt.Fprintf(&b, "%s%s\n", fieldLead, OneLine(d))
		}
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
