package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"

	"codehydra/app"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// requireGUIEnv, set to 1 (make test does), turns the skip for missing
// display tools into a failure, so that CI cannot pass without running the
// GUI test.
const requireGUIEnv = "CODEHYDRA_REQUIRE_GUI"

// guiTools are the programs the GUI test drives the desktop with.
var guiTools = []string{"Xvfb", "dbus-launch", "xdotool", "/usr/bin/import"}

// TestGUITrayMenuSettingsNewWorkspaceAndQuit runs the real binary as a
// user's desktop would: under Xvfb, with a session bus from dbus-launch and
// a StatusNotifier watcher that has a host. It reads and clicks the tray
// menu over D-Bus (com.canonical.dbusmenu, as a panel does), types into the
// New workspace dialog with xdotool, and quits from the menu.
func TestGUITrayMenuSettingsNewWorkspaceAndQuit(t *testing.T) {
	bin, repo := guiSetup(t)
	d := startGUIDesktop(t)
	w := startGUIWatcher(t, d.busAddr)
	a := startGUIApp(t, bin, d, "--project", repo)
	exited, pid, launched := a.exited, a.pid, a.launched

	tray := &trayMenu{conn: w.conn, name: fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", pid)}
	projectName := filepath.Base(repo)

	// (a) The tray registers and its menu has the expected entries.
	var menu trayItem
	guiWaitUntil(t, 60*time.Second, "the tray menu to show the project and its workspace", exited, func() (bool, string) {
		var err error
		if menu, err = tray.layout(); err != nil {
			return false, err.Error()
		}
		// The app builds its menu item by item, and builds it again as the
		// agent's state changes: the last items (Quit, the workspace's
		// Delete…) say a build is complete.
		ws := trayWorkspace(menu, "feature-x")
		return menu.find(projectName) != nil && ws != nil && ws.find(app.LabelDelete) != nil && menu.find(app.LabelQuit) != nil, menu.String()
	})
	if got := w.registered(); !strings.Contains(got, tray.owner(t)) {
		t.Errorf("the watcher has items %q, not the app's %s", got, tray.owner(t))
	}
	t.Logf("tray ready %v after launch", time.Since(launched).Round(time.Millisecond))
	checkTrayMenu(t, menu, projectName)
	checkTrayItem(t, tray)

	// (b) "Settings…" opens the settings window, and it is drawn.
	tray.click(t, app.LabelSettings)
	settingsWin := d.waitWindow(t, "CodeHydra settings", exited)
	shot := filepath.Join(guiShotDir(t), "settings.png")
	guiWaitUntil(t, 20*time.Second, "the settings window to be drawn", exited, func() (bool, string) {
		st, err := d.screenshot(shot, settingsWin.rect)
		if err != nil {
			return false, err.Error()
		}
		return st.drawn(), fmt.Sprintf("%s in the window's area of %s", st, shot)
	})

	t.Logf("settings window drawn at %v", time.Since(launched).Round(time.Millisecond))

	// (c) A workspace made in the New workspace dialog becomes a worktree
	// and a menu entry.
	updates := tray.watchLayoutUpdates(t)
	tray.click(t, app.LabelNewWorkspace)
	dialog := d.waitWindow(t, "New workspace", exited)
	d.xdotool(t, "windowfocus", "--sync", dialog.id)
	d.xdotool(t, "type", "--delay", "20", "e2e-made")
	// Create stays disabled until the dialog has read the project's
	// branches, and ignores Return until then: press it until the worktree
	// is there.
	guiWaitUntil(t, 30*time.Second, "the New workspace dialog to create e2e-made", exited, func() (bool, string) {
		list := testenv.Git(t, repo, "worktree", "list", "--porcelain") + "\n"
		if strings.Contains(list, "branch refs/heads/e2e-made\n") {
			return true, ""
		}
		// Keys go through XTEST to the focused window: GLFW ignores
		// the synthetic events of `xdotool key --window`.
		d.pressIfOpen(dialog, "Return")
		return false, list
	})
	guiWaitUntil(t, 30*time.Second, "the tray menu to show e2e-made", exited, func() (bool, string) {
		var err error
		if menu, err = tray.layout(); err != nil {
			return false, err.Error()
		}
		return trayWorkspace(menu, "e2e-made") != nil, menu.String()
	})
	select {
	case <-updates:
	case <-time.After(10 * time.Second):
		t.Error("the app changed its menu without emitting com.canonical.dbusmenu.LayoutUpdated; panels would not redraw it")
	}
	guiWaitUntil(t, 10*time.Second, "the New workspace dialog to close", exited, func() (bool, string) {
		return !d.hasWindow("New workspace"), ""
	})

	t.Logf("workspace created through the dialog at %v", time.Since(launched).Round(time.Millisecond))

	// (d) Quit ends the app cleanly and removes the instance file.
	if !testenv.Exists(paths.InstanceFile()) {
		t.Fatal("no instance file while the app runs")
	}
	tray.click(t, app.LabelQuit)
	guiWaitExit(t, exited, "Quit")
	if testenv.Exists(paths.InstanceFile()) {
		t.Error("instance file left after Quit")
	}
}

// guiSetup skips the test when the desktop tools are missing (or fails it
// under CODEHYDRA_REQUIRE_GUI=1), builds the binary, isolates the app's
// files and makes a project with one workspace, feature-x.
func guiSetup(t *testing.T) (bin, repo string) {
	t.Helper()
	required := os.Getenv(requireGUIEnv) == "1"
	if testing.Short() && !required {
		t.Skip("builds the binary and starts an X server")
	}
	var missing []string
	for _, tool := range guiTools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("the GUI test needs %s (build/setup.sh installs them: xvfb dbus-x11 xdotool imagemagick)", strings.Join(missing, ", "))
		testenv.CannotRun(t, requireGUIEnv, "%s", msg)
	}

	bin = builtApp(t)
	isolate(t)
	repo = testenv.GitRepo(t, "repo")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "feature-x", filepath.Join(t.TempDir(), "feature-x"))
	// No agents: the test is about the UI, and opencode is slow to start.
	testenv.WriteSettings(t, `{"opencodeBin": "/nonexistent/opencode"}`)
	return bin, repo
}

// guiSetupWithOpencode is guiSetup with the real opencode as the agents'
// (the test is skipped without it, or fails under
// CODEHYDRA_REQUIRE_OPENCODE=1); give it a model with opencodeModelEnv.
func guiSetupWithOpencode(t *testing.T) (bin, repo string) {
	t.Helper()
	oc := testenv.RealOpencode(t)
	bin, repo = guiSetup(t)
	set, err := json.Marshal(map[string]any{"opencodeBin": oc})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSettings(t, string(set))
	return bin, repo
}

// guiShotDir is where the test's screenshots go: $CODEHYDRA_GUI_SHOTS when
// set (to look at them, e.g. after a failure in CI), else a temp folder.
func guiShotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CODEHYDRA_GUI_SHOTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// guiWaitExit waits up to 30 s for the app to exit, after what (a signal
// or a menu item), and fails unless its status is 0.
func guiWaitExit(t *testing.T, exited chan error, what string) {
	t.Helper()
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("the app exited with %v after %s, want 0", err, what)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the app did not exit within 30 s of %s", what)
	}
}

// guiApp is the app running on a test desktop.
type guiApp struct {
	pid      int
	launched time.Time
	// exited gets Wait's result; whoever takes it puts it back.
	exited chan error
	// stderr is what the app printed there so far.
	stderr stderrFile
}

// stderrFile is the text of a file, read anew each time. A child's stderr
// that is a file, not a pipe some goroutine copies, holds what the child
// wrote before it answered anything: what a test reads after an answer
// is all there.
type stderrFile string

func (f stderrFile) String() string {
	b, _ := os.ReadFile(string(f))
	return string(b)
}

// tray is the app's tray menu as the panel on conn sees it.
func (a *guiApp) tray(conn *dbus.Conn) *trayMenu {
	return &trayMenu{conn: conn, name: fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", a.pid), appStderr: a.stderr}
}

// startGUIApp runs the binary on the desktop; it is killed when the test
// ends, and a failing test shows its output and log.
func startGUIApp(t *testing.T, bin string, d *guiDesktop, args ...string) *guiApp {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = d.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout testenv.SyncBuffer
	stderr := stderrFile(filepath.Join(t.TempDir(), "stderr"))
	errFile, err := os.Create(string(stderr))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close() // the child has its own copy
	cmd.Stdout, cmd.Stderr = &stdout, errFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &guiApp{pid: cmd.Process.Pid, launched: time.Now(), exited: make(chan error, 1), stderr: stderr}
	go func() { a.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-a.pid, syscall.SIGKILL)
		err := <-a.exited
		a.exited <- err
	})
	t.Cleanup(func() {
		if t.Failed() {
			logFile, _ := os.ReadFile(paths.LogFile())
			t.Logf("app stdout:\n%s\napp stderr:\n%s\napp log:\n%s", &stdout, stderr, logFile)
		}
	})
	return a
}

// TestGUIWithoutTrayHostShowsTheMainWindow: on a desktop whose session bus
// has no StatusNotifier host (MATE, a bare X server) a tray icon would be
// invisible, so the app shows its main window instead.
func TestGUIWithoutTrayHostShowsTheMainWindow(t *testing.T) {
	bin, repo := guiSetup(t)
	d := startGUIDesktop(t)
	a := startGUIApp(t, bin, d, "--project", repo)
	win := d.waitWindow(t, "CodeHydra", a.exited)
	shot := filepath.Join(guiShotDir(t), "main-window.png")
	// It first says "Loading…", then shows the menu as buttons.
	guiWaitUntil(t, 20*time.Second, "the main window to show the menu", a.exited, func() (bool, string) {
		st, err := d.screenshot(shot, win.rect)
		if err != nil {
			return false, err.Error()
		}
		return st.drawn(), fmt.Sprintf("%s in the window's area of %s", st, shot)
	})
	conn, err := dbus.Connect(d.busAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var names []string
	if err := conn.BusObject().Call("org.freedesktop.DBus.ListNames", 0).Store(&names); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "org.kde.StatusNotifierItem-") {
			t.Errorf("without a tray host the app still put %s on the bus", n)
		}
	}

	if err := syscall.Kill(a.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	guiWaitExit(t, a.exited, "SIGTERM")
}

// checkTrayMenu checks the entries of a menu for one project with a
// workspace feature-x.
func checkTrayMenu(t *testing.T, menu trayItem, projectName string) {
	t.Helper()
	if len(menu.children) == 0 || !strings.HasPrefix(menu.children[0].label, "CodeHydra: ") {
		t.Errorf("the menu does not start with the summary line:\n%s", menu)
	}
	for _, label := range []string{projectName, app.LabelNewWorkspace, app.LabelAddProject, app.LabelSettings, app.LabelCopyMCPConfig, app.LabelQuit} {
		if menu.find(label) == nil {
			t.Errorf("the menu has no %q:\n%s", label, menu)
		}
	}
	if p := menu.find(projectName); p != nil && (len(p.children) == 0 || p.children[0].label != app.LabelNewWorkspaceHere) {
		t.Errorf("the project header %q does not open the project's actions:\n%s", projectName, menu)
	}
	ws := trayWorkspace(menu, "feature-x")
	var actions []string
	for _, c := range ws.children {
		actions = append(actions, c.label)
	}
	for _, want := range []string{app.LabelOpenAgent, app.LabelCopyPath, app.LabelCopyAttach, app.LabelRestartAgent, app.LabelDelete} {
		if !guiContains(actions, want) {
			t.Errorf("workspace %q has actions %q, missing %q", ws.label, actions, want)
		}
	}
	var clients []string
	if c := menu.find(app.LabelCopyMCPConfig); c != nil {
		for _, it := range c.children {
			clients = append(clients, it.label)
		}
	}
	for _, id := range mcp.Clients() {
		if want := mcp.ClientTitle(id); !guiContains(clients, want) {
			t.Errorf("Copy MCP config offers %q, missing %q", clients, want)
		}
	}
}

// checkTrayItem checks what a panel draws: an icon, and the summary as the
// tooltip.
func checkTrayItem(t *testing.T, tray *trayMenu) {
	t.Helper()
	obj := tray.conn.Object(tray.name, "/StatusNotifierItem")
	var pixmaps []struct {
		W, H int32
		Data []byte
	}
	if err := obj.StoreProperty("org.kde.StatusNotifierItem.IconPixmap", &pixmaps); err != nil {
		t.Fatalf("read the tray icon: %v", err)
	}
	if len(pixmaps) == 0 || pixmaps[0].W == 0 || len(pixmaps[0].Data) == 0 {
		t.Error("the tray item has no icon")
	}
	var tip struct {
		Icon   string
		Pixmap []struct {
			W, H int32
			Data []byte
		}
		Title, Text string
	}
	if err := obj.StoreProperty("org.kde.StatusNotifierItem.ToolTip", &tip); err != nil {
		t.Fatalf("read the tooltip: %v", err)
	}
	if !strings.HasPrefix(tip.Title, "CodeHydra: 1 workspace") {
		t.Errorf("tooltip %q, want the summary of 1 workspace", tip.Title)
	}
}

// trayWorkspaceLabel matches a workspace entry: "<mark> <name> (<phase>)",
// with ", ready for review" and ", unconfined" after the phase where they
// apply.
var trayWorkspaceLabel = regexp.MustCompile(`^(\S+) (.+) \(([^(),]+)(?:, ` + app.LabelReadyForReview + `)?(?:, ` + app.LabelUnconfined + `)?\)$`)

// trayWorkspace is the menu entry of the named workspace, nil when there
// is none or its mark does not fit its phase.
func trayWorkspace(menu trayItem, name string) *trayItem {
	for i := range menu.children {
		it := &menu.children[i]
		m := trayWorkspaceLabel.FindStringSubmatch(it.label)
		if m != nil && m[2] == name && app.Phase(m[3]).Mark() == m[1] && len(it.children) > 0 {
			return it
		}
	}
	return nil
}

func guiContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// guiWaitUntil polls cond until it holds; it fails the test at the deadline,
// or as soon as the app exits, with cond's last explanation.
func guiWaitUntil(t *testing.T, limit time.Duration, what string, exited chan error, cond func() (ok bool, why string)) {
	t.Helper()
	var why string
	// Each try reads the tray over D-Bus or takes a screenshot: 100 ms apart.
	held := testenv.Poll(limit, 100*time.Millisecond, func() bool {
		var ok bool
		if ok, why = cond(); ok {
			return true
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the app exited (%v) while waiting for %s; last: %s", err, what, why)
		default:
		}
		return false
	})
	if !held {
		t.Fatalf("no %s within %v; last: %s", what, limit, why)
	}
}

// guiDesktop is an X server and a session bus, stopped when the test ends.
type guiDesktop struct {
	display string // ":N"
	busAddr string
	env     []string
}

// startGUIDesktop starts Xvfb on a free display and a session bus with
// dbus-launch.
func startGUIDesktop(t *testing.T) *guiDesktop {
	t.Helper()
	// -displayfd lets the server pick a free display and tell it, so
	// parallel runs never race for one.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// -noreset: an X server resets when its last client leaves, and a
	// client that connects during the reset (the app, right after a probe
	// of xdotool's) fails to open the display; seen under load in make test.
	xvfb := exec.Command("Xvfb", "-displayfd", "3", "-noreset", "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	xvfb.ExtraFiles = []*os.File{w}
	xvfb.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var xlog testenv.SyncBuffer
	xvfb.Stdout, xvfb.Stderr = &xlog, &xlog
	if err := xvfb.Start(); err != nil {
		t.Fatalf("start Xvfb: %v", err)
	}
	w.Close()
	t.Cleanup(func() { killGroup(xvfb) })
	number := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		r.Close()
		number <- strings.TrimSpace(line)
	}()
	var n string
	select {
	case n = <-number:
	case <-time.After(30 * time.Second):
	}
	if _, err := strconv.Atoi(n); err != nil {
		t.Fatalf("Xvfb gave no display number (%q):\n%s", n, &xlog)
	}
	d := &guiDesktop{display: ":" + n}

	// dbus-launch leaves the daemon in a process group of its own, which
	// the services it activates join; a helper that watches the X server
	// stays in dbus-launch's group.
	launch := exec.Command("dbus-launch", "--sh-syntax")
	launch.Env = append(os.Environ(), "DISPLAY="+d.display)
	launch.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := launch.Output()
	t.Cleanup(func() { _ = syscall.Kill(-launch.Process.Pid, syscall.SIGTERM) })
	if err != nil {
		t.Fatalf("dbus-launch: %v", err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(DBUS_SESSION_BUS_\w+)='?([^';\n]*)'?;`).FindAllStringSubmatch(string(out), -1) {
		vars[m[1]] = m[2]
	}
	busPID, err := strconv.Atoi(vars["DBUS_SESSION_BUS_PID"])
	if err != nil || vars["DBUS_SESSION_BUS_ADDRESS"] == "" {
		t.Fatalf("dbus-launch printed no bus:\n%s", out)
	}
	t.Cleanup(func() { _ = syscall.Kill(-busPID, syscall.SIGTERM) })
	d.busAddr = vars["DBUS_SESSION_BUS_ADDRESS"]
	d.env = append(os.Environ(), "DISPLAY="+d.display, "DBUS_SESSION_BUS_ADDRESS="+d.busAddr)
	return d
}

// killGroup stops a command started with Setpgid, and everything it
// started, and reaps it: SIGTERM first, so that Xvfb removes its socket and
// lock file, then SIGKILL after a few seconds.
func killGroup(cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// run runs a desktop tool with a time limit.
func (d *guiDesktop) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = d.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (d *guiDesktop) xdotool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := d.run("xdotool", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pressIfOpen focuses w and presses keys, as a user does again while a
// dialog stays open; a window that closed meanwhile (its work done
// between the check and the keys) is no error.
func (d *guiDesktop) pressIfOpen(w guiWindow, keys ...string) {
	if _, err := d.run("xdotool", "windowfocus", "--sync", w.id); err != nil {
		return
	}
	_, _ = d.run("xdotool", append([]string{"key"}, keys...)...)
}

// guiWindow is a top-level X window.
type guiWindow struct {
	id   string
	rect image.Rectangle
}

// findWindow is the visible window named name.
func (d *guiDesktop) findWindow(name string) (guiWindow, error) {
	out, err := d.run("xdotool", "search", "--onlyvisible", "--name", "^"+regexp.QuoteMeta(name)+"$")
	if err != nil {
		return guiWindow{}, err
	}
	id := strings.Fields(out)[0]
	out, err = d.run("xdotool", "getwindowgeometry", "--shell", id)
	if err != nil {
		return guiWindow{}, err
	}
	g := map[string]int{}
	for _, line := range strings.Fields(out) {
		if k, v, ok := strings.Cut(line, "="); ok {
			g[k], _ = strconv.Atoi(v)
		}
	}
	if g["WIDTH"] == 0 || g["HEIGHT"] == 0 {
		return guiWindow{}, fmt.Errorf("window %s has no size: %s", id, out)
	}
	return guiWindow{id: id, rect: image.Rect(g["X"], g["Y"], g["X"]+g["WIDTH"], g["Y"]+g["HEIGHT"])}, nil
}

func (d *guiDesktop) hasWindow(name string) bool {
	_, err := d.findWindow(name)
	return err == nil
}

func (d *guiDesktop) waitWindow(t *testing.T, name string, exited chan error) guiWindow {
	t.Helper()
	var w guiWindow
	guiWaitUntil(t, 20*time.Second, "window "+name, exited, func() (bool, string) {
		var err error
		w, err = d.findWindow(name)
		if err != nil {
			tree, _ := d.run("xwininfo", "-root", "-children")
			return false, err.Error() + "\n" + tree
		}
		return true, ""
	})
	return w
}

// screenshot takes a screenshot of the whole screen into path with
// ImageMagick's import and describes what is inside rect.
func (d *guiDesktop) screenshot(path string, rect image.Rectangle) (shotStats, error) {
	if _, err := d.run("/usr/bin/import", "-window", "root", path); err != nil {
		return shotStats{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return shotStats{}, err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return shotStats{}, fmt.Errorf("decode %s: %w", path, err)
	}
	rect = rect.Intersect(img.Bounds())
	if rect.Empty() {
		return shotStats{}, fmt.Errorf("window %v is off the screen %v", rect, img.Bounds())
	}
	count := map[[4]uint32]int{}
	most := 0
	var background [4]uint32
	h := sha256.New()
	area := make([]uint64, 0, rect.Dx()*rect.Dy())
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			r, g, b, a := img.At(x, y).RGBA()
			c := [4]uint32{r, g, b, a}
			area = append(area, uint64(r)<<48|uint64(g)<<32|uint64(b)<<16|uint64(a))
			if count[c]++; count[c] > most {
				most, background = count[c], c
			}
			_ = binary.Write(h, binary.LittleEndian, c)
		}
	}
	st := shotStats{colours: len(count), covered: 1 - float64(most)/float64(rect.Dx()*rect.Dy()), background: background, size: rect.Size(), area: area}
	copy(st.pixels[:], h.Sum(nil))
	return st, nil
}

// shotStats describe a window in a screenshot. A window that is mapped but
// not drawn is one colour; one that shows a line of text ("Loading…") has
// a few dozen colours but covers almost nothing of its background.
type shotStats struct {
	colours int      // distinct colours
	covered float64  // share of pixels not of the most common (background) colour
	pixels  [32]byte // SHA-256 of the area's pixels: equal when nothing changed
	// background is the most common colour (16-bit RGBA).
	background [4]uint32
	// area is the area's pixels (16-bit RGBA in one number), row by row,
	// size.X to a row.
	size image.Point
	area []uint64
}

// The most a text caret covers on the test desktop: Fyne draws it one
// pixel wide (two if it falls between pixels) and a line of text tall
// (19 pixels).
const caretWidth, caretHeight = 2, 24

// differs reports whether s shows something o does not, other than a text
// caret. The caret of a focused entry blinks (fades out and in, once a
// second) for as long as the entry has the focus, so shots taken at
// random moments of an unchanging window differ in its pixels (by 19 in
// a column): the caret alone is not a change, and two shots that differ
// only in it agree. A change of anything else, a caret that moved
// included (it is at two places then), is.
func (s shotStats) differs(o shotStats) bool {
	if s.pixels == o.pixels {
		return false
	}
	if s.area == nil || o.area == nil || s.size != o.size {
		return true
	}
	var box image.Rectangle
	for i, c := range s.area {
		if c != o.area[i] {
			x, y := i%s.size.X, i/s.size.X
			if box = box.Union(image.Rect(x, y, x+1, y+1)); box.Dx() > caretWidth || box.Dy() > caretHeight {
				return true
			}
		}
	}
	return false
}

func (s shotStats) String() string {
	return fmt.Sprintf("%d distinct colours, %.1f%% off the background", s.colours, 100*s.covered)
}

// drawn reports whether the window shows real content: text (many
// colours, from anti-aliasing) and widgets (much of it off the
// background), on a background that is not the black of the bare screen
// (a window mapped at the top left but not drawn yet, with the panel's
// strip across it, has the colours and the cover).
func (s shotStats) drawn() bool {
	return s.colours >= 32 && s.covered >= 0.05 && s.background != [4]uint32{0, 0, 0, 0xffff}
}

// guiWatcher is a StatusNotifier watcher with a host, as a panel provides:
// the app shows its tray only when one is there.
type guiWatcher struct {
	conn  *dbus.Conn
	items chan string
}

func startGUIWatcher(t *testing.T, addr string) *guiWatcher {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect to the session bus: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	w := &guiWatcher{conn: conn, items: make(chan string, 16)}
	const name, path = "org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher"
	if err := conn.Export(w, path, name); err != nil {
		t.Fatal(err)
	}
	if _, err := prop.Export(conn, path, prop.Map{name: {
		"IsStatusNotifierHostRegistered": {Value: true},
		"ProtocolVersion":                {Value: int32(0)},
		"RegisteredStatusNotifierItems":  {Value: []string{}},
	}}); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v %v", name, reply, err)
	}
	return w
}

// RegisterStatusNotifierItem is the watcher's method that tray items call.
func (w *guiWatcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	select {
	case w.items <- string(sender) + service:
	default:
	}
	return nil
}

// RegisterStatusNotifierHost is the watcher's method that panels call.
func (w *guiWatcher) RegisterStatusNotifierHost(service string) *dbus.Error { return nil }

// registered lists the items registered so far.
func (w *guiWatcher) registered() string {
	var got []string
	for {
		select {
		case it := <-w.items:
			got = append(got, it)
		default:
			return strings.Join(got, " ")
		}
	}
}

// trayMenu is the app's tray menu as a panel sees it over D-Bus.
type trayMenu struct {
	conn *dbus.Conn
	name string
	// appStderr, when set, is the app's stderr, where the tray library
	// says so when a click named an item of a menu it has just rebuilt
	// (before it answers the click).
	appStderr fmt.Stringer
}

const (
	dbusmenuPath  = "/StatusNotifierMenu"
	dbusmenuIface = "com.canonical.dbusmenu"
)

// owner is the unique bus name of the tray's process.
func (m *trayMenu) owner(t *testing.T) string {
	t.Helper()
	var owner string
	if err := m.conn.BusObject().Call("org.freedesktop.DBus.GetNameOwner", 0, m.name).Store(&owner); err != nil {
		t.Fatalf("owner of %s: %v", m.name, err)
	}
	return owner
}

// layout reads the whole menu with GetLayout. The app builds its menu
// item by item, in order, and again when a workspace changes; a panel
// reading it mid-build sees a part, as a user would for an instant. The
// last item, Quit, says a build is complete: layout waits for it (a
// moment at most) so that what a test checks is a whole menu.
func (m *trayMenu) layout() (trayItem, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		var revision uint32
		var root []any
		call := m.conn.Object(m.name, dbusmenuPath).Call(dbusmenuIface+".GetLayout", 0, int32(0), int32(-1), []string{})
		if err := call.Store(&revision, &root); err != nil {
			return trayItem{}, fmt.Errorf("GetLayout: %w", err)
		}
		menu, err := parseTrayItem(root)
		if err != nil || time.Now().After(deadline) || slices.ContainsFunc(menu.children, func(c trayItem) bool { return c.label == app.LabelQuit }) {
			return menu, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// click sends the "clicked" event to the enabled item labelled label, as a
// panel does when the user picks it.
//
// The app rebuilds its menu when a workspace changes, and each rebuild
// numbers the items anew, so a click sent just as the menu changes names
// an item that is gone; the tray library says so on stderr and drops it.
// A user clicks again in the new menu, and so does click.
func (m *trayMenu) click(t *testing.T, label string) {
	t.Helper()
	m.clickWhere(t, label, func(menu trayItem) *trayItem { return menu.find(label) })
}

// clickWhere clicks the item that find finds in the menu, what names it.
func (m *trayMenu) clickWhere(t *testing.T, what string, find func(menu trayItem) *trayItem) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		// A rebuild of the menu may be under way even with Quit in it:
		// wait (a moment at most) for the item to be there.
		var it *trayItem
		var menu trayItem
		deadline := time.Now().Add(5 * time.Second)
		for {
			var err error
			if menu, err = m.layout(); err != nil {
				t.Fatal(err)
			}
			if it = find(menu); it != nil && it.enabled || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if it == nil || !it.enabled {
			t.Fatalf("no enabled %q in the menu:\n%s", what, menu)
		}
		lost := fmt.Sprintf("no menu item with ID %d\n", it.id)
		before := m.count(lost)
		call := m.conn.Object(m.name, dbusmenuPath).Call(dbusmenuIface+".Event", 0, it.id, "clicked", dbus.MakeVariant(int32(0)), uint32(0))
		// Quit may end the process before it answers.
		if call.Err != nil && what != app.LabelQuit {
			t.Fatalf("click %q: %v", what, call.Err)
		}
		if m.count(lost) == before {
			return
		}
		if attempt == 5 {
			t.Fatalf("click %q: the menu changed under each of %d clicks", what, attempt)
		}
		// layout waits for the rebuilt menu to be whole: no pause needed.
		t.Logf("click %q: item %d went with a menu rebuild; clicking again", what, it.id)
	}
}

// count is how often the app has printed s on stderr; 0 when unknown.
func (m *trayMenu) count(s string) int {
	if m.appStderr == nil {
		return 0
	}
	return strings.Count(m.appStderr.String(), s)
}

// watchLayoutUpdates reports each LayoutUpdated signal of the tray's menu.
func (m *trayMenu) watchLayoutUpdates(t *testing.T) <-chan struct{} {
	t.Helper()
	owner := m.owner(t)
	if err := m.conn.AddMatchSignal(dbus.WithMatchInterface(dbusmenuIface), dbus.WithMatchMember("LayoutUpdated")); err != nil {
		t.Fatal(err)
	}
	signals := make(chan *dbus.Signal, 16)
	m.conn.Signal(signals)
	updates := make(chan struct{}, 1)
	go func() {
		for s := range signals {
			if s.Sender == owner && s.Name == dbusmenuIface+".LayoutUpdated" {
				select {
				case updates <- struct{}{}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { m.conn.RemoveSignal(signals); close(signals) })
	return updates
}

// trayItem is one entry of a dbusmenu layout.
type trayItem struct {
	id       int32
	label    string
	enabled  bool
	children []trayItem
}

// parseTrayItem reads a layout node, (ia{sv}av), as godbus decodes it.
func parseTrayItem(node []any) (trayItem, error) {
	var it trayItem
	var props map[string]dbus.Variant
	var children []dbus.Variant
	if err := dbus.Store(node, &it.id, &props, &children); err != nil {
		return it, fmt.Errorf("menu layout node: %w", err)
	}
	it.label, _ = props["label"].Value().(string)
	it.enabled = true
	if v, ok := props["enabled"].Value().(bool); ok {
		it.enabled = v
	}
	if typ, _ := props["type"].Value().(string); typ == "separator" {
		it.label = "----"
	}
	for _, c := range children {
		fields, ok := c.Value().([]any)
		if !ok {
			return it, errors.New("menu layout child is not a struct")
		}
		child, err := parseTrayItem(fields)
		if err != nil {
			return it, err
		}
		it.children = append(it.children, child)
	}
	return it, nil
}

// find is the first item, at any depth, labelled label.
func (it *trayItem) find(label string) *trayItem {
	for i := range it.children {
		c := &it.children[i]
		if c.label == label {
			return c
		}
		if f := c.find(label); f != nil {
			return f
		}
	}
	return nil
}

// String shows the menu as an indented outline, for failure messages.
func (it trayItem) String() string {
	var b strings.Builder
	var walk func(m trayItem, depth int)
	walk = func(m trayItem, depth int) {
		for _, c := range m.children {
			state := ""
			if !c.enabled {
				state = " [disabled]"
			}
			fmt.Fprintf(&b, "%s%s%s\n", strings.Repeat("  ", depth), c.label, state)
			walk(c, depth+1)
		}
	}
	walk(it, 0)
	return b.String()
}
