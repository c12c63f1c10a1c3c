package engine

import (
	"fmt"
	"strings"
)

// unifiedDiff returns the unified diff of a against b, line by line, with
// three lines of context, headed by the names; "" when they are equal.
// Prompts are short, so the longest common subsequence is found the plain
// way, in time and space proportional to the product of their lengths;
// longer texts are shown whole, removed and added.
func unifiedDiff(aName, bName, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops := lineOps(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	const context = 3
	// Group the operations into hunks: runs of changes with up to
	// 2*context equal lines between them.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
				continue
			}
			if j-end >= 2*context {
				break
			}
		}
		end = min(end+context, len(ops))
		writeHunk(&out, ops[start:end])
		i = end
	}
	return out.String()
}

type lineOp struct {
	kind  byte // ' ', '-' or '+'
	line  string
	aLine int // 1-based line in a of a ' ' or '-'
	bLine int // 1-based line in b of a ' ' or '+'
}

// maxDiffCells bounds the table of the plain algorithm.
const maxDiffCells = 4 << 20

func lineOps(a, b []string) []lineOp {
	if (len(a)+1)*(len(b)+1) > maxDiffCells {
		var ops []lineOp
		for i, l := range a {
			ops = append(ops, lineOp{kind: '-', line: l, aLine: i + 1})
		}
		for j, l := range b {
			ops = append(ops, lineOp{kind: '+', line: l, bLine: j + 1})
		}
		return ops
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	w := len(b) + 1
	lcs := make([]int, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	var ops []lineOp
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, lineOp{kind: ' ', line: a[i], aLine: i + 1, bLine: j + 1})
			i, j = i+1, j+1
		case j == len(b) || i < len(a) && lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			ops = append(ops, lineOp{kind: '-', line: a[i], aLine: i + 1})
			i++
		default:
			ops = append(ops, lineOp{kind: '+', line: b[j], bLine: j + 1})
			j++
		}
	}
	return ops
}

func writeHunk(out *strings.Builder, ops []lineOp) {
	aStart, bStart, aLen, bLen := 0, 0, 0, 0
	for _, op := range ops {
		if op.kind != '+' {
			if aStart == 0 {
				aStart = op.aLine
			}
			aLen++
		}
		if op.kind != '-' {
			if bStart == 0 {
				bStart = op.bLine
			}
			bLen++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
	for _, op := range ops {
		fmt.Fprintf(out, "%c%s\n", op.kind, op.line)
	}
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
