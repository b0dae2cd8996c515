package app

import "codehydra/workspace"

// Notice is a desktop notification.
type Notice struct {
	Title   string
	Content string
}

// The titles of the notifications.
const (
	NoticeFinished   = "Agent finished"
	NoticeNeedsInput = "Agent needs input"
)

// AgentNotices are the notifications that a change of a workspace's agent
// from prev to next calls for: it finished (was busy, now idle) or it asks
// for input (more sessions wait for an answer than before).
func AgentNotices(ws workspace.Workspace, prev, next workspace.AgentStatus) []Notice {
	var notes []Notice
	if next.NeedsInput > prev.NeedsInput {
		notes = append(notes, Notice{NoticeNeedsInput, workspaceTitle(ws) + " is waiting for your answer."})
	}
	if busy(prev) && next.Type == workspace.AgentIdle && next.NeedsInput == 0 {
		notes = append(notes, Notice{NoticeFinished, workspaceTitle(ws) + " has finished its work."})
	}
	return notes
}

func busy(a workspace.AgentStatus) bool {
	return a.Type == workspace.AgentBusy || a.Type == workspace.AgentMixed
}
