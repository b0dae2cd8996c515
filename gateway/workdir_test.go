//go:build unix

package gateway

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

// TestAWorkspaceScopedServerStartsInAnEmptyFolderNotItsWorkspace: npx
// (and uvx and the like) prefer a copy of the program in their working
// folder, and a workspace-scoped server used to start in its workspace,
// where the agent writes: a node_modules/.bin committed there ran in the
// server's place. Now each instance starts in the gateway's empty,
// read-only folder and learns its workspace as its root and {workspace}.
func TestAWorkspaceScopedServerStartsInAnEmptyFolderNotItsWorkspace(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	ws := t.TempDir()
	g := newGateway(t, map[string]settings.MCPServer{"every": {Command: "sh", Scope: settings.ScopeWorkspace,
		Args: []string{"-c", `pwd > "$1/cwd.txt" && exec "$2"`, "sh", "{workspace}", every}}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if res, err := g.Call(ctx, ws, "every__echo", args(t, map[string]string{"message": "hi"})); err != nil || res.IsError {
		t.Fatalf("Call echo: %+v, %v", res, err)
	}
	b, err := os.ReadFile(filepath.Join(ws, "cwd.txt"))
	if err != nil {
		t.Fatalf("{workspace} in args did not name the workspace: %v", err)
	}
	wd := g.WorkDir()
	if got := strings.TrimSpace(string(b)); got != wd || strings.HasPrefix(got, ws) {
		t.Fatalf("the instance started in %s, want the gateway's folder %s, outside its workspace %s", got, wd, ws)
	}
	fi, err := os.Stat(wd)
	if err != nil || fi.Mode().Perm() != 0o500 {
		t.Fatalf("the gateway's folder %s: %v, %v, want read-only", wd, fi, err)
	}
	if entries, _ := os.ReadDir(wd); len(entries) != 0 {
		t.Fatalf("the gateway's folder holds %v, want nothing", entries)
	}
	if tools := g.Tools(ctx); len(tools) == 0 || tools[0].WorkDir != wd {
		t.Fatalf("the tools say the server starts in %q, want %s", tools[0].WorkDir, wd)
	}

	// The README's way of starting a server, npx, with a copy of the
	// program planted in the workspace: it does not run.
	npx, err := exec.LookPath("npx")
	if err != nil {
		testenv.CannotRun(t, testenv.RequireOpencodeEnv, "npx not found: run `make setup`")
	}
	planted := filepath.Join(ws, "ran-the-workspaces-copy")
	testenv.WriteFile(t, filepath.Join(ws, "package.json"), `{"name":"ws","version":"1.0.0"}`)
	bin := filepath.Join(ws, "node_modules", ".bin", "codehydra-test-mcp-server")
	testenv.WriteFile(t, bin, "#!/bin/sh\ntouch "+planted+"\nexec "+every+"\n")
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	g.Reconfigure(map[string]settings.MCPServer{"npx": {Command: npx, Args: []string{"--no", "codehydra-test-mcp-server"}, Scope: settings.ScopeWorkspace}})
	short, cancel2 := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel2()
	_, _ = g.Call(short, ws, "npx__echo", args(t, map[string]string{"message": "hi"}))
	if _, err := os.Stat(planted); err == nil {
		t.Fatal("npx ran the copy of the server planted in the workspace")
	}
	if st := g.Statuses(); len(st) != 1 || st[0].State == StateRunning {
		t.Fatalf("Statuses = %+v, want npx's start failed (no such package outside the workspace)", st)
	}
}

// TestAConfinedSharedServerIsNotStartedAndSaysWhy: "confine" judges the
// paths of a call against the caller's workspace, which a shared server,
// one process for every workspace, cannot be held to (a relative path
// from its own folder, a symlink swapped after the check). Such a server
// does not start and its status says to make it workspace-scoped.
func TestAConfinedSharedServerIsNotStartedAndSaysWhy(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := newGateway(t, map[string]settings.MCPServer{"every": {Command: every, Confine: true}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if tools := g.Tools(ctx); len(tools) != 0 {
		t.Fatalf("Tools = %v, want none from a confined shared server", toolNames(tools))
	}
	_, err := g.Call(ctx, "", "every__echo", args(t, map[string]string{"message": "hi"}))
	if err == nil || !strings.Contains(err.Error(), `"confine" needs "scope": "workspace"`) {
		t.Fatalf("Call = %v, want the reason", err)
	}
	st := g.Statuses()
	if len(st) != 1 || st[0].State != StateFailed || !strings.Contains(st[0].LastError, `"scope": "workspace"`) || st[0].Instances != 0 {
		t.Fatalf("Statuses = %+v, want failed with the reason and nothing running", st)
	}
	if pids := serverPIDs(t); slices.ContainsFunc(pids, func(int) bool { return true }) {
		t.Fatalf("server processes %v, want none", pids)
	}
}

// TestAWorkspaceScopedServerStartsWhereNoOtherUserCanPlantAPackage: npm
// (npx) takes the nearest folder above where it starts that holds a
// node_modules or package.json as its project, and uv its uv.toml. The
// empty folder used to be made in the system's temporary folder, where
// any local user may make /tmp/node_modules: npx then ran their copy of
// the server as this user. Now the folder is in CodeHydra's data folder,
// and each folder above it, up to the home folder, is the user's (or
// root's) and written by no one else.
func TestAWorkspaceScopedServerStartsWhereNoOtherUserCanPlantAPackage(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		testenv.CannotRun(t, testenv.RequireOpencodeEnv, "npx not found: run `make setup`")
	}
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	ws := t.TempDir()
	// The system's temporary folder, where another user plants a copy.
	shared := t.TempDir()
	t.Setenv("TMPDIR", shared)
	planted := filepath.Join(ws, "ran-the-planted-copy")
	bin := filepath.Join(shared, "node_modules", ".bin", "codehydra-test-mcp-server")
	testenv.WriteFile(t, bin, "#!/bin/sh\ntouch "+planted+"\nexec "+every+"\n")
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}

	g := newGateway(t, map[string]settings.MCPServer{"npx": {Command: npx, Args: []string{"--no", "codehydra-test-mcp-server"}, Scope: settings.ScopeWorkspace}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, _ = g.Call(ctx, ws, "npx__echo", args(t, map[string]string{"message": "hi"}))
	if _, err := os.Stat(planted); err == nil {
		t.Error("npx ran the copy of the server planted in the system's temporary folder")
	}

	wd := g.WorkDir()
	if wd == "" || strings.HasPrefix(wd, shared+"/") {
		t.Fatalf("the servers start in %q, want a folder outside the system's temporary folder %s", wd, shared)
	}
	home, err := filepath.EvalSymlinks(os.Getenv("HOME"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(wd, home+"/") {
		t.Fatalf("the servers start in %s, want a folder in the home folder %s (the test's data folder)", wd, home)
	}
	for d := filepath.Dir(wd); d != home; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o022 != 0 {
			t.Errorf("%s above the servers' folder: %v, owner %d, want a folder of the user's that no one else may write", d, fi.Mode(), st.Uid)
		}
	}
	if fi, err := os.Stat(filepath.Dir(wd)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the folder holding the servers' folder: %v, %v, want 0700", fi, err)
	}
}

// TestNoWorkspaceScopedServerStartsBelowAFolderOthersMayWrite: where a
// folder above the servers' folder may be written by another user (as
// the system's temporary folder may), no workspace-scoped server starts,
// and the error names the folder: in the home folder, and outside it
// (a data folder in /tmp).
func TestNoWorkspaceScopedServerStartsBelowAFolderOthersMayWrite(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	for name, c := range map[string]struct {
		parent string
		mode   os.FileMode
	}{
		"in the home folder":                 {os.Getenv("HOME"), 0o777},
		"like /tmp, outside the home folder": {t.TempDir(), 0o777 | os.ModeSticky},
	} {
		open, err := os.MkdirTemp(c.parent, "open-to-all-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(open) })
		if err := os.Chmod(open, c.mode); err != nil {
			t.Fatal(err)
		}
		g := New(Options{WorkDirs: filepath.Join(open, "data", "mcp-wd"), StopTimeout: time.Second,
			Servers: map[string]settings.MCPServer{"every": {Command: every, Scope: settings.ScopeWorkspace}}})
		t.Cleanup(func() { _ = g.Close() })
		if g.WorkDir() != "" {
			t.Fatalf("%s: WorkDir = %s, want none below %s", name, g.WorkDir(), open)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err = g.Call(ctx, t.TempDir(), "every__echo", args(t, map[string]string{"message": "hi"}))
		cancel()
		if err == nil || !strings.Contains(err.Error(), open+" may be written by other users") {
			t.Fatalf("%s: Call = %v, want an error naming %s", name, err, open)
		}
	}
	if pids := serverPIDs(t); len(pids) != 0 {
		t.Fatalf("server processes %v, want none", pids)
	}
}
