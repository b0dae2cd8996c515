package instance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunningTellsALiveInstanceFromAGoneOne(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	live := Info{PID: os.Getpid(), MCPURL: "http://127.0.0.1:4711/mcp", MCPPort: 4711, Token: "t"}
	tests := []struct {
		name        string
		file        *Info  // nil: no file
		raw         string // written instead of file when set
		wantRunning bool
		wantErr     string // "" for no error
	}{
		{name: "no instance file"},
		{name: "the file of an exited process", file: &Info{PID: exited.Process.Pid}},
		{name: "the file of this process", file: &live, wantRunning: true},
		{name: "an unreadable file", raw: "{", wantErr: "remove the file if CodeHydra is not running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run", "instance.json")
			switch {
			case tt.file != nil:
				if err := Write(path, *tt.file); err != nil {
					t.Fatal(err)
				}
			case tt.raw != "":
				if err := EnsureDir(filepath.Dir(path)); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.raw), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			info, running, err := Running(path)
			if running != tt.wantRunning {
				t.Errorf("running = %v, want %v", running, tt.wantRunning)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want one saying %q", err, tt.wantErr)
			}
			if running && info != *tt.file {
				t.Errorf("info = %+v, want %+v", info, *tt.file)
			}
		})
	}
}
