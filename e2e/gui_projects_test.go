package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"codehydra/app"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
)

// TestGUIProjectAndFolderItems drives the project and folder items under a
// real panel (xfce4-panel's systray, the StatusNotifier host): each project
// opens New workspace here…, Open folder and Remove project…; each
// workspace has Open folder, Open terminal and Open in editor. Open
// terminal runs terminalCommand in the workspace's folder, and Remove
// project… asks first, then drops the project from the menu and leaves its
// worktree on disk.
func TestGUIProjectAndFolderItems(t *testing.T) {
	bin, repo := guiSetup(t)
	script, record := argvRecorder(t)
	testenv.WriteSettings(t, fmt.Sprintf(`{"opencodeBin": "/nonexistent/opencode", "terminalCommand": %q}`, script+" --dir {path}"))
	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	projectName := filepath.Base(repo)

	var menu trayItem
	guiWaitUntil(t, 60*time.Second, "the tray menu to show the project and its workspace", a.exited, func() (bool, string) {
		var err error
		if menu, err = tray.layout(); err != nil {
			return false, err.Error()
		}
		return menu.find(projectName) != nil && trayWorkspace(menu, "feature-x") != nil, menu.String()
	})
	wantItems(t, menu.find(projectName), app.LabelNewWorkspaceHere, app.LabelOpenFolder, app.LabelRemoveProject)
	ws := trayWorkspace(menu, "feature-x")
	wantItems(t, ws, app.LabelOpenFolder, app.LabelOpenTerminal, app.LabelOpenEditor)
	var wtPath string
	for _, line := range strings.Split(testenv.Git(t, repo, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok && p != repo {
			wtPath = p
		}
	}

	// Open terminal runs terminalCommand in the workspace's folder.
	tray.click(t, app.LabelOpenTerminal)
	var got []byte
	guiWaitUntil(t, 20*time.Second, "terminalCommand to run", a.exited, func() (bool, string) {
		var err error
		got, err = os.ReadFile(record)
		return err == nil, fmt.Sprint(err)
	})
	if want := wtPath + "\n--dir\n" + wtPath + "\n"; string(got) != want {
		t.Errorf("terminalCommand ran with folder and argv\n%s\nwant\n%s", got, want)
	}

	// New workspace here… opens the dialog.
	tray.click(t, app.LabelNewWorkspaceHere)
	d.waitWindow(t, "New workspace", a.exited)

	// Remove project… asks first; Return confirms.
	tray.click(t, app.LabelRemoveProject)
	confirm := d.waitWindow(t, "Remove project", a.exited)
	shot := filepath.Join(guiShotDir(t), "remove-project.png")
	guiWaitUntil(t, 20*time.Second, "the confirmation to be drawn", a.exited, func() (bool, string) {
		st, err := d.screenshot(shot, confirm.rect)
		if err != nil {
			return false, err.Error()
		}
		return st.drawn(), fmt.Sprintf("%s in %s", st, shot)
	})
	if m, _ := tray.layout(); m.find(projectName) == nil {
		t.Fatal("the project left the menu before the removal was confirmed")
	}
	guiWaitUntil(t, 30*time.Second, "the project to leave the menu", a.exited, func() (bool, string) {
		d.pressIfOpen(confirm, "Return")
		var err error
		if menu, err = tray.layout(); err != nil {
			return false, err.Error()
		}
		return menu.find(projectName) == nil && menu.find(app.LabelNoProjects) != nil, menu.String()
	})
	for _, f := range []string{filepath.Join(repo, "README.md"), filepath.Join(wtPath, "README.md")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("removing the project touched its files: %v", err)
		}
	}
	if list := testenv.Git(t, repo, "worktree", "list", "--porcelain"); !strings.Contains(list, "worktree "+wtPath+"\n") {
		t.Errorf("the worktree is no longer registered with git:\n%s", list)
	}
	if data, _ := os.ReadFile(paths.SettingsFile()); strings.Contains(string(data), repo) {
		t.Errorf("the settings still list the removed project:\n%s", data)
	}
	tray.click(t, app.LabelQuit)
	guiWaitExit(t, a.exited, "Quit")
}

// wantItems checks that it has enabled items labelled labels.
func wantItems(t *testing.T, it *trayItem, labels ...string) {
	t.Helper()
	if it == nil {
		t.Fatal("no such menu entry")
	}
	for _, l := range labels {
		found := false
		for _, c := range it.children {
			found = found || (c.label == l && c.enabled)
		}
		if !found {
			t.Errorf("%q has no enabled %q:\n%s", it.label, l, *it)
		}
	}
}

// argvRecorder is a script that writes its folder and arguments, one a
// line, to record.
func argvRecorder(t *testing.T) (script, record string) {
	t.Helper()
	dir := t.TempDir()
	script, record = filepath.Join(dir, "term.sh"), filepath.Join(dir, "record")
	body := fmt.Sprintf("#!/bin/sh\n{ pwd; for a in \"$@\"; do printf '%%s\\n' \"$a\"; done; } > %q.tmp && mv %q.tmp %q\n", record, record, record)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, record
}

// startGUIPanel starts xfce4-panel with only its systray plugin (the
// panel of build/desktop.sh, from build/xfce4-panel.xml) and waits until it hosts StatusNotifier items; it
// returns a connection to the session bus.
func startGUIPanel(t *testing.T, d *guiDesktop) *dbus.Conn {
	t.Helper()
	if _, err := exec.LookPath("xfce4-panel"); err != nil {
		testenv.CannotRun(t, requireGUIEnv, "the GUI test needs xfce4-panel (build/setup.sh installs it)")
	}
	xml := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "xfce4", "xfconf", "xfce-perchannel-xml")
	if err := os.MkdirAll(xml, 0o700); err != nil {
		t.Fatal(err)
	}
	channel, err := os.ReadFile(filepath.Join("..", "build", "xfce4-panel.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xml, "xfce4-panel.xml"), channel, 0o600); err != nil {
		t.Fatal(err)
	}
	panel := exec.Command("xfce4-panel", "--disable-wm-check")
	panel.Env = d.env
	panel.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out testenv.SyncBuffer
	panel.Stdout, panel.Stderr = &out, &out
	if err := panel.Start(); err != nil {
		t.Fatalf("start xfce4-panel: %v", err)
	}
	t.Cleanup(func() {
		killGroup(panel)
		endBusActivated(d.busAddr)
	})
	conn, err := dbus.Connect(d.busAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	watcher := conn.Object("org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher")
	held := testenv.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		v, err := watcher.GetProperty("org.kde.StatusNotifierWatcher.IsStatusNotifierHostRegistered")
		ok, _ := v.Value().(bool)
		return err == nil && ok
	})
	if !held {
		t.Fatalf("xfce4-panel registered no StatusNotifier host within 30 s:\n%s", &out)
	}
	return conn
}

// endBusActivated ends the daemons the session bus at addr started for the
// panel (xfconfd, which writes the panel's settings into the test's
// folders as it exits), and waits until they are gone, so that the test's
// temporary folders are not written while they are removed.
func endBusActivated(addr string) {
	want := []byte("DBUS_SESSION_BUS_ADDRESS=" + addr + "\x00")
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); strings.TrimSpace(string(comm)) == "xfconfd" {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			pids = append(pids, pid)
		}
	}
	testenv.Poll(5*time.Second, 20*time.Millisecond, func() bool {
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				if st, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); !strings.Contains(string(st), ") Z") {
					return false
				}
			}
		}
		return true
	})
}
