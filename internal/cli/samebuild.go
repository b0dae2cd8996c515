package cli

import (
	"debug/buildinfo"
	"fmt"
	"runtime/debug"
	"strings"
)

// SourcesStamp is a hash of the sources the program was built from, which
// `make build` stamps into both programs (the Makefile's SOURCES_STAMP);
// empty in a build by hand.
var SourcesStamp string

// stampVar is SourcesStamp's name for the linker's -X.
const stampVar = "codehydra/internal/cli.SourcesStamp"

// otherBuild says how the GUI program at path was built otherwise than
// this one, or "" when both carry the same stamp or neither has one (two
// builds by hand, which the go command alone cannot tell apart). The core
// rebuilt alone after a change (`go build .`) would otherwise hand over
// to a tray app of other sources, which reads the same settings and files.
func otherBuild(path string) string {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "" // not a Go program the core can read: starting it says more
	}
	return stampDifference(SourcesStamp, stampOf(info))
}

// stampOf is the sources stamp the linker was given, from the flags the
// go command recorded.
func stampOf(info *debug.BuildInfo) string {
	for _, s := range info.Settings {
		if s.Key != "-ldflags" {
			continue
		}
		for _, f := range strings.Fields(s.Value) {
			f = strings.TrimPrefix(strings.TrimPrefix(f, "-X="), "-X")
			if v, ok := strings.CutPrefix(f, stampVar+"="); ok {
				return v
			}
		}
	}
	return ""
}

// stampDifference is otherBuild's comparison of the two stamps.
func stampDifference(own, other string) string {
	switch {
	case own == other:
		return ""
	case own == "":
		return "it was built by make build, this program by hand"
	case other == "":
		return "it was built by hand, this program by make build"
	default:
		return fmt.Sprintf("from other sources: stamp %s, this program's %s", other, own)
	}
}
