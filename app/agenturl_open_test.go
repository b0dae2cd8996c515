package app

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"codehydra/app/internal/uitest"
	"codehydra/app/window"
	"codehydra/internal/testenv"
)

// recOpener records the command lines the browser is asked to run and
// fails each with fail (nil: it works).
type recOpener struct {
	mu   sync.Mutex
	runs [][]string
	fail error
}

func (r *recOpener) run(argv []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, slices.Clone(argv))
	return r.fail
}

func (r *recOpener) got() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs)
}

// openAgentHarness is a tray over one idle workspace whose agent listens
// on 4101 with password pw-4101, and whose browser writes its pages into a
// fresh runtime folder and runs commands through rec, with env as the
// environment.
func openAgentHarness(t *testing.T, rec *recOpener, env map[string]string) (*harness, *testenv.SyncBuffer) {
	t.Helper()
	f, _, agents := uitest.OneWorkspace(uitest.AgentIdle)
	var log testenv.SyncBuffer
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	h.tray.browser.dir = filepath.Join(t.TempDir(), "runtime")
	h.tray.browser.getenv = func(k string) string { return env[k] }
	h.tray.browser.run = rec.run
	h.tray.browser.platform = nil
	h.startTray()
	h.waitFor("the menu", func() bool { return h.view.menu() != nil })
	return h, &log
}

const (
	testAgentURL      = "http://opencode:pw-4101@127.0.0.1:4101/"
	testAgentPassword = "pw-4101"
	// agentURLTitle is the window that shows the address when no browser
	// opens: it is titled after the menu item.
	agentURLTitle = "CodeHydra: " + LabelOpenAgent
)

// noPassword fails when s holds the agent's password in any form a
// browser would take it in.
func noPassword(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range []string{testAgentPassword, base64.StdEncoding.EncodeToString([]byte("opencode:" + testAgentPassword))} {
		if strings.Contains(s, secret) {
			t.Errorf("%s holds the agent's password: %q", what, s)
		}
	}
}

func TestOpenAgentGivesTheOpenerOnlyAPrivatePageThatGoesOnToTheAgent(t *testing.T) {
	rec := &recOpener{}
	h, log := openAgentHarness(t, rec, nil)
	h.tray.browser.keep = 300 * time.Millisecond

	find(h.view.menu(), "○ feat (idle)", LabelOpenAgent).Action()
	h.waitFor("the opener to run", func() bool { return len(rec.got()) == 1 })
	argv := rec.got()[0]
	noPassword(t, "the opener's command line", strings.Join(argv, " "))
	page := argv[len(argv)-1]
	if !slices.Equal(argv, []string{"xdg-open", page}) || filepath.Dir(page) != h.tray.browser.dir {
		t.Fatalf("opener ran %q, want xdg-open with a page in %s", argv, h.tray.browser.dir)
	}
	if fi, err := os.Stat(h.tray.browser.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("runtime folder mode = %v, %v; want 0700", fi.Mode(), err)
	}
	fi, err := os.Stat(page)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("page mode = %v, %v; want 0600", fi.Mode(), err)
	}
	html, _ := os.ReadFile(page)
	for _, want := range []string{
		`<meta http-equiv="refresh" content="0; url=` + testAgentURL + `">`,
		`location.replace("` + testAgentURL + `")`,
		`<meta name="referrer" content="no-referrer">`,
	} {
		if !strings.Contains(string(html), want) {
			t.Errorf("page does not hold %s:\n%s", want, html)
		}
	}
	h.waitFor("the page to be removed after a while", func() bool {
		_, err := os.Stat(page)
		return errors.Is(err, os.ErrNotExist)
	})
	noPassword(t, "the log", log.String())
	if h.windowOpen(agentURLTitle) {
		t.Error("the address window opened although the opener worked")
	}
}

func TestOpenAgentTriesBROWSERThenXdgOpenThenShowsTheAddress(t *testing.T) {
	rec := &recOpener{fail: exec.ErrNotFound}
	h, log := openAgentHarness(t, rec, map[string]string{"BROWSER": "firefox --new-tab %s::w3m"})

	find(h.view.menu(), "○ feat (idle)", LabelOpenAgent).Action()
	h.waitFor("the address window", func() bool { return h.windowOpen(agentURLTitle) })
	runs := rec.got()
	if len(runs) != 3 {
		t.Fatalf("ran %q, want $BROWSER's two commands, then xdg-open", runs)
	}
	page := runs[0][2]
	want := [][]string{{"firefox", "--new-tab", page}, {"w3m", page}, {"xdg-open", page}}
	if !slices.EqualFunc(runs, want, slices.Equal) {
		t.Errorf("ran %q, want %q", runs, want)
	}
	if _, err := os.Stat(page); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the page of a failed open is still there: %v", err)
	}

	w := h.app.Window(agentURLTitle)
	if w == nil {
		t.Fatalf("no window %q", agentURLTitle)
	}
	markup := test.RenderObjectToMarkup(w.Content())
	if !strings.Contains(markup, testAgentURL) {
		t.Errorf("the window does not show the agent's address:\n%s", markup)
	}
	copyURL := uitest.FindButton(w.Content(), window.LabelCopyURL)
	if copyURL == nil {
		t.Fatalf("no button %q in the window", window.LabelCopyURL)
	}
	test.Tap(copyURL)
	if got := h.app.Clipboard().Content(); got != testAgentURL {
		t.Errorf("clipboard = %q, want the agent's address", got)
	}
	if !strings.Contains(log.String(), "no browser could be opened") || !strings.Contains(log.String(), "xdg-open") {
		t.Errorf("the log does not say what failed:\n%s", log)
	}
	noPassword(t, "the log", log.String())
}

func TestOpenAgentRefusesARuntimeFolderThatIsASymlinkAndShowsTheAddress(t *testing.T) {
	rec := &recOpener{}
	h, _ := openAgentHarness(t, rec, nil)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, h.tray.browser.dir); err != nil {
		t.Fatal(err)
	}
	find(h.view.menu(), "○ feat (idle)", LabelOpenAgent).Action()
	h.waitFor("the address window", func() bool { return h.windowOpen(agentURLTitle) })
	if runs := rec.got(); len(runs) != 0 {
		t.Errorf("ran %q with a runtime folder that is a symlink", runs)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("a page was written through the symlink: %v", entries)
	}
}

func TestRedirectPagesGoWhenTheUIStopsAndStaleOnesWithTheNextOpen(t *testing.T) {
	b := &browser{dir: filepath.Join(t.TempDir(), "runtime"), keep: time.Hour}
	now := time.Now()
	stale, err := b.writeRedirect(testAgentURL, now)
	if err != nil {
		t.Fatal(err)
	}
	old := now.Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	page, err := b.writeRedirect(testAgentURL, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a page older than keep survived the next open: %v", err)
	}
	tr := &Tray{browser: b}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tr.removeLater(ctx, page); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("removeLater did not return when the UI stopped")
	}
	if _, err := os.Stat(page); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the page survived the UI: %v", err)
	}
}

func TestStartOpenerReportsAMissingOrFailingCommand(t *testing.T) {
	if err := startOpener([]string{"codehydra-no-such-opener"}); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("a missing opener gave %v, want ErrNotFound", err)
	}
	if err := startOpener([]string{"sh", "-c", "exit 3"}); err == nil {
		t.Error("an opener that exits 3 at once counted as working")
	}
	if err := startOpener([]string{"true"}); err != nil {
		t.Errorf("an opener that exits 0: %v", err)
	}
}
