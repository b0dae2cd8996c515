package app

import (
	"fmt"
	"log/slog"

	"fyne.io/fyne/v2"

	"codehydra/app/window"
	"codehydra/workspace"
)

// Notice is a desktop notification.
type Notice struct {
	Title   string
	Content string
}

// The titles of the notifications.
const (
	NoticeFinished   = "Agent finished"
	NoticeGaveUp     = "Agent stopped without an answer"
	NoticeNeedsInput = "Agent needs input"
)

// AgentNotices are the notifications that a change of a workspace's agent
// from prev to next calls for: it finished (was busy, now idle) or it asks
// for input (more sessions wait for an answer than before).
func AgentNotices(ws workspace.Workspace, prev, next workspace.AgentStatus) []Notice {
	var notes []Notice
	if next.NeedsInput > prev.NeedsInput {
		notes = append(notes, Notice{NoticeNeedsInput, window.WorkspaceTitle(ws) + " is waiting for your answer."})
	}
	switch {
	case busy(prev) && next.Type == workspace.AgentIdle && next.NeedsInput == 0 && prev.Retry.Sessions > 0:
		// It went idle straight from retrying: opencode gave up on the
		// model, so the turn ended without an answer.
		notes = append(notes, Notice{NoticeGaveUp, fmt.Sprintf("%s gave up after %d attempts: %s",
			window.WorkspaceTitle(ws), prev.Retry.Attempt, prev.Retry.Message)})
	case busy(prev) && next.Type == workspace.AgentIdle && next.NeedsInput == 0:
		notes = append(notes, Notice{NoticeFinished, window.WorkspaceTitle(ws) + " has finished its work."})
	}
	return notes
}

func busy(a workspace.AgentStatus) bool {
	return a.Type == workspace.AgentBusy || a.Type == workspace.AgentMixed
}

// fyneNotifier shows notices with Fyne, which reports no failure (it
// prints them on stderr); the platform's desktopNotifier does better where
// it can.
func fyneNotifier(a fyne.App) func(Notice) error {
	return func(n Notice) error {
		a.SendNotification(fyne.NewNotification(n.Title, n.Content))
		return nil
	}
}

// sendNotices shows notes on the desktop. One that fails goes to the log,
// where a user looking for a missing notification finds why; it is not
// worth a window of its own.
func (t *Tray) sendNotices(notes []Notice) {
	for _, n := range notes {
		if err := t.notifier(n); err != nil {
			t.log.Warn("desktop notification failed", slog.String("title", n.Title), slog.Any("err", err))
		}
	}
}
