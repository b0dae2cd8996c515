package app

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"codehydra/app/internal/uitest"
	"codehydra/app/window"
	"codehydra/workspace"
)

var (
	rmBuild = workspace.PendingRequest{ID: "per_1", SessionID: "ses_1", Kind: workspace.RequestPermission,
		Tool: "bash", Summary: "Remove the build", Patterns: []string{"rm -rf build"}}
	goOn = workspace.PendingRequest{ID: "que_1", SessionID: "ses_1", Kind: workspace.RequestQuestion, Questions: []workspace.PendingQuestion{
		{Header: "Go on", Text: "Go on?", Options: []string{"Yes", "No"}, Descriptions: []string{"go on", "stop"}},
		{Header: "Tools", Text: "Which tools?", Options: []string{"make", "go", "npm"}, Multiple: true, Custom: true},
		{Header: "Branch", Text: "Which branch?", Options: []string{"main", "dev"}, Custom: true},
		{Header: "Why", Text: "Why?"},
	}}
)

// asking is the agent status of a turn waiting on reqs.
func asking(reqs ...workspace.PendingRequest) workspace.AgentStatus {
	st := uitest.AgentInput
	st.Requests = reqs
	return st
}

// requestTray is a tray whose one workspace's agent waits on reqs, with
// answers going to the returned fake, which drops each answered request
// from the agent's status as opencode does.
func requestTray(t *testing.T, reqs ...workspace.PendingRequest) (*harness, workspace.Workspace, *uitest.Answers) {
	t.Helper()
	f, ws, agents := uitest.OneWorkspace(asking(reqs...))
	ans := &uitest.Answers{}
	ans.OnReply(func(a uitest.Answer) {
		st := agents.AgentStatus(a.Path)
		st.Requests = slices.DeleteFunc(slices.Clone(st.Requests), func(r workspace.PendingRequest) bool { return r.ID == a.ID })
		if len(st.Requests) == 0 {
			st = uitest.AgentBusy
		}
		agents.Set(a.Path, st)
		f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	})
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Answers: ans})
	h.startTray()
	return h, ws, ans
}

// wsLabel is the label of proj/feat while its agent waits on reqs.
func wsLabel(ws workspace.Workspace, reqs ...workspace.PendingRequest) string {
	return WorkspaceLabel(WorkspaceState{Workspace: ws, Agent: asking(reqs...)})
}

func TestAPermissionRequestHeadsItsWorkspacesSubmenuAndAllowOnceReachesTheAgent(t *testing.T) {
	h, ws, ans := requestTray(t, rmBuild)
	label := wsLabel(ws, rmBuild)
	got := labels(find(h.view.menu(), label).ChildMenu)
	want := []string{"Allow bash: rm -rf build?", "  rm -rf build (off)", "  ---", "  " + LabelAllowOnce, "  " + LabelAllowAlways, "  " + LabelReject, "---"}
	if !slices.Equal(got[:len(want)], want) {
		t.Fatalf("the submenu starts with\n%q\nwant\n%q", got[:len(want)], want)
	}

	ans.Hold()
	find(h.view.menu(), label, "Allow bash: rm -rf build?", LabelAllowOnce).Action()
	h.waitFor("the request shown as being answered", func() bool {
		return find(h.view.menu(), label, "Allow bash: rm -rf build? ("+LabelAnswering+")") != nil
	})
	if it := find(h.view.menu(), label, "Allow bash: rm -rf build? ("+LabelAnswering+")"); !it.Disabled || it.ChildMenu != nil {
		t.Error("a request being answered can be answered again")
	}
	ans.Release()
	busyLabel := WorkspaceLabel(WorkspaceState{Workspace: ws, Agent: uitest.AgentBusy})
	h.waitFor("the request gone and the agent busy again", func() bool { return find(h.view.menu(), busyLabel) != nil })
	for _, l := range labels(h.view.menu()) {
		if strings.Contains(l, "rm -rf build") {
			t.Errorf("the answered request is still in the menu: %q", l)
		}
	}
	if got, want := ans.Got(), []uitest.Answer{{Path: ws.Path, ID: "per_1", Reply: workspace.Reply{Permission: workspace.AllowOnce}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("answers %+v, want %+v", got, want)
	}
}

func TestAllowAlwaysAndRejectAnswerTheirRequest(t *testing.T) {
	// Allow always says what the standing grant covers: opencode's
	// "always" patterns, wider than the request.
	first := rmBuild
	first.Always = []string{"rm *"}
	second := rmBuild
	second.ID, second.Patterns = "per_2", []string{"git push --force"}
	h, ws, ans := requestTray(t, first, second)
	find(h.view.menu(), wsLabel(ws, first, second), "Allow bash: git push --force?", LabelReject).Action()
	h.waitFor("the rejected request gone", func() bool {
		return len(ans.Got()) == 1 && find(h.view.menu(), wsLabel(ws, first), "Allow bash: git push --force? ("+LabelAnswering+")") == nil
	})
	if it := find(h.view.menu(), wsLabel(ws, first), "Allow bash: rm -rf build?", LabelAllowAlways); it != nil {
		t.Errorf("Allow always does not say what it grants: %+v", it)
	}
	find(h.view.menu(), wsLabel(ws, first), "Allow bash: rm -rf build?", LabelAllowAlways+": rm *").Action()
	h.waitFor("both answered", func() bool { return len(ans.Got()) == 2 })
	want := []uitest.Answer{{Path: ws.Path, ID: "per_2", Reply: workspace.Reply{Permission: workspace.RejectOnce}},
		{Path: ws.Path, ID: "per_1", Reply: workspace.Reply{Permission: workspace.AllowAlways}}}
	if got := ans.Got(); !reflect.DeepEqual(got, want) {
		t.Errorf("answers %+v, want %+v", got, want)
	}
}

func TestAFailedAnswerOpensAWindowAndLeavesTheRequestToAnswer(t *testing.T) {
	h, ws, ans := requestTray(t, rmBuild)
	ans.Fail(errors.New("the agent is not ready now"))
	label := wsLabel(ws, rmBuild)
	find(h.view.menu(), label, "Allow bash: rm -rf build?", LabelAllowOnce).Action()
	title := "CodeHydra: Answer proj / feat"
	h.waitFor("the failure's window", func() bool { return h.windowOpen(title) })
	if !strings.Contains(h.app.Texts(title), "not ready") {
		t.Errorf("the window says %q, want why", h.app.Texts(title))
	}
	h.waitFor("the request offered again", func() bool {
		it := find(h.view.menu(), label, "Allow bash: rm -rf build?", LabelAllowOnce)
		return it != nil && !it.Disabled
	})
}

func TestWithoutAnAnswererRequestsAreListedButNotAnswerable(t *testing.T) {
	f, ws, agents := uitest.OneWorkspace(asking(rmBuild, goOn))
	h := newHarness(t, Deps{Workspaces: f, Agents: agents})
	h.startTray()
	label := wsLabel(ws, rmBuild, goOn)
	for _, path := range [][]string{{label, "Allow bash: rm -rf build?", LabelAllowOnce}, {label, "Question: Go on? (and 3 more)"}} {
		if it := find(h.view.menu(), path...); it == nil || !it.Disabled {
			t.Errorf("%q is %+v, want a disabled item", path, it)
		}
	}
}

// questionWindow opens goOn's window from the menu.
func questionWindow(t *testing.T) (*harness, workspace.Workspace, *uitest.Answers, fyne.Window) {
	t.Helper()
	h, ws, ans := requestTray(t, goOn)
	find(h.view.menu(), wsLabel(ws, goOn), "Question: Go on? (and 3 more)").Action()
	title := "CodeHydra: proj / feat asks"
	h.waitFor("the question's window", func() bool { return h.windowOpen(title) })
	texts := h.app.Texts(title)
	for _, want := range []string{"The agent of proj / feat asks:", "Go on *", "Go on?", "Which tools?", "Tools: your own answer", "Which branch?", "Why?"} {
		if !strings.Contains(texts, want) {
			t.Errorf("the window does not show %q:\n%s", want, texts)
		}
	}
	return h, ws, ans, h.app.Window(title)
}

func TestAQuestionsWindowSendsItsAnswersToTheAgent(t *testing.T) {
	h, ws, ans, win := questionWindow(t)
	// The window's text entries (package window's own type), in order.
	type textEntry interface {
		fyne.Focusable
		SetPlaceHolder(string)
	}
	var entries []textEntry
	for _, o := range test.LaidOutObjects(win.Content()) {
		switch w := o.(type) {
		case interface{ SetChecked(bool) }:
			// A choice of several is a check box per option, of package
			// window's own kind (one that scrolls into sight); its label
			// is the embedded widget.Check's Text.
			if text := reflect.Indirect(reflect.ValueOf(w)).FieldByName("Text").String(); text == "make" || text == "npm" {
				w.SetChecked(true)
			}
		case *widget.RadioGroup:
			// The branch's options fill its entry, which takes any text.
			w.SetSelected("dev")
		case interface{ SetSelected(string) }:
			// A choice of one is package window's own kind of
			// widget.Select (one that scrolls into sight). An option
			// shows with its description; its label is the answer.
			w.SetSelected("Yes: go on")
		case textEntry:
			entries = append(entries, w)
		}
	}
	if len(entries) != 3 {
		t.Fatalf("%d text entries, want the own tools, the branch and why", len(entries))
	}
	test.Type(entries[0], "cargo")
	test.Type(entries[2], "to ship")
	uitest.FindButton(win.Content(), "Answer").OnTapped()
	if len(ans.Got()) == 0 {
		t.Logf("window: %s", h.app.Texts(win.Title()))
	}
	h.waitFor("the answer", func() bool { return len(ans.Got()) == 1 })
	want := workspace.Reply{Answers: [][]string{{"Yes"}, {"make", "npm", "cargo"}, {"dev"}, {"to ship"}}}
	if got := ans.Got()[0]; got.ID != "que_1" || got.Path != ws.Path || !reflect.DeepEqual(got.Reply, want) {
		t.Errorf("answer %+v, want %+v", got, want)
	}
}

func TestAQuestionsWindowRejectsOrLeavesTheQuestionWaiting(t *testing.T) {
	h, _, ans, win := questionWindow(t)
	uitest.FindButton(win.Content(), "Answer").OnTapped()
	if len(ans.Got()) != 0 {
		t.Fatalf("an Answer without the required answers went out: %+v", ans.Got())
	}
	uitest.FindButton(win.Content(), "Later").OnTapped()
	h.drain()
	if len(ans.Got()) != 0 || h.windowOpen(win.Title()) {
		t.Fatalf("Later: answers %+v, window open %v; want none, closed", ans.Got(), h.windowOpen(win.Title()))
	}

	find(h.view.menu(), wsLabel(workspace.Workspace{Name: "feat"}, goOn), "Question: Go on? (and 3 more)").Action()
	h.waitFor("the window again", func() bool { return h.windowOpen(win.Title()) })
	uitest.FindButton(h.app.Window(win.Title()).Content(), "Reject").OnTapped()
	h.waitFor("the rejection", func() bool { return len(ans.Got()) == 1 })
	if got := ans.Got()[0].Reply; !got.Reject {
		t.Errorf("Reject answered %+v", got)
	}
}

func TestAgentNoticesOfferEachNewRequestsAnswers(t *testing.T) {
	ws := workspace.Workspace{Name: "feat", Path: "/wt/feat", ProjectPath: "/src/proj"}
	notes := AgentNotices(ws, asking(rmBuild), asking(rmBuild, goOn))
	if len(notes) != 1 || notes[0].Asks == nil || notes[0].Asks.Request.ID != "que_1" {
		t.Fatalf("notices %+v, want one about the new question", notes)
	}
	if want := "proj / feat asks: Go on? (and 3 more)"; notes[0].Content != want {
		t.Errorf("content %q, want %q", notes[0].Content, want)
	}
	if got := NoticeActions(*notes[0].Asks); !reflect.DeepEqual(got, []NoticeAction{{"open", LabelOpenQuestion}}) {
		t.Errorf("a question's actions are %+v, want Open", got)
	}
	notes = AgentNotices(ws, uitest.AgentBusy, asking(rmBuild))
	if len(notes) != 1 || notes[0].Content != "proj / feat asks: Allow bash: rm -rf build?" {
		t.Fatalf("notices %+v, want one about the permission", notes)
	}
	want := []NoticeAction{{"once", LabelAllowOnce}, {"reject", LabelReject}}
	if got := NoticeActions(*notes[0].Asks); !reflect.DeepEqual(got, want) {
		t.Errorf("a permission's actions are %+v, want %+v", got, want)
	}
}

func TestARequestHeldForTheParentIsListedButNeitherNotifiedNorMarked(t *testing.T) {
	ws := workspace.Workspace{Name: "feat", Path: "/wt/feat", ProjectPath: "/src/proj"}
	held := rmBuild
	held.Parent = "/wt/parent"
	if notes := AgentNotices(ws, uitest.AgentBusy, asking(held)); len(notes) != 0 {
		t.Errorf("a held request was notified: %+v", notes)
	}
	if p := (WorkspaceState{Workspace: ws, Agent: asking(held)}).Phase(); p != PhaseBusy {
		t.Errorf("a workspace whose only request is held shows %q, want busy", p)
	}
	// The hold ends: the user is told now.
	if notes := AgentNotices(ws, asking(held), asking(rmBuild)); len(notes) != 1 || notes[0].Asks == nil {
		t.Errorf("the request released to the user gave notices %+v, want one", notes)
	}
	items := labels(fyne.NewMenu("", requestItems(WorkspaceState{Workspace: ws, Agent: asking(held)}, RequestActions{})...))
	if want := "Allow bash: rm -rf build? (" + LabelAskedParent + ")"; items[0] != want {
		t.Errorf("the held request's item is %q, want %q", items[0], want)
	}
}

// A question answered elsewhere (a parent's workspace_answer, opencode's
// own UI) closes its window, and nothing is answered from it.
func TestAQuestionsWindowClosesWhenItIsAnsweredElsewhere(t *testing.T) {
	f, ws, agents := uitest.OneWorkspace(asking(rmBuild, goOn))
	ans := &uitest.Answers{}
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Answers: ans})
	h.startTray()
	find(h.view.menu(), wsLabel(ws, rmBuild, goOn), "Question: Go on? (and 3 more)").Action()
	const title = "CodeHydra: proj / feat asks"
	h.waitFor("the question's window", func() bool { return h.windowOpen(title) })

	// Another request going leaves it open.
	agents.Set(ws.Path, asking(goOn))
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	h.waitFor("the permission request to go", func() bool { return find(h.view.menu(), wsLabel(ws, goOn)) != nil })
	h.drain()
	if !h.windowOpen(title) {
		t.Fatal("the question's window closed when another request was answered")
	}

	agents.Set(ws.Path, uitest.AgentBusy)
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	h.waitFor("the window to close", func() bool { return !h.windowOpen(title) })
	h.drain()
	if got := ans.Got(); len(got) != 0 {
		t.Errorf("closing the window answered %+v", got)
	}
}

// In a window process, the question's window closes at the app's word.
func TestAWindowProcessIsToldToCloseItsQuestion(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()}, "codehydra-window")
	h.startTray()
	q, _ := agentQuestion(workspace.Workspace{Name: "feat"}, goOn)
	spec := window.Spec{Kind: window.KindElicit, Question: &q}
	w := &windowSignals{raise: make(chan struct{}, 1), close: make(chan struct{}, 1)}
	h.tray.procs.mu.Lock()
	h.tray.procs.procs[spec.Key()] = w
	h.tray.procs.mu.Unlock()
	c := serve(t, h.tray.ctx, h.tray.procs.served(spec, w, func() {}))
	closed := make(chan bool, 1)
	go func() {
		closeIt, err := c.WaitRaise()
		closed <- closeIt && err == nil
	}()
	h.tray.mu.Lock()
	h.tray.withdrawGone(asking(goOn), uitest.AgentBusy)
	h.tray.mu.Unlock()
	h.drain()
	select {
	case ok := <-closed:
		if !ok {
			t.Fatal("the window process was told to come forward, not to close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the window process was not told to close")
	}
}
