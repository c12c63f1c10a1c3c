package drive

import (
	"fmt"
	"slices"
	"strings"
)

// shellSpecial are the characters a shell would give a meaning when they
// stand unquoted: operators, expansions and globs. --command runs its
// program without a shell, so one of them there would silently mean
// something else than the person typing it expects; it is refused instead.
const shellSpecial = "|&;<>()$`*?["

// splitWords splits s into words as a POSIX shell would: blanks separate
// words; single quotes keep everything up to the next single quote; double
// quotes keep everything but let a backslash escape $ ` " \ and a newline;
// outside quotes a backslash escapes any character, and a backslash before
// a newline joins lines. Nothing is expanded: a character that a shell would
// expand, or read as an operator, is refused unless quoted, and so is a ~ or
// a # that begins a word.
func splitWords(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case c == '\\':
			i++
			if i == len(rs) {
				return nil, fmt.Errorf("it ends with a backslash that escapes nothing")
			}
			if rs[i] != '\n' {
				word.WriteRune(rs[i])
				inWord = true
			}
		case c == '\'':
			n := slices.Index(rs[i+1:], '\'')
			if n < 0 {
				return nil, fmt.Errorf("its single quote is never closed")
			}
			word.WriteString(string(rs[i+1 : i+1+n]))
			inWord, i = true, i+1+n
		case c == '"':
			end, err := doubleQuoted(rs, i+1, &word)
			if err != nil {
				return nil, err
			}
			inWord, i = true, end
		case c == '{' && placeholderAt(string(rs[i:])) != "":
			// A placeholder is the command's own, not the shell's: the ?
			// of {param:KEY?} is kept, not refused as a glob.
			p := placeholderAt(string(rs[i:]))
			word.WriteString(p)
			inWord, i = true, i+len([]rune(p))-1
		case strings.ContainsRune(shellSpecial, c), !inWord && (c == '~' || c == '#'):
			return nil, fmt.Errorf("its unquoted %q would mean something to a shell, and --command runs its program without one", c)
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// doubleQuoted writes the text of a double-quoted string that starts at
// rs[from] to word and returns the index of its closing quote.
func doubleQuoted(rs []rune, from int, word *strings.Builder) (int, error) {
	for i := from; i < len(rs); i++ {
		switch c := rs[i]; {
		case c == '"':
			return i, nil
		case c == '\\' && i+1 < len(rs) && strings.ContainsRune("$`\"\\\n", rs[i+1]):
			i++
			if rs[i] != '\n' {
				word.WriteRune(rs[i])
			}
		case c == '$' || c == '`':
			return 0, fmt.Errorf("its %q inside double quotes would be expanded by a shell, and --command runs its program without one", c)
		default:
			word.WriteRune(c)
		}
	}
	return 0, fmt.Errorf("its double quote is never closed")
}

// placeholderAt returns the placeholder that s begins with, without a blank
// in it, or "".
func placeholderAt(s string) string {
	loc := placeholder.FindStringIndex(s)
	if loc == nil || loc[0] != 0 || strings.ContainsAny(s[:loc[1]], " \t\n") {
		return ""
	}
	return s[:loc[1]]
}
