package settings

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestSandboxSettingsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Sandbox)
		want string // "" = valid
	}{
		{"defaults", func(*Sandbox) {}, ""},
		{"required", func(s *Sandbox) { s.Mode = "required" }, ""},
		{"off", func(s *Sandbox) { s.Mode = "off" }, ""},
		{"unix sockets allowed", func(s *Sandbox) { s.UnixSockets = true }, ""},
		{"unknown mode", func(s *Sandbox) { s.Mode = "strict" }, `sandbox.mode is "strict"`},
		{"home paths", func(s *Sandbox) { s.Writable = []string{"~/.m2", abs("/srv/x")}; s.Readable = []string{"~"} }, ""},
		{"relative", func(s *Sandbox) { s.Writable = []string{"cache"} }, `sandbox.writable[0] "cache" is not an absolute path`},
		{"another user's home", func(s *Sandbox) { s.Readable = []string{"~bob/x"} }, `sandbox.readable[0] "~bob/x" is not an absolute path`},
		{"dot dot", func(s *Sandbox) { s.Hidden = []string{"~/a/../b"} }, `sandbox.hidden[0] "~/a/../b" holds . or ..`},
		{"line break", func(s *Sandbox) { s.Hidden = []string{"/a\n/b"} }, "line break"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Default()
			tc.edit(&s.Sandbox)
			err := s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate = %v, want ok", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestUnixSocketsAreDeniedByDefaultAndTellApart(t *testing.T) {
	d := DefaultSandbox()
	if d.UnixSockets {
		t.Fatal("the default sandbox allows unix sockets; it must deny them")
	}
	allowed := d.Clone()
	allowed.UnixSockets = true
	if d.Equal(allowed) || allowed.Equal(d) {
		t.Error("Equal does not tell unixSockets apart")
	}
	var fromMode Sandbox
	if err := fromMode.UnmarshalJSON([]byte(`"required"`)); err != nil || fromMode.UnixSockets {
		t.Errorf(`"sandbox": "required" = %+v, %v; want unix sockets denied`, fromMode, err)
	}
}

func TestExpandHomeTakesOnlyTheUsersOwnTilde(t *testing.T) {
	home := abs("/h")
	for in, want := range map[string]string{"~": home, "~/x/y": filepath.Join(home, "x", "y"), "/abs": "/abs", "~bob/x": "~bob/x", "x~/": "x~/"} {
		if got := ExpandHome(in, home); got != want {
			t.Errorf("ExpandHome(%q) = %q, want %q", in, got, want)
		}
	}
}
