package engine

import "github.com/custodian-run/custodian/store"

// MaxFileShown bounds what File reads of a file: a worker's output or log
// may be of any size, and a page shows its start.
const MaxFileShown = 4 << 20

// RunFile is a file of a run as a page shows it: a regular file's text, up
// to MaxFileShown, or a directory's names; any other kind of file only by
// its kind.
type RunFile struct {
	Rel   string   `json:"rel"`
	Kind  string   `json:"kind"` // "a regular file", "a directory", "a symbolic link", ... or "missing"
	Text  []byte   `json:"text"`
	Cut   bool     `json:"cut"` // the file holds more than Text
	Names []string `json:"names"`
}

// File reads the file rel of the run, a path relative to the run
// directory, through the store's confined tree: no link is followed and
// nothing but a regular file is opened. It takes no lock and writes
// nothing.
func (run *Run) File(rel string) (RunFile, error) {
	f := RunFile{Rel: rel}
	info, err := run.records.Stat(rel)
	if err != nil {
		return f, err
	}
	f.Kind = info.Kind.String()
	switch info.Kind {
	case store.Regular:
		f.Text, _, f.Cut, err = run.records.ReadText(rel, MaxFileShown)
	case store.Directory:
		f.Names, err = run.records.Names(rel)
	}
	return f, err
}
