package settings

import (
	"strings"
	"testing"
)

func TestWorkspaceDenyPatternsAreChecked(t *testing.T) {
	for _, c := range []struct {
		pattern, want string
	}{
		{"secrets/", ""}, {"*.p12", ""}, {"config/prod/*.json", ""},
		{"", "empty"}, {" /", "empty"}, {"/etc", "not relative"}, {`a\b`, "not relative"},
		{"../x", ". or .."}, {"a/./b", ". or .."}, {"[", "not a valid glob"}, {"a\nb", "line break"},
	} {
		err := CheckDenyPattern(c.pattern)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckDenyPattern(%q) = %v, want %q", c.pattern, err, c.want)
		}
	}
	s := Default()
	s.WorkspaceDeny = []string{"ok/", "/abs"}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "/abs") {
		t.Fatalf("Validate with a bad workspaceDeny: %v", err)
	}
	data, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back := Default()
	if err := back.UnmarshalJSON(data); err != nil || len(back.WorkspaceDeny) != 2 || back.WorkspaceDeny[1] != "/abs" {
		t.Fatalf("round trip: %v %v", back.WorkspaceDeny, err)
	}
}
