package instance

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

func TestRunningAsksTheLockNotThePid(t *testing.T) {
	exited := exec.Command(os.Args[0], "-test.run=^$")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	// A live process that is not CodeHydra: this test's own. Its pid in
	// an instance file proves nothing while no one holds the lock (the
	// pid of a crashed instance reused by another program).
	stranger := Info{PID: os.Getpid(), MCPURL: "http://127.0.0.1:4711/mcp", MCPPort: 4711, Token: "t"}
	tests := []struct {
		name        string
		file        *Info  // nil: no file
		raw         string // written instead of file when set
		locked      bool   // someone holds the lock
		wantRunning bool
		wantErr     string // "" for no error
	}{
		{name: "no instance file"},
		{name: "no instance file, lock held", locked: true},
		{name: "the file of an exited process", file: &Info{PID: exited.Process.Pid, MCPURL: stranger.MCPURL, MCPPort: stranger.MCPPort}},
		{name: "a live pid that holds no lock", file: &stranger},
		{name: "the file of the lock's holder", file: &stranger, locked: true, wantRunning: true},
		{name: "an unreadable file", raw: "{", wantErr: "remove the file if CodeHydra is not running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			path, lockPath := filepath.Join(dir, "instance.json"), filepath.Join(dir, "lock")
			if err := EnsureDir(dir); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.file != nil:
				if err := Write(path, *tt.file); err != nil {
					t.Fatal(err)
				}
			case tt.raw != "":
				if err := os.WriteFile(path, []byte(tt.raw), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.locked {
				l, err := Acquire(lockPath)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Release()
			} else if l, err := Acquire(lockPath); err != nil {
				t.Fatal(err)
			} else if err := l.Release(); err != nil {
				// The file exists, unlocked, as after an instance ended.
				t.Fatal(err)
			}
			info, running, err := Running(path, lockPath)
			if running != tt.wantRunning {
				t.Errorf("running = %v, want %v", running, tt.wantRunning)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want one saying %q", err, tt.wantErr)
			}
			if running && info != *tt.file {
				t.Errorf("info = %+v, want %+v", info, *tt.file)
			}
			if held, err := Held(lockPath); err != nil || held != tt.locked {
				t.Errorf("Held = %v, %v; want %v", held, err, tt.locked)
			}
		})
	}
}

func TestHeldIsFalseForAMissingLockFileAndCreatesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none", "lock")
	if held, err := Held(path); held || err != nil {
		t.Fatalf("Held = %v, %v; want false, nil", held, err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatalf("Held created %s", filepath.Dir(path))
	}
}

func TestAcquireWaitsOutTheInstantAHeldCheckHoldsTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "lock")
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	// Someone holds it for a moment, as Held does while it looks: until
	// Acquire has found it held and pauses to try again.
	pauses := 0
	l2, err := acquire(path, func(time.Duration) {
		if pauses++; pauses == 1 {
			if err := l.Release(); err != nil {
				t.Error(err)
			}
		}
	})
	if err != nil {
		t.Fatalf("Acquire while the lock was held for an instant: %v", err)
	}
	if pauses != 1 {
		t.Errorf("Acquire paused %d times, want once: it found the lock held, then free", pauses)
	}
	l2.Release()

	// A lock held for good is still refused.
	l3, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Release()
	if _, err := Acquire(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire = %v, want ErrLocked", err)
	}
}

// TestReadRefusesWhatIsNotTheUsersOwn: where the runtime folder falls
// back to the shared temporary folder, another user can make it first,
// with an instance file naming their server. Read checks what Write
// makes sure of.
func TestReadRefusesWhatIsNotTheUsersOwn(t *testing.T) {
	good := Info{PID: os.Getpid(), MCPURL: "http://127.0.0.1:4711/mcp", MCPPort: 4711, Token: "t"}
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, dir, path string)
		want  string
	}{
		{"a folder others may write", func(t *testing.T, dir, _ string) { chmod(t, dir, 0o777) }, "may be written by other users"},
		{"a file others may write", func(t *testing.T, _, path string) { chmod(t, path, 0o666) }, "may be written by other users"},
		{"a folder that is a link", func(t *testing.T, dir, _ string) {
			real := dir + "-real"
			if err := os.Rename(dir, real); err != nil {
				t.Fatal(err)
			}
			testenv.Symlink(t, real, dir)
		}, "is not a folder"},
		{"a file that is a link", func(t *testing.T, _, path string) {
			if err := os.Rename(path, path+".real"); err != nil {
				t.Fatal(err)
			}
			testenv.Symlink(t, path+".real", path)
		}, "is not a file"},
		{"a remote mcpUrl", func(t *testing.T, _, path string) {
			if err := Write(path, Info{PID: 1, MCPURL: "http://evil.example:4711/mcp", MCPPort: 4711}); err != nil {
				t.Fatal(err)
			}
		}, "not on this machine's loopback"},
		{"an mcpUrl with another port", func(t *testing.T, _, path string) {
			if err := Write(path, Info{PID: 1, MCPURL: "http://127.0.0.1:80/mcp", MCPPort: 4711}); err != nil {
				t.Fatal(err)
			}
		}, "is not this machine's loopback with port 4711"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if runtime.GOOS == "windows" && strings.Contains(tt.want, "other users") {
				t.Skip("Windows keeps no Unix modes to loosen: the folder's ACL, inherited from %LOCALAPPDATA%, admits no other user")
			}
			dir := filepath.Join(t.TempDir(), "run")
			path := filepath.Join(dir, "instance.json")
			if err := Write(path, good); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, dir, path)
			if _, err := Read(path); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
