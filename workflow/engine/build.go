package engine

import (
	"debug/elf"
	"os"
	"strings"
	"sync"
)

// ExecutableBuild returns the Go build ID of the running binary: it
// changes with any change of the code or the flags the binary was built
// from. It is empty where the binary has none to read (a binary that is
// not ELF), or none that the go command made (one linked with -buildid=
// set by hand, as some build systems do, names no build).
func ExecutableBuild() string {
	buildOnce.Do(func() { executableBuild = readBuildID() })
	return executableBuild
}

var (
	buildOnce       sync.Once
	executableBuild string
)

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
