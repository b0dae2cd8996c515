package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"codehydra/app/window"
	"codehydra/internal/instance"
)

// "Open agent in browser" hands the browser the agent's password, which
// must not go on a command line: any local user can read a process's
// argv. So the credential URL goes into a page only the user can read,
// in the app's private runtime folder, that sends the browser on to it;
// the opener (and the browser) are given only that page's path.

// redirectPrefix starts the name of every redirect page, so that pages a
// crashed run left behind are found and removed.
const redirectPrefix = "open-agent-"

// browser opens pages in the user's browser.
type browser struct {
	// dir is the private folder the redirect pages go in
	// (paths.RuntimeDir()); it is checked to be the user's own and 0700.
	dir string
	// keep is how long a redirect page stays: long enough for a browser
	// that starts cold to read it.
	keep   time.Duration
	getenv func(string) string
	// run starts an opener's command line and reports whether it failed
	// at once (see startOpener).
	run func(argv []string) error
	// platform is the platform's own opener, tried last where there is no
	// xdg-open (macOS, Windows): Fyne's OpenURL.
	platform func(*url.URL) error
}

// openAgent opens the web UI of the agent of the workspace at path. When
// no browser can be started it shows the address in a window instead.
func (t *Tray) openAgent(path string) {
	t.withAgentServer(LabelOpenAgent, path, func(port int, password string) { t.openAgentAt(path, port, password) })
}

// openAgentAt opens the web UI of the ready agent server on port.
func (t *Tray) openAgentAt(path string, port int, password string) {
	link := AgentURL(port, password)
	b := t.browser
	t.background(func(ctx context.Context) {
		page, err := b.writeRedirect(link, time.Now())
		if err == nil {
			if err = b.open(page); err != nil {
				b.remove(page)
			} else {
				t.removeLater(ctx, page)
			}
		}
		if err != nil {
			// err names commands and files, never the link.
			t.log.Warn("no browser could be opened", slog.Any("err", err))
			t.do(func() {
				t.win.Open(window.Spec{Kind: window.KindAgentURL, Title: LabelOpenAgent, Path: path, Link: link})
			})
		}
	})
}

// removeLater removes page once the browser had time to read it, or when
// the UI stops, whichever comes first.
func (t *Tray) removeLater(ctx context.Context, page string) {
	timer := time.NewTimer(t.browser.keep)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	t.browser.remove(page)
}

// writeRedirect writes a page that sends the browser on to link, readable
// by the user alone, and returns its path. It first removes the pages
// older than b.keep that an earlier run may have left.
func (b *browser) writeRedirect(link string, now time.Time) (string, error) {
	if err := instance.EnsureDir(b.dir); err != nil {
		return "", fmt.Errorf("prepare the private folder for the browser page: %w", err)
	}
	b.removeStale(now)
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", fmt.Errorf("name the browser page: %w", err)
	}
	page := filepath.Join(b.dir, redirectPrefix+hex.EncodeToString(id[:])+".html")
	f, err := os.OpenFile(page, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("create the browser page: %w", err)
	}
	_, err = f.WriteString(redirectPage(link))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(page)
		return "", fmt.Errorf("write the browser page %s: %w", page, err)
	}
	return page, nil
}

// redirectPage is an HTML page that goes to link at once: by script, and
// by a meta refresh where scripts are off. It sends no referrer, so the
// link's credentials never reach another site.
func redirectPage(link string) string {
	js, _ := json.Marshal(link) // escapes <, > and & too
	attr := html.EscapeString(link)
	return `<!doctype html>
<html><head><meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0; url=` + attr + `">
<title>CodeHydra: opening the agent</title>
<script>location.replace(` + string(js) + `);</script>
</head><body><p>Opening the agent… <a href="` + attr + `">Go on</a>.</p></body></html>
`
}

// removeStale removes redirect pages older than b.keep.
func (b *browser) removeStale(now time.Time) {
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), redirectPrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > b.keep {
			b.remove(filepath.Join(b.dir, e.Name()))
		}
	}
}

// remove removes a redirect page. A failure is left alone: only the user
// can read the page, and the next removeStale tries again.
func (b *browser) remove(page string) { _ = os.Remove(page) }

// open opens the local page with the first opener that works: each
// command of $BROWSER, then xdg-open (or, outside Linux and the BSDs, the
// platform's own opener). It returns why each failed when none did.
func (b *browser) open(page string) error {
	return b.openTarget(page, &url.URL{Scheme: "file", Path: filepath.ToSlash(page)})
}

// openLink opens an http link as open opens a page: a dev server's, which
// carries no credentials.
func (b *browser) openLink(link string) error {
	u, err := url.Parse(link)
	if err != nil {
		return fmt.Errorf("open %s in a browser: %w", link, err)
	}
	return b.openTarget(link, u)
}

// openTarget opens target (u as the platform's opener takes it).
func (b *browser) openTarget(target string, u *url.URL) error {
	var errs []error
	for _, argv := range b.commands(target) {
		err := b.run(argv)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", argv[0], err))
	}
	if b.platform != nil && !usesXDGOpen() {
		err := b.platform(u)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("open %s in a browser: %w", target, errors.Join(errs...))
}

// commands are the command lines that may open page: $BROWSER's, then
// xdg-open's. $BROWSER is a list of commands separated by ":"; in each,
// %s stands for the page (the page goes last when there is none).
func (b *browser) commands(page string) [][]string {
	var list [][]string
	for cmd := range strings.SplitSeq(b.getenv("BROWSER"), ":") {
		argv := strings.Fields(cmd)
		if len(argv) == 0 {
			continue
		}
		placed := false
		for i, a := range argv {
			if strings.Contains(a, "%s") {
				argv[i] = strings.ReplaceAll(strings.ReplaceAll(a, "%s", page), "%%", "%")
				placed = true
			}
		}
		if !placed {
			argv = append(argv, page)
		}
		list = append(list, argv)
	}
	if usesXDGOpen() {
		list = append(list, []string{"xdg-open", page})
	}
	return list
}

// usesXDGOpen reports whether the desktop opens files with xdg-open.
func usesXDGOpen() bool {
	switch runtime.GOOS {
	case "darwin", "windows", "ios", "android", "js", "wasip1":
		return false
	}
	return true
}

// openerGrace is how long an opener has to fail: xdg-open gives up at
// once when it finds no browser, but may wait for the browser it started.
const openerGrace = 3 * time.Second

// startOpener starts argv and waits openerGrace: an exit with an error in
// that time is a failure, a command still running is taken as a browser
// that is up.
func startOpener(argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	// Reaps the opener whenever it ends, even long after the grace.
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(openerGrace):
		return nil
	}
}
