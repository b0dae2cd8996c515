package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// guiResult is the tray app on a throwaway desktop (Xvfb and xfce4-panel as
// the StatusNotifier host, from build/desktop.sh).
type guiResult struct {
	TrayReady []time.Duration // exec → the tray menu (over D-Bus) has its Quit item
	Listed    []time.Duration // exec → the menu lists the 10 workspaces
	RSS       rssResult
	// With Settings open: the window process and the tray process; then
	// the tray process after the window closed.
	Window, TrayWindowOpen, TrayAfterWindow rssResult
	// WindowShown is click on Settings… → its window is mapped.
	WindowShown time.Duration
	// Before is the idle tray app of trayBefore, when it could be built.
	Before *rssResult
}

// trayBefore is the last commit whose tray app opened its windows in its
// own process, through Fyne's tray (which opens a hidden GL window): the
// "before" of the lighter tray, built and measured in the same run.
const trayBefore = "c6747be"

// guiScript drives build/desktop.sh: it launches the app $LAUNCHES times,
// printing "ready <menu ms> <workspaces ms> <pid>" when the tray menu is up
// and when it lists the workspaces, and keeps the last launch running until
// a line arrives on stdin.
const guiScript = `
set -euo pipefail
source "$ROOT/build/desktop.sh"
trap desktop_stop EXIT
desktop_start "$DIR" >&2
mkdir -p "$XDG_CONFIG_HOME/codehydra"
printf '%s' "$SETTINGS" >"$XDG_CONFIG_HOME/codehydra/settings.json"
for ((i = 1; i <= LAUNCHES; i++)); do
	t0=$(now_ms)
	app_start "$BIN"
	wait_for 20 "tray menu" tray_has Quit
	t1=$(now_ms)
	wait_for 20 "workspaces in the tray menu" tray_has '.*ws01.*' '.*ws10.*'
	echo "ready $((t1 - t0)) $(($(now_ms) - t0)) $APP_PID"
	if ((i == LAUNCHES)); then
		read -r _
		if [[ "$WINDOW" == 1 ]]; then
			t0=$(now_ms)
			tray_click 'Settings…' >/dev/null
			wait_for 20 "the settings window" window_id "CodeHydra settings"
			t1=$(now_ms)
			child=$(pgrep -P "$APP_PID" -f ui-window | head -n1)
			echo "window $child $((t1 - t0))"
			read -r _
			xdotool windowfocus --sync "$(window_id "CodeHydra settings")" key Escape
			wait_for 20 "the window process to end" pid_gone "$child"
			echo "closed"
			read -r _
		fi
	fi
	pid=$APP_PID
	APP_PID= # wait_for gives up when APP_PID exits
	kill -TERM "$pid"
	wait_for 20 "CodeHydra to exit" pid_gone "$pid"
done
`

// benchGUI launches the tray app on a throwaway desktop and times it until
// its menu is up and lists the workspaces; a machine without the desktop's
// tools gets a note instead of figures.
func (b *bench) benchGUI() error {
	if b.guiNote = b.guiMissing(); b.guiNote != "" {
		return nil
	}
	syscall.Sync() // see benchServer
	e, err := b.newServerEnv("tray")
	if err != nil {
		return err
	}
	if err := e.grow(b.ctx, 10); err != nil {
		return err
	}
	settings, _ := json.Marshal(map[string]any{
		"projects":      []string{e.project},
		"opencodeBin":   filepath.Join(e.dir, "no-opencode-here", "opencode"),
		"notifications": false,
	})
	launches := 3
	idle := 4 * time.Second
	if b.opts.quick {
		launches, idle = 1, time.Second
	}
	res, err := b.runDesktop(e, b.bin, settings, launches, idle, true)
	if err != nil || res == nil {
		return err
	}
	if before, err := b.buildBefore(); err != nil {
		b.notes = append(b.notes, fmt.Sprintf("the tray app of %s (before the lighter tray) was not measured: %v", trayBefore, err))
	} else if old, err := b.runDesktop(e, before, settings, 1, idle, false); err != nil || old == nil {
		b.notes = append(b.notes, fmt.Sprintf("the tray app of %s (before the lighter tray) was not measured: %v %s", trayBefore, err, b.guiNote))
		b.guiNote = ""
	} else {
		old.RSS.Mode = "tray app before (" + trayBefore + ")"
		res.Before = &old.RSS
	}
	b.gui = res
	b.say("tray app: menu %s, workspaces listed %s, RSS %d kB; with Settings open %d kB + its window process %d kB",
		ms(median(res.TrayReady)), ms(median(res.Listed)), res.RSS.RSS, res.TrayWindowOpen.RSS, res.Window.RSS)
	return nil
}

// runDesktop launches bin on a throwaway desktop launches times (see
// guiScript) and measures the last launch; with window, also with
// Settings open and after it closed. A failed desktop script sets
// b.guiNote and returns no result.
func (b *bench) runDesktop(e *serverEnv, bin string, settings []byte, launches int, idle time.Duration, window bool) (*guiResult, error) {
	cmd := exec.CommandContext(b.ctx, "bash", "-c", guiScript)
	cmd.Env = append(e.environ(),
		"ROOT="+b.root, "DIR="+filepath.Join(b.tmp, "desktop"), "BIN="+bin,
		"SETTINGS="+string(settings), "LAUNCHES="+strconv.Itoa(launches), "WINDOW="+strconv.Itoa(btoi(window)))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	res, err := readLaunches(stdout, stdin, launches, idle)
	stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	if werr := cmd.Wait(); werr != nil || len(res.TrayReady) < launches || (window && res.Window.RSS == 0) {
		b.guiNote = fmt.Sprintf("not measured: the desktop script failed (%v): %s", werr, lastLines(stderr.String(), 5))
		return nil, nil
	}
	return res, err
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// buildBefore builds trayBefore from this repository's history into the
// bench's folder and returns the binary.
func (b *bench) buildBefore() (string, error) {
	dir := filepath.Join(b.tmp, "before")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(b.ctx, "bash", "-c", `git -C "$ROOT" archive "$REV" | tar -x -C "$DIR"`)
	archive.Env = append(os.Environ(), "ROOT="+b.root, "REV="+trayBefore, "DIR="+dir)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git archive %s (a shallow clone lacks it): %v: %s", trayBefore, err, lastLines(string(out), 2))
	}
	bin := filepath.Join(dir, "codehydra")
	build := exec.CommandContext(b.ctx, "go", "build", "-o", bin, ".")
	build.Dir, build.Stdout, build.Stderr = dir, b.log, b.log
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build %s: %w", trayBefore, err)
	}
	return bin, nil
}

// guiMissing says why the tray app cannot be measured here, or "" when it
// can.
func (b *bench) guiMissing() string {
	if _, err := os.Stat(filepath.Join(b.root, "build", "desktop.sh")); err != nil {
		return "not measured: build/desktop.sh is missing"
	}
	for _, tool := range []string{"bash", "Xvfb", "dbus-launch", "xfce4-panel", "gdbus", "xdotool"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "not measured: " + tool + " is not installed (run build/setup.sh)"
		}
	}
	return ""
}

// readLaunches reads guiScript's "ready" lines from stdout. After the last
// launch it lets the app idle, reads its memory, and then tells the script
// on stdin to end it.
func readLaunches(stdout io.Reader, stdin io.Writer, launches int, idle time.Duration) (*guiResult, error) {
	res := &guiResult{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != "ready" {
			continue
		}
		menu, _ := strconv.Atoi(f[1])
		listed, _ := strconv.Atoi(f[2])
		pid, _ := strconv.Atoi(f[3])
		res.TrayReady = append(res.TrayReady, time.Duration(menu)*time.Millisecond)
		res.Listed = append(res.Listed, time.Duration(listed)*time.Millisecond)
		if len(res.TrayReady) == launches {
			if err := readWindow(sc, stdin, res, pid, idle); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// readWindow measures the last launch (pid) idle, and when the script
// goes on to open Settings, with it open and after it closed.
func readWindow(sc *bufio.Scanner, stdin io.Writer, res *guiResult, pid int, idle time.Duration) error {
	time.Sleep(idle)
	var err error
	res.RSS, err = readRSS(pid, "tray app", 10)
	fmt.Fprintln(stdin)
	if err != nil {
		return err
	}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "window":
			child, _ := strconv.Atoi(f[1])
			shown, _ := strconv.Atoi(f[2])
			res.WindowShown = time.Duration(shown) * time.Millisecond
			time.Sleep(idle / 2)
			if res.Window, err = readRSS(child, "window process (Settings)", 10); err == nil {
				res.TrayWindowOpen, err = readRSS(pid, "tray app, Settings open", 10)
			}
			fmt.Fprintln(stdin)
		case len(f) == 1 && f[0] == "closed":
			time.Sleep(idle / 2)
			res.TrayAfterWindow, err = readRSS(pid, "tray app, Settings closed", 10)
			fmt.Fprintln(stdin)
			return err
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lastLines joins the last n lines of s on one line, for a short error.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
