package settings

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitCommandSplitsAtSpacesAndKeepsQuotedWords(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"code", []string{"code"}},
		{"  code   --new-window\t{path} ", []string{"code", "--new-window", "{path}"}},
		{`"/opt/My Editor/bin/edit" -n`, []string{"/opt/My Editor/bin/edit", "-n"}},
		{`wezterm start --cwd '{path}'`, []string{"wezterm", "start", "--cwd", "{path}"}},
		{`sh -c 'echo "$1"' x`, []string{"sh", "-c", `echo "$1"`, "x"}},
		{`a ""`, []string{"a", ""}},
		{`--dir="a b"c`, []string{"--dir=a bc"}},
		{`$EDITOR ~/x *.go | cat`, []string{"$EDITOR", "~/x", "*.go", "|", "cat"}},
	} {
		got, err := SplitCommand(tc.line)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

func TestSplitCommandRefusesAnOpenQuoteOrALineBreak(t *testing.T) {
	for _, line := range []string{`code "x`, `code 'x`, "code\nrm -rf /"} {
		if got, err := SplitCommand(line); err == nil {
			t.Errorf("SplitCommand(%q) = %q, want an error", line, got)
		}
	}
}

func TestValidateChecksEditorAndTerminalCommands(t *testing.T) {
	for _, tc := range []struct {
		name     string
		editor   string
		terminal string
		want     string // "" for valid, else a word the error must hold
	}{
		{"empty picks the default", "", "", ""},
		{"a command name", "code -n", "xterm", ""},
		{"an absolute path and a placeholder", abs("/usr/bin/code") + " --goto {path}", abs("/usr/bin/kitty") + " --directory={path}", ""},
		{"a relative editor path", "./bin/edit", "", "editorCommand"},
		{"a relative terminal path", "", "bin/term", "terminalCommand"},
		{"an open quote", `"code`, "", "editorCommand"},
		{"the placeholder as the program", "", "{path}/run", "terminalCommand"},
		{"an empty program", `"" x`, "", "editorCommand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Default()
			s.EditorCommand, s.TerminalCommand = tc.editor, tc.terminal
			err := s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
