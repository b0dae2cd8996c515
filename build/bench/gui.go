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
}

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
	if ((i == LAUNCHES)); then read -r _; fi
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
	cmd := exec.CommandContext(b.ctx, "bash", "-c", guiScript)
	cmd.Env = append(e.environ(),
		"ROOT="+b.root, "DIR="+filepath.Join(b.tmp, "desktop"), "BIN="+b.bin,
		"SETTINGS="+string(settings), "LAUNCHES="+strconv.Itoa(launches))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	res, err := readLaunches(stdout, stdin, launches, idle)
	stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	if werr := cmd.Wait(); werr != nil || len(res.TrayReady) < launches {
		b.guiNote = fmt.Sprintf("not measured: the desktop script failed (%v): %s", werr, lastLines(stderr.String(), 5))
		return nil
	}
	if err != nil {
		return err
	}
	b.gui = res
	b.say("tray app: menu %s, workspaces listed %s, RSS %d kB", ms(median(res.TrayReady)), ms(median(res.Listed)), res.RSS.RSS)
	return nil
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
			time.Sleep(idle)
			var err error
			res.RSS, err = readRSS(pid, "tray app", 10)
			fmt.Fprintln(stdin)
			if err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// lastLines joins the last n lines of s on one line, for a short error.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
