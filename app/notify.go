package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"fyne.io/fyne/v2"

	"codehydra/app/window"
	"codehydra/workspace"
)

// Notice is a desktop notification.
type Notice struct {
	Title   string
	Content string
	// Asks, when set, is the agent's pending request the notice is about:
	// where the notification service takes actions, the notice offers the
	// request's answers (NoticeActions).
	Asks *AskedRequest
}

// AskedRequest is a pending request of the agent of Workspace.
type AskedRequest struct {
	Workspace workspace.Workspace
	Request   workspace.PendingRequest
}

// NoticeAction is a button of a notification: the key it reports when
// clicked, and its label.
type NoticeAction struct{ Key, Label string }

// NoticeActions are the buttons of a notice about a's request: a
// permission's answers, or Open for a question, which takes a window.
// Allow always is left to the menu, which shows what the standing grant
// covers; a button cannot.
func NoticeActions(a AskedRequest) []NoticeAction {
	if a.Request.Kind == workspace.RequestQuestion {
		return []NoticeAction{{noticeOpen, LabelOpenQuestion}}
	}
	return []NoticeAction{{workspace.AllowOnce, LabelAllowOnce}, {workspace.RejectOnce, LabelReject}}
}

// The titles of the notifications.
const (
	NoticeFinished   = "Agent finished"
	NoticeGaveUp     = "Agent stopped without an answer"
	NoticeNeedsInput = "Agent needs input"
)

// AgentNotices are the notifications that a change of a workspace's agent
// from prev to next calls for: it finished (was busy, now idle) or it asks
// for input: one notice per request that next has and prev had not, or,
// for a status that lists no requests, one when more sessions wait for an
// answer than before.
func AgentNotices(ws workspace.Workspace, prev, next workspace.AgentStatus) []Notice {
	var notes []Notice
	for _, r := range next.Requests {
		// A request held for the parent's agent (escalation parent-first)
		// reaches the user only once the hold ends.
		if r.Parent != "" || slices.ContainsFunc(prev.Requests, func(p workspace.PendingRequest) bool { return p.ID == r.ID && p.Parent == "" }) {
			continue
		}
		notes = append(notes, Notice{Title: NoticeNeedsInput, Content: requestContent(ws, r),
			Asks: &AskedRequest{Workspace: ws, Request: r}})
	}
	if len(next.Requests) == 0 && next.NeedsInput > prev.NeedsInput {
		notes = append(notes, Notice{Title: NoticeNeedsInput, Content: window.WorkspaceTitle(ws) + " is waiting for your answer."})
	}
	switch {
	case busy(prev) && next.Type == workspace.AgentIdle && next.NeedsInput == 0 && prev.Retry.Sessions > 0:
		// It went idle straight from retrying: opencode gave up on the
		// model, so the turn ended without an answer.
		notes = append(notes, Notice{Title: NoticeGaveUp, Content: fmt.Sprintf("%s gave up after %d attempts: %s",
			window.WorkspaceTitle(ws), prev.Retry.Attempt, prev.Retry.Message)})
	case busy(prev) && next.Type == workspace.AgentIdle && next.NeedsInput == 0:
		notes = append(notes, Notice{Title: NoticeFinished, Content: window.WorkspaceTitle(ws) + " has finished its work."})
	}
	return notes
}

// requestContent is the text of a notice about r: who asks, and what.
func requestContent(ws workspace.Workspace, r workspace.PendingRequest) string {
	if r.Kind == workspace.RequestQuestion {
		return fmt.Sprintf("%s asks: %s", window.WorkspaceTitle(ws), strings.TrimPrefix(RequestLabel(r), questionPrefix))
	}
	return fmt.Sprintf("%s asks: %s", window.WorkspaceTitle(ws), RequestLabel(r))
}

// ask shows the notice of a pending request until the request is gone
// (withdrawGone) or the UI stops, and answers it as the user clicks.
// t.mu is not held.
func (t *Tray) ask(n Notice) {
	a := *n.Asks
	ctx, cancel := context.WithCancel(t.ctx)
	t.mu.Lock()
	if old, ok := t.asked[a.Request.ID]; ok {
		old()
	}
	t.asked[a.Request.ID] = cancel
	t.mu.Unlock()
	t.background(func(context.Context) {
		defer cancel()
		err := t.asker(ctx, n, func(key string) { t.noticeAction(a, key) })
		if err != nil && ctx.Err() == nil {
			t.log.Warn("desktop notification failed", slog.String("title", n.Title), slog.Any("err", err))
		}
	})
}

// noticeAction does what the button key of a's notice stands for.
func (t *Tray) noticeAction(a AskedRequest, key string) {
	switch key {
	case workspace.AllowOnce, workspace.AllowAlways, workspace.RejectOnce:
		if a.Request.Kind != workspace.RequestQuestion && t.deps.Answers != nil {
			t.answer(a.Workspace, a.Request.ID, workspace.Reply{Permission: key})
		}
	case noticeOpen:
		if a.Request.Kind == workspace.RequestQuestion && t.deps.Answers != nil {
			t.do(func() { t.askQuestion(a.Workspace, a.Request) })
		}
	}
}

// withdrawGone takes back the notices of prev's requests that next no
// longer has (answered, here or elsewhere: by a parent's
// workspace_answer, in opencode's own UI), and closes their question
// windows. t.mu is held.
func (t *Tray) withdrawGone(prev, next workspace.AgentStatus) {
	for _, r := range prev.Requests {
		if slices.ContainsFunc(next.Requests, func(n workspace.PendingRequest) bool { return n.ID == r.ID }) {
			continue
		}
		if cancel, ok := t.asked[r.ID]; ok {
			cancel()
			delete(t.asked, r.ID)
		}
		if r.Kind == workspace.RequestQuestion {
			key := window.Spec{Kind: window.KindElicit, Question: &window.Question{Request: r.ID}}.Key()
			t.do(func() { t.win.Close(key) })
		}
	}
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
