package engine

import "runtime/debug"

// Version is the version of custodian this binary was built from. A run
// records it when it starts.
var Version = buildVersion()

// buildVersion reads the module version, or for a build from a checkout
// the commit it was built from, marked dirty when the tree had changes.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	version, dirty := "devel", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			version += "+" + s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		version += "-dirty"
	}
	return version
}
