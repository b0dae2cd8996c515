package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/app"
	"codehydra/internal/daemon"
	"codehydra/internal/paths"
)

// glDriver matches the mapped files of an OpenGL driver (Mesa's GLX
// vendor library, its DRI drivers, LLVM for llvmpipe): what makes a window
// cost 50 MB and more. libGL itself is linked in and weighs little.
var glDriver = regexp.MustCompile(`libGLX_mesa|_dri\.so|libLLVM|libgallium`)

// TestGUIWindowsOpenInAProcessOfTheirOwn runs the app under a real panel
// and checks the lighter tray: the tray process never loads a GL driver;
// Settings… opens in a window process (`codehydra-gui ui-window`) that loads
// it, a second click brings that window forward rather than starting
// another, closing the window ends the process, and a window process ends
// when the app is killed.
func TestGUIWindowsOpenInAProcessOfTheirOwn(t *testing.T) {
	bin, repo := guiSetup(t)
	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	guiWaitUntil(t, 60*time.Second, "the tray menu to show the workspace", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		return trayWorkspace(menu, "feature-x") != nil, menu.String()
	})
	noGLDriver := func(when string) {
		t.Helper()
		if libs := mappedGL(t, a.pid); len(libs) > 0 {
			t.Errorf("%s, the tray process has a GL driver loaded: %v", when, libs)
		}
	}
	noGLDriver("with the tray menu up")

	tray.click(t, app.LabelSettings)
	win := d.waitWindow(t, "CodeHydra settings", a.exited)
	procs := windowProcesses(t, a.pid)
	if len(procs) != 1 {
		t.Fatalf("window processes %v, want one for Settings", procs)
	}
	if libs := mappedGL(t, procs[0]); len(libs) == 0 {
		t.Error("the window process shows a window with no GL driver loaded: is it the one drawing it?")
	}
	noGLDriver("with Settings open")

	// A second click brings the open window forward.
	tray.click(t, app.LabelSettings)
	guiWaitUntil(t, 10*time.Second, "the app to take the second click", a.exited, func() (bool, string) {
		log, _ := os.ReadFile(paths.LogFile())
		return bytes.Contains(log, []byte(`msg="window brought forward" window=settings`)), ""
	})
	if again := windowProcesses(t, a.pid); len(again) != 1 || again[0] != procs[0] {
		t.Errorf("after a second click: window processes %v, want only %v", again, procs)
	}

	// Closing the window ends its process.
	d.xdotool(t, "windowfocus", "--sync", win.id)
	d.xdotool(t, "key", "Escape")
	guiWaitUntil(t, 10*time.Second, "the window process to end with its window", a.exited, func() (bool, string) {
		left := windowProcesses(t, a.pid)
		return len(left) == 0 && !d.hasWindow("CodeHydra settings"), fmt.Sprint(left)
	})

	// One whose app dies ends too, and takes its window along.
	tray.click(t, app.LabelNewWorkspace)
	d.waitWindow(t, "New workspace", a.exited)
	procs = windowProcesses(t, a.pid)
	if len(procs) != 1 {
		t.Fatalf("window processes %v, want one for New workspace", procs)
	}
	if err := syscall.Kill(a.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The X server drops the window once it sees the process's
	// connection close, a moment after the process has ended.
	guiWaitUntil(t, 10*time.Second, "the window process and its window to end with the app", nil, func() (bool, string) {
		alive, shown := processAlive(procs[0]), d.hasWindow("New workspace")
		return !alive && !shown, fmt.Sprintf("process alive %v, window shown %v", alive, shown)
	})
}

// windowProcesses are the `codehydra-gui ui-window` children of pid, zombies
// among them: the app must reap its window processes.
func windowProcesses(t *testing.T, pid int) []int {
	t.Helper()
	var out []int
	for _, child := range allPids(t) {
		if _, ppid, ok := procStat(child); !ok || ppid != pid {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child))
		if strings.Contains(string(cmdline), "\x00"+daemon.WindowCommand) {
			out = append(out, child)
		}
	}
	return out
}

// mappedGL lists the GL driver files mapped into pid.
func mappedGL(t *testing.T, pid int) []string {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(string(maps), "\n") {
		if f := strings.Fields(line); len(f) >= 6 && glDriver.MatchString(f[5]) && !seen[f[5]] {
			seen[f[5]] = true
			out = append(out, filepath.Base(f[5]))
		}
	}
	return out
}

// processAlive tells whether pid runs (a zombie does not count).
func processAlive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}
