package app

import (
	"strings"

	"fyne.io/fyne/v2"

	"codehydra/workspace"
)

// The lines a workspace's submenu shows about its first prompt.
const (
	// LabelPromptPending is shown while the prompt waits for the agent to
	// be ready: quietly, as a disabled line, since that is the usual way.
	LabelPromptPending = "first prompt waiting for the agent"
	// PromptFailedPrefix starts the line of a prompt that will not be
	// delivered; the reason follows.
	PromptFailedPrefix = "⚠ first prompt not delivered: "
)

// PromptLine is what the menu says about a workspace's first prompt: why
// it was not delivered, that it waits for the agent, or "" (none, or
// delivered: the agent's own state then tells how the work goes).
func PromptLine(d workspace.PromptDelivery) string {
	switch d.State {
	case workspace.DeliveryFailed:
		return PromptFailedPrefix + oneMenuLine(d.Error)
	case workspace.DeliveryPending:
		return LabelPromptPending
	}
	return ""
}

// promptItems are the first lines of a workspace's submenu about its
// first prompt, with a separator after them; none when there is nothing
// to say.
func promptItems(w WorkspaceState) []*fyne.MenuItem {
	line := PromptLine(w.Prompt)
	if line == "" {
		return nil
	}
	return []*fyne.MenuItem{disabled(line), fyne.NewMenuItemSeparator()}
}

// oneMenuLine is why on one line, cut to fit a menu.
func oneMenuLine(why string) string {
	why = strings.Join(strings.Fields(why), " ")
	if r := []rune(why); len(r) > maxTroubleLen {
		why = string(r[:maxTroubleLen-1]) + "…"
	}
	return why
}
