package settings

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

func TestReadChecksTheFileAsLoadDoesButChangesNothing(t *testing.T) {
	tests := []struct {
		name    string
		content string   // "" for no file
		want    Settings // compared on the keys the contents set
		inError string   // "" for no error
	}{
		{name: "no file", want: Default()},
		{name: "valid file", content: `{"mcpPort": 4711, "future": 1}`, want: func() Settings {
			s := Default()
			s.MCPPort = 4711
			return s
		}()},
		{name: "bad JSON", content: `{"mcpPort": `, want: Default(), inError: "bad JSON"},
		{name: "invalid value", content: `{"mcpPort": 70000}`, want: Default(), inError: "mcpPort is 70000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			if tt.content != "" {
				testenv.WriteFile(t, path, tt.content)
			}
			got, err := Read(path)
			if tt.inError == "" && err != nil || tt.inError != "" && (err == nil || !strings.Contains(err.Error(), tt.inError)) {
				t.Fatalf("Read error = %v, want one saying %q", err, tt.inError)
			}
			if got.MCPPort != tt.want.MCPPort || !reflect.DeepEqual(got.Projects, tt.want.Projects) || got.RateLimit != tt.want.RateLimit {
				t.Fatalf("Read = %+v, want %+v", got, tt.want)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if tt.content != "" {
				if b, err := os.ReadFile(path); err != nil || string(b) != tt.content || len(entries) != 1 {
					t.Fatalf("Read changed the folder: file %q (%v), %d entries", b, err, len(entries))
				}
			} else if len(entries) != 0 {
				t.Fatalf("Read created %d files", len(entries))
			}
		})
	}
}
