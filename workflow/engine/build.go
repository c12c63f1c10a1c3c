package engine

import (
	"debug/elf"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/custodian-run/custodian/store"
)

// Build names a build of custodian: the Go build ID of its binary, which
// changes with any change of its code or of the flags it was built with,
// and the VCS revision it was built from, with whether the tree had
// changes, when the go command recorded them. A run records the build that
// started it, and its state the build that last stepped it: a change of a
// job's task by that same build is data the definition reads, the run's
// own course; by another, new code for the operator to let through.
type Build = store.Build

// ThisBuild returns the build of the running binary. Its ID is empty, the
// build unknown, where the binary has none to read (a binary that is not
// ELF) or none the go command made (one linked with -buildid= set by
// hand, as some build systems do): an unknown build matches no other.
func ThisBuild() Build {
	buildOnce.Do(func() {
		thisBuild.ID = readBuildID()
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					thisBuild.Revision = s.Value
				case "vcs.modified":
					thisBuild.Modified = s.Value == "true"
				}
			}
		}
	})
	return thisBuild
}

var (
	buildOnce sync.Once
	thisBuild Build
)

// sameBuild says whether a and b are one build, both known.
func sameBuild(a, b Build) bool { return a.ID != "" && a.ID == b.ID }

// BuildText says which build b is, in a form a person can match with the
// binary's `custodian version` or `go tool buildid`: "custodian 3f9c2a7d1e04
// (modified), build X1G6OXN5rLkL0UGc4imc", the last part of the build ID;
// "custodian of an unknown build" when it has no ID.
func BuildText(b Build) string {
	if b.ID == "" {
		return "custodian of an unknown build"
	}
	text := "custodian"
	if b.Revision != "" {
		text += " " + b.Revision[:min(12, len(b.Revision))]
		if b.Modified {
			text += " (modified)"
		}
	}
	// The last part hashes the linked binary itself: two binaries that
	// differ in anything differ in it.
	return text + ", build " + b.ID[strings.LastIndex(b.ID, "/")+1:]
}

// Builds are the builds a run's records name, and the one that reads them.
type Builds struct {
	Started Build `json:"started"` // the build that started the run
	Stepped Build `json:"stepped"` // the build that last stepped it
	// Checked is the build every accepted job was last held against: its
	// changes of their tasks are the run's own course, and going back to it
	// lifts a stop on a changed definition.
	Checked Build `json:"checked"`
	This    Build `json:"this"` // the build of this binary
}

// builds reads the builds of the run's records.
func (run *Run) builds(st *store.State) Builds {
	return Builds{Started: run.records.Record.Build, Stepped: st.Build, Checked: st.Checked, This: run.build}
}

// GoBack names the binary to go back to for a run whose definition
// changed: the one every accepted job was last held against, or for records
// that never said, the one that started the run.
func (b Builds) GoBack(version string) string {
	switch {
	case b.Checked.ID != "":
		return BuildText(b.Checked)
	case b.Started.ID != "":
		return BuildText(b.Started)
	case version != "":
		return "custodian " + version
	}
	return BuildText(Build{})
}

// readBuildID reads the note the Go linker writes in an ELF binary: a name
// "Go", type 4, and the build ID as its descriptor.
func readBuildID() string {
	// The running binary itself, even if its path now names another.
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return ""
		}
	}
	f, err := elf.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil || s.Size > 4096 {
		return ""
	}
	data, err := s.Data()
	if err != nil || len(data) < 16 {
		return ""
	}
	order := f.ByteOrder
	namesz, descsz, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
	name := 12
	desc := name + int(namesz+3)&^3
	if typ != 4 || namesz != 4 || string(data[name:name+3]) != "Go\x00" || desc+int(descsz) > len(data) {
		return ""
	}
	if id := string(data[desc : desc+int(descsz)]); goBuildID(id) {
		return id
	}
	return ""
}

// goBuildID says whether id has the form the go command gives a binary's
// build ID: hashes of twenty URL-safe base64 characters, joined by "/".
func goBuildID(id string) bool {
	parts := strings.Split(id, "/")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if len(p) != 20 || strings.IndexFunc(p, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_')
		}) >= 0 {
			return false
		}
	}
	return true
}
