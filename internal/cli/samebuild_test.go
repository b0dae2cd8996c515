package cli

import (
	"runtime/debug"
	"testing"
)

func TestTheSourcesStampIsReadFromTheRecordedLinkerFlags(t *testing.T) {
	for _, tc := range []struct{ ldflags, want string }{
		{"-X=codehydra/internal/cli.SourcesStamp=a5afd5f802209d16", "a5afd5f802209d16"},
		{"-s -w -X codehydra/internal/cli.SourcesStamp=abc -X main.other=1", "abc"},
		{"-X main.other=1", ""},
		{"", ""},
	} {
		info := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "-compiler", Value: "gc"}}}
		if tc.ldflags != "" {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: "-ldflags", Value: tc.ldflags})
		}
		if got := stampOf(info); got != tc.want {
			t.Errorf("ldflags %q: stamp %q, want %q", tc.ldflags, got, tc.want)
		}
	}
}

func TestOnlyTheSameStampOrNoneOnEitherSideHandsOver(t *testing.T) {
	for _, tc := range []struct{ own, other, want string }{
		{"abc", "abc", ""},
		{"", "", ""},
		{"abc", "def", "from other sources: stamp def, this program's abc"},
		{"", "def", "it was built by make build, this program by hand"},
		{"abc", "", "it was built by hand, this program by make build"},
	} {
		if got := stampDifference(tc.own, tc.other); got != tc.want {
			t.Errorf("own %q, other %q: %q, want %q", tc.own, tc.other, got, tc.want)
		}
	}
}
