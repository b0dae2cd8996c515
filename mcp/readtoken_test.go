package mcp

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadTokenReturnsOnlyAWellFormedTokenAndChangesNothing(t *testing.T) {
	good := strings.Repeat("ab", tokenBytes)
	tests := []struct {
		name    string
		content string // "" for no file
		want    string
	}{
		{"no file", "", ""},
		{"a token", good + "\n", good},
		{"too short", "abc\n", ""},
		{"not hex", strings.Repeat("zz", tokenBytes), ""},
		{"empty", "\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "token")
			if tt.content != "" {
				if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadToken(path)
			if got != tt.want || (err == nil) != (tt.want != "") {
				t.Fatalf("ReadToken = %q, %v; want %q", got, err, tt.want)
			}
			if tt.content == "" {
				if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("ReadToken created the file (stat: %v)", err)
				}
				return
			}
			fi, err := os.Stat(path)
			b, _ := os.ReadFile(path)
			if err != nil || fi.Mode().Perm() != 0o644 || string(b) != tt.content {
				t.Fatalf("ReadToken changed the file: %q, mode %v, %v", b, fi.Mode(), err)
			}
		})
	}
}
