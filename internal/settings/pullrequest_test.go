package settings

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValidateChecksPRCommandAndRemotes(t *testing.T) {
	app := abs("/home/me/app")
	for _, tc := range []struct {
		name   string
		cmd    string
		remote string
		want   string // "" for valid, else words the error must hold
	}{
		{"unset is gh's", "", "", ""},
		{"the default itself", DefaultPRCommandTitled, "upstream", ""},
		{"every placeholder, inside words", abs("/opt/forge/bin/pr") + ` --head={branch} --into "{remote}/{base}" -m '{title}: {body}'`, "", ""},
		{"a remote with a slash", "", "team/fork", ""},
		{"blank", "   ", "", "prCommand is blank"},
		{"an unknown placeholder", "gh pr create --head {branch} --reviewer {owner}", "", "unknown placeholder {owner}"},
		{"a misspelt placeholder", "gh pr create --head {Branch}", "", "unknown placeholder {Branch}"},
		{"a placeholder as the program", "{remote} pr", "", "starts with a placeholder"},
		{"a placeholder in the program", abs("/opt/{remote}/pr"), "", "starts with a placeholder"},
		{"a relative program", "./bin/pr {branch}", "", "relative path"},
		{"an open quote", `gh pr create --title "{title}`, "", "cannot be read"},
		{"a remote that reads as an option", "", "--upload-pack=evil", "starts with -"},
		{"a remote with a space", "", "my remote", "not a name git takes"},
		{"a remote with ..", "", "a..b", "not a name git takes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Default()
			s.PRCommand = tc.cmd
			s.ProjectSetup[app] = ProjectSetup{Remote: tc.remote}
			err := s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error holding %q", err, tc.want)
			}
			if tc.remote != "" && err != nil && !strings.Contains(err.Error(), fmt.Sprintf("projectSetup[%q].remote", app)) {
				t.Errorf("the error %q does not name the project's key", err)
			}
		})
	}
}

func TestLoadRefusesAPRCommandWithAnUnknownPlaceholder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, []byte(`{"prCommand": "gh pr create --head {branch} --label {labels}"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "{labels}") {
		t.Fatalf("Load() = %v, want an error naming {labels}", err)
	}
}

func TestExpandPRCommandKeepsEachValueInItsWord(t *testing.T) {
	v := PRValues{Branch: "feat/x", Base: "main", Remote: "origin",
		Title: `Fix "quotes" and 'spaces' {body}`, Body: "line one\nline two; rm -rf / $(id)"}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{DefaultPRCommand, []string{"gh", "pr", "create", "--head", "feat/x", "--base", "main", "--fill"}},
		{DefaultPRCommandTitled, []string{"gh", "pr", "create", "--head", "feat/x", "--base", "main",
			"--title", `Fix "quotes" and 'spaces' {body}`, "--body", "line one\nline two; rm -rf / $(id)"}},
		{`pr "--to={remote}/{base}" {branch}:{base} ''{title}`, []string{"pr", "--to=origin/main", "feat/x:main", `Fix "quotes" and 'spaces' {body}`}},
	} {
		got, err := ExpandPRCommand(tc.line, v)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ExpandPRCommand(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

func TestRemoteForIsTheProjectsOrOrigin(t *testing.T) {
	s := Default()
	s.ProjectSetup[abs("/home/me/app")] = ProjectSetup{Remote: "upstream"}
	s.ProjectSetup[abs("/home/me/lib")] = ProjectSetup{Setup: "make"}
	for path, want := range map[string]string{abs("/home/me/app"): "upstream", abs("/home/me/app") + string(filepath.Separator): "upstream", abs("/home/me/lib"): "origin", abs("/elsewhere"): "origin"} {
		if got := s.RemoteFor(path); got != want {
			t.Errorf("RemoteFor(%q) = %q, want %q", path, got, want)
		}
	}
	if _, ok := s.SetupFor(abs("/home/me/app")); ok {
		t.Error("a projectSetup with only a remote readies something, want nothing")
	}
}
