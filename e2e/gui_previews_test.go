//go:build linux

package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"codehydra/app"
	"codehydra/internal/testenv"
)

// TestGUIStartDevServerShowsItsAddressInTheTray runs the built app under
// Xvfb with xfce4-panel, for a project whose settings have a run command
// (python3's http.server on $CODEHYDRA_PORT, the first port of the
// workspace's block, which the submenu shows), and clicks, over D-Bus as the
// panel does, *Start dev server* in feature-x's submenu: the submenu then
// offers "Open http://127.0.0.1:PORT" for the server, which answers there,
// and *Stop dev server*, which takes both away. A screenshot of the open
// menu is taken for a person to look at.
func TestGUIStartDevServerShowsItsAddressInTheTray(t *testing.T) {
	bin, repo := guiSetup(t)
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.CannotRun(t, requireGUIEnv, "the dev server of this test is python3's http.server; install python3")
	}
	fake := fakeOpencode(t)
	// The dev server listens on the workspace's own port, as a project's
	// would: the first of its block, $CODEHYDRA_PORT.
	testenv.WriteSettings(t, fmt.Sprintf(`{"opencodeBin": %q,
		"projectSetup": {%q: {"run": "sh -c 'exec python3 -m http.server --bind 127.0.0.1 \"$CODEHYDRA_PORT\"'"}}}`, fake, repo))

	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)

	openItem := regexp.MustCompile(`^Open (http://127\.0\.0\.1:(\d+))$`)
	// submenu waits until feature-x's submenu satisfies ok, and returns the
	// address its Open item names ("" when none).
	submenu := func(what string, ok func(ws *trayItem, url string) bool) string {
		t.Helper()
		var url string
		guiWaitUntil(t, 60*time.Second, what, a.exited, func() (bool, string) {
			menu, err := tray.layout()
			if err != nil {
				return false, err.Error()
			}
			ws := trayWorkspace(menu, "feature-x")
			if ws == nil {
				return false, menu.String()
			}
			url = ""
			for _, c := range ws.children {
				if m := openItem.FindStringSubmatch(c.label); m != nil {
					url = m[1]
				}
			}
			return ok(ws, url), menu.String()
		})
		return url
	}
	portsLine := regexp.MustCompile(`^Ports (\d+)–\d+$`)
	var first string
	submenu("Start dev server and the port block in feature-x's submenu", func(ws *trayItem, url string) bool {
		for _, c := range ws.children {
			if m := portsLine.FindStringSubmatch(c.label); m != nil {
				first = m[1]
			}
		}
		it := ws.find(app.LabelStartDevServer)
		return it != nil && it.enabled && url == "" && first != ""
	})

	tray.clickIn(t, "feature-x", app.LabelStartDevServer)
	url := submenu("the dev server's address and Stop dev server", func(ws *trayItem, url string) bool {
		return url != "" && ws.find(app.LabelStopDevServer) != nil && ws.find(app.LabelStartDevServer) == nil
	})
	if want := "http://127.0.0.1:" + first; url != want {
		t.Errorf("the dev server's address is %s, want %s, the first port of feature-x's block", url, want)
	}
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatalf("the dev server does not answer at %s: %v", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s/ = %s, want 200", url, resp.Status)
	}
	shotTrayMenu(t, d, filepath.Join(guiShotDir(t), "dev-server-menu.png"), 2)

	tray.clickIn(t, "feature-x", app.LabelStopDevServer)
	submenu("the address gone and Start dev server back", func(ws *trayItem, url string) bool {
		return url == "" && ws.find(app.LabelStartDevServer) != nil
	})
	if _, err := http.Get(url + "/"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("the stopped dev server still answers at %s (%v)", url, err)
	}
}
