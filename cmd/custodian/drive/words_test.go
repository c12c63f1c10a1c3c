package drive

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  \t\n ", nil},
		{"worker", []string{"worker"}},
		{" worker  a\tb\nc ", []string{"worker", "a", "b", "c"}},
		{`worker 'a b' "c d"`, []string{"worker", "a b", "c d"}},
		{`worker a'b c'd`, []string{"worker", "ab cd"}},
		{`worker ''`, []string{"worker", ""}},
		{`worker ""`, []string{"worker", ""}},
		{`worker 'it''s'`, []string{"worker", "its"}},
		{`worker "it's"`, []string{"worker", "it's"}},
		{`worker 'say "hi"'`, []string{"worker", `say "hi"`}},
		{`worker '\n $HOME *'`, []string{"worker", `\n $HOME *`}},
		{`worker a\ b`, []string{"worker", "a b"}},
		{`worker \'a\'`, []string{"worker", "'a'"}},
		{`worker \$HOME \| \*`, []string{"worker", "$HOME", "|", "*"}},
		{`worker \\`, []string{"worker", `\`}},
		{"worker a\\\nb", []string{"worker", "ab"}},
		{"worker \\\n b", []string{"worker", "b"}},
		{`worker "a\"b"`, []string{"worker", `a"b`}},
		{`worker "a\\b"`, []string{"worker", `a\b`}},
		{`worker "a\$b"`, []string{"worker", `a$b`}},
		{`worker "a\nb"`, []string{"worker", `a\nb`}},
		{"worker \"a\\\nb\"", []string{"worker", "ab"}},
		{`worker "*?|;&<>()[~#"`, []string{"worker", "*?|;&<>()[~#"}},
		{`worker a~b a#b`, []string{"worker", "a~b", "a#b"}},
		{`worker {job} --x={param:k}`, []string{"worker", "{job}", "--x={param:k}"}},
		{`worker é 中文`, []string{"worker", "é", "中文"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := splitWords(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSplitWordsRefuses(t *testing.T) {
	tests := []struct {
		in   string
		says string
	}{
		{`worker 'a`, "single quote is never closed"},
		{`worker "a`, "double quote is never closed"},
		{`worker "a\"`, "double quote is never closed"},
		{`worker a\`, "ends with a backslash"},
		{`a|b`, `unquoted '|'`},
		{`a;b`, `unquoted ';'`},
		{`a & b`, `unquoted '&'`},
		{`a<b`, `unquoted '<'`},
		{`a>b`, `unquoted '>'`},
		{`a (b)`, `unquoted '('`},
		{`a $B`, `unquoted '$'`},
		{"a `b`", "unquoted '`'"},
		{`a *`, `unquoted '*'`},
		{`a b?`, `unquoted '?'`},
		{`a [b]`, `unquoted '['`},
		{`a ~/b`, `unquoted '~'`},
		{`a #b`, `unquoted '#'`},
		{`a "$B"`, `'$' inside double quotes`},
		{"a \"`b`\"", "'`' inside double quotes"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := splitWords(tt.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.says)
		})
	}
}
