package app

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"fyne.io/fyne/v2"

	"codehydra/app/window"
	"codehydra/workspace"
)

// The attention queue: the pending requests of a workspace's agent (a
// permission it waits for, a question it asks) head its submenu, each
// answered from there, from its question window, or from its desktop
// notification. The labels are stable: tests drive the tray over D-Bus by
// these strings.
const (
	LabelAllowOnce   = "Allow once"
	LabelAllowAlways = "Allow always"
	LabelReject      = "Reject"
	LabelAnswering   = "answering…"
	// LabelAskedParent marks a request held for the parent's agent.
	LabelAskedParent = "asked its parent"
	// LabelOpenQuestion is the notification action that opens a
	// question's window.
	LabelOpenQuestion = "Open"
	permissionPrefix  = "Allow "
	questionPrefix    = "Question: "
)

// noticeOpen is the key of a question notice's action; a permission
// notice's are its replies (workspace.AllowOnce, AllowAlways, RejectOnce).
const noticeOpen = "open"

// Answerer answers the pending requests of the workspaces' agents (the
// supervisor): a permission once, always or not, a question with its
// answers or rejected.
type Answerer interface {
	Answer(ctx context.Context, path, requestID string, r workspace.Reply) error
}

// RequestActions answer a workspace's pending requests; nil ones (no
// Answerer in the app) leave their items disabled.
type RequestActions struct {
	// Reply answers a permission request with workspace.AllowOnce,
	// AllowAlways or RejectOnce.
	Reply func(ws workspace.Workspace, r workspace.PendingRequest, permission string)
	// Ask opens a question's window.
	Ask func(ws workspace.Workspace, r workspace.PendingRequest)
}

// RequestLabel is a pending request's item in its workspace's submenu:
// for a permission, what it asks to do ("Allow bash: rm -rf build?"), for
// a question its first text ("Question: Go on?").
func RequestLabel(r workspace.PendingRequest) string {
	if r.Kind == workspace.RequestQuestion {
		text := ""
		if len(r.Questions) > 0 {
			text = r.Questions[0].Text
			if text == "" {
				text = r.Questions[0].Header
			}
		}
		if n := len(r.Questions); n > 1 {
			text += fmt.Sprintf(" (and %d more)", n-1)
		}
		return questionPrefix + oneMenuLine(text)
	}
	return permissionPrefix + oneMenuLine(permissionWhat(r)) + "?"
}

// permissionWhat is what a permission request asks to do: its tool and
// what it wants (the command, the path).
func permissionWhat(r workspace.PendingRequest) string {
	what := strings.Join(r.Patterns, " ")
	if what == "" {
		what = r.Summary
	}
	switch {
	case what == "":
		return r.Tool
	case r.Tool == "":
		return what
	}
	return r.Tool + ": " + what
}

// heldForParent says that every request a's agent waits on is held for
// its parent's agent (escalation parent-first): the user is not asked yet.
func heldForParent(a workspace.AgentStatus) bool {
	return len(a.Requests) > 0 && !slices.ContainsFunc(a.Requests, func(r workspace.PendingRequest) bool { return r.Parent == "" })
}

// requestItems are the first lines of a workspace's submenu: one item per
// pending request, with a separator after them. A permission's item opens
// Allow once, Allow always and Reject; a question's item opens its window.
// While an answer the tray sent is on its way, its request shows as being
// answered.
func requestItems(w WorkspaceState, a RequestActions) []*fyne.MenuItem {
	reqs := w.Agent.Requests
	if len(reqs) == 0 || w.Deleting {
		return nil
	}
	ws := w.Workspace
	var items []*fyne.MenuItem
	for _, r := range reqs {
		label := RequestLabel(r)
		if r.Parent != "" {
			// The user may answer it all the same.
			label += " (" + LabelAskedParent + ")"
		}
		if slices.Contains(w.Answering, r.ID) {
			items = append(items, disabled(label+" ("+LabelAnswering+")"))
			continue
		}
		if r.Kind == workspace.RequestQuestion {
			var ask func()
			if a.Ask != nil {
				ask = func() { a.Ask(ws, r) }
			}
			items = append(items, actionItem(label, ask))
			continue
		}
		reply := func(p string) func() {
			if a.Reply == nil {
				return nil
			}
			return func() { a.Reply(ws, r, p) }
		}
		var sub []*fyne.MenuItem
		// What it wants, in full, before the choice: the item's label
		// is cut to one line.
		for _, p := range r.Patterns {
			sub = append(sub, disabled(oneMenuLine(p)))
		}
		if len(sub) > 0 {
			sub = append(sub, fyne.NewMenuItemSeparator())
		}
		sub = append(sub,
			actionItem(LabelAllowOnce, reply(workspace.AllowOnce)),
			actionItem(allowAlwaysLabel(r), reply(workspace.AllowAlways)),
			actionItem(LabelReject, reply(workspace.RejectOnce)))
		it := fyne.NewMenuItem(label, nil)
		it.ChildMenu = fyne.NewMenu(label, sub...)
		items = append(items, it)
	}
	return append(items, fyne.NewMenuItemSeparator())
}

// allowAlwaysLabel is the label of r's Allow always: what the standing
// grant covers (opencode's "always" patterns, often wider than the request,
// e.g. "git push *"), so that no rule is granted unseen.
func allowAlwaysLabel(r workspace.PendingRequest) string {
	if len(r.Always) == 0 {
		return LabelAllowAlways
	}
	return oneMenuLine(LabelAllowAlways + ": " + strings.Join(r.Always, ", "))
}

// requestActions are the tray's RequestActions: each answer goes to the
// Answerer in the background, the request showing as being answered
// meanwhile; a failure opens a window.
func (t *Tray) requestActions() RequestActions {
	if t.deps.Answers == nil {
		return RequestActions{}
	}
	return RequestActions{
		Reply: func(ws workspace.Workspace, r workspace.PendingRequest, permission string) {
			t.answer(ws, r.ID, workspace.Reply{Permission: permission})
		},
		Ask: t.askQuestion,
	}
}

// answer sends reply to the request id of ws's agent in the background.
// The request stays in the menu, as being answered, until the agent's
// status drops it (or the answer failed).
func (t *Tray) answer(ws workspace.Workspace, id string, reply workspace.Reply) {
	t.flag(ws.Path, func(s *WorkspaceState) { s.Answering = append(slices.Clone(s.Answering), id) })
	t.background(func(ctx context.Context) {
		err := t.deps.Answers.Answer(ctx, ws.Path, id, reply)
		t.flag(ws.Path, func(s *WorkspaceState) {
			s.Answering = slices.DeleteFunc(slices.Clone(s.Answering), func(a string) bool { return a == id })
		})
		if err != nil {
			t.do(func() { t.win.ShowError("Answer "+window.WorkspaceTitle(ws), err) })
		}
	})
}

// askQuestion opens the window of a question request: its questions as a
// form, whose answer goes to the agent; Reject rejects the question, and
// Later (or closing the window) leaves it waiting.
func (t *Tray) askQuestion(ws workspace.Workspace, r workspace.PendingRequest) {
	q, fields := agentQuestion(ws, r)
	spec := window.Spec{Kind: window.KindElicit, Question: &q, Elicited: func(a window.Answer) {
		switch a.Action {
		case "accept":
			t.answer(ws, r.ID, workspace.Reply{Answers: fields.answers(a.Content)})
		case "decline":
			t.answer(ws, r.ID, workspace.Reply{Reject: true})
		}
	}}
	t.win.Open(spec)
}

// questionFields names the form's properties of each question of a
// request: its choice or text, and the user's own answer beside a
// multiple choice that allows one.
type questionFields []struct{ choice, own string }

// agentQuestion is a question request as a window.Question: one property
// per question, titled by its header, with its text as description. A
// question with options is a choice of them (several when it allows
// several); one that also takes the user's own words offers its options
// as examples beside a free text, or, for several, a text beside the
// choice. One without options is free text.
func agentQuestion(ws workspace.Workspace, r workspace.PendingRequest) (window.Question, questionFields) {
	props := map[string]any{}
	var order []string
	var required []string
	fields := make(questionFields, len(r.Questions))
	for i, q := range r.Questions {
		// Descending names: the form keeps the schema's order only when
		// it is not sorted (a sorted one may have lost it in a map).
		name := fmt.Sprintf("q%03d", 999-i)
		title := q.Header
		if title == "" {
			title = fmt.Sprintf("Question %d", i+1)
		}
		opts := questionOptions(q)
		p := map[string]any{"type": "string", "title": title, "description": q.Text}
		switch {
		case len(opts) > 0 && q.Multiple:
			p = map[string]any{"type": "array", "title": title, "description": q.Text,
				"items": map[string]any{"type": "string", "anyOf": opts}}
			if q.Custom {
				fields[i].own = name + "own"
			}
		case len(q.Options) > 0 && q.Custom:
			p["examples"] = q.Options
		case len(opts) > 0:
			p["oneOf"] = opts
		}
		fields[i].choice = name
		props[name] = p
		order = append(order, name)
		if fields[i].own == "" {
			required = append(required, name)
		} else {
			props[fields[i].own] = map[string]any{"type": "string", "title": title + ": your own answer"}
			order = append(order, fields[i].own)
		}
	}
	return window.Question{Workspace: window.WorkspaceTitle(ws), Request: r.ID, Schema: orderedSchema(order, props, required)}, fields
}

// orderedSchema is an object schema whose properties keep order, which
// the form follows (a map would sort them).
func orderedSchema(order []string, props map[string]any, required []string) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i, name := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		v, _ := json.Marshal(props[name])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	req, _ := json.Marshal(required)
	if required == nil {
		req = []byte("[]")
	}
	b.WriteString(`},"required":`)
	b.Write(req)
	b.WriteString("}")
	return json.RawMessage(b.String())
}

// answers are the agent's answers, one list of labels per question, from
// the form's content.
func (f questionFields) answers(content map[string]any) [][]string {
	out := make([][]string, len(f))
	for i, fld := range f {
		out[i] = []string{}
		switch v := content[fld.choice].(type) {
		case string:
			out[i] = append(out[i], v)
		case []any:
			for _, x := range v {
				out[i] = append(out[i], fmt.Sprint(x))
			}
		}
		if own, ok := content[fld.own].(string); ok && fld.own != "" && own != "" {
			out[i] = append(out[i], own)
		}
	}
	return out
}

// questionOptions are a question's options as a schema's titled
// choices: the label, and its description after it where it has one.
func questionOptions(q workspace.PendingQuestion) []map[string]string {
	var out []map[string]string
	for i, o := range q.Options {
		title := o
		if i < len(q.Descriptions) && q.Descriptions[i] != "" {
			title += ": " + q.Descriptions[i]
		}
		out = append(out, map[string]string{"const": o, "title": title})
	}
	return out
}
