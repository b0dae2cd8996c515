package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/app"
	"codehydra/internal/testenv"
)

// TestGUINewWorkspaceWithAFirstPromptDeliversItToTheNewAgent
// types a first prompt and an agent into the New workspace dialog under a
// real panel: the prompt is recorded for the new workspace's agent (in
// its worktree's git admin folder) and its submenu tells what became of
// it. The agent is the fake opencode, which takes no prompts, so the
// prompt waits or is reported not delivered, never lost in silence.
func TestGUINewWorkspaceWithAFirstPromptDeliversItToTheNewAgent(t *testing.T) {
	bin, repo := guiSetup(t)
	// The fake opencode: the dialog takes a prompt only where agents run.
	fake := fakeOpencode(t)
	testenv.WriteSettings(t, fmt.Sprintf(`{"opencodeBin": %q}`, fake))
	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	guiWaitUntil(t, 60*time.Second, "the tray menu to show feature-x", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		return trayWorkspace(menu, "feature-x") != nil, menu.String()
	})

	tray.click(t, app.LabelNewWorkspace)
	dialog := d.waitWindow(t, "New workspace", a.exited)
	d.xdotool(t, "windowfocus", "--sync", dialog.id)
	d.xdotool(t, "type", "--delay", "20", "with-prompt")
	// From the name: Tab to "Start from", Tab to the prompt, then the agent.
	d.xdotool(t, "key", "Tab", "Tab")
	d.xdotool(t, "type", "--delay", "10", "Fix the login bug.")
	d.xdotool(t, "key", "Return")
	d.xdotool(t, "type", "--delay", "10", "Then run the tests.")
	d.xdotool(t, "key", "Tab")
	d.xdotool(t, "type", "--delay", "20", "plan")
	guiShot(t, d, filepath.Join(guiShotDir(t), "new-workspace-prompt.png"), dialog, a.exited)

	record := filepath.Join(repo, ".git", "worktrees", "with-prompt", "codehydra-first-prompt.json")
	guiWaitUntil(t, 30*time.Second, "the dialog to create with-prompt and record its prompt", a.exited, func() (bool, string) {
		if b, err := os.ReadFile(record); err == nil {
			return true, string(b)
		}
		d.pressIfOpen(dialog, "Return") // in the agent field: Create
		return false, testenv.Git(t, repo, "worktree", "list")
	})
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `Fix the login bug.\nThen run the tests.`) || !strings.Contains(s, `"agent":"plan"`) {
		t.Errorf("the recorded prompt is %s, want the typed prompt and agent plan", s)
	}

	// The fake opencode takes prompts (POST /session/:id/prompt_async), so
	// the prompt is delivered: the record says so, and the submenu, which
	// tells of a prompt still waiting or not delivered, then says nothing.
	guiWaitUntil(t, 30*time.Second, "with-prompt's prompt delivered, and its submenu quiet about it", a.exited, func() (bool, string) {
		b, _ := os.ReadFile(record)
		if !strings.Contains(string(b), `"state":"delivered"`) {
			return false, string(b)
		}
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		ws := trayWorkspace(menu, "with-prompt")
		if ws == nil {
			return false, menu.String()
		}
		for _, it := range ws.children {
			if it.label == app.LabelPromptPending || strings.HasPrefix(it.label, app.PromptFailedPrefix) {
				return false, menu.String()
			}
		}
		return true, ""
	})
	tray.click(t, app.LabelQuit)
	guiWaitExit(t, a.exited, "Quit")
}
