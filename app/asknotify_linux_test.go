package app

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

// actionService is a notification daemon on a test bus with the
// capabilities caps: it records the notices and their actions, and the
// notices taken back.
type actionService struct {
	conn *dbus.Conn
	caps []string

	mu      sync.Mutex
	actions map[uint32][]string
	titles  map[uint32]string
	closed  []uint32
}

func (s *actionService) GetCapabilities() ([]string, *dbus.Error) { return s.caps, nil }

func (s *actionService) Notify(app string, replaces uint32, icon, summary, body string,
	actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := uint32(len(s.actions) + 1)
	s.actions[id] = actions
	s.titles[id] = summary + ": " + body
	return id, nil
}

func (s *actionService) CloseNotification(id uint32) *dbus.Error {
	s.mu.Lock()
	s.closed = append(s.closed, id)
	s.mu.Unlock()
	_ = s.conn.Emit(notifyPath, notifyName+".NotificationClosed", id, uint32(3))
	return nil
}

// shown is the notice whose text is text: its ID and actions.
func (s *actionService) shown(text string) (uint32, []string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, t := range s.titles {
		if t == text {
			return id, s.actions[id], true
		}
	}
	return 0, nil, false
}

func (s *actionService) wasClosed(id uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.closed, id)
}

// click is the user clicking the action key of notice id.
func (s *actionService) click(t *testing.T, id uint32, key string) {
	t.Helper()
	if err := s.conn.Emit(notifyPath, notifyName+".ActionInvoked", id, key); err != nil {
		t.Fatal(err)
	}
}

// startActionService runs an actionService with caps on a private bus and
// returns it and the bus's address.
func startActionService(t *testing.T, caps ...string) (*actionService, string) {
	t.Helper()
	addr := sessionBus(t)
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	svc := &actionService{conn: conn, caps: caps, actions: map[uint32][]string{}, titles: map[uint32]string{}}
	if err := conn.Export(svc, notifyPath, notifyName); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName(notifyName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v %v", notifyName, reply, err)
	}
	return svc, addr
}

// askingTray is a tray whose notices go to the bus at addr, with one
// workspace whose busy agent then asks reqs.
func askingTray(t *testing.T, addr string, reqs ...workspace.PendingRequest) (*harness, workspace.Workspace, *uitest.Answers, *uitest.Agents, *uitest.Workspaces) {
	t.Helper()
	f, ws, agents := uitest.OneWorkspace(uitest.AgentBusy)
	ans := &uitest.Answers{}
	ans.OnReply(func(a uitest.Answer) {
		agents.Set(a.Path, uitest.AgentBusy)
		f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	})
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Answers: ans})
	getenv := func(k string) string {
		if k == "DBUS_SESSION_BUS_ADDRESS" {
			return addr
		}
		return ""
	}
	h.tray.notifier = desktopNotifier(h.app, getenv)
	h.tray.asker = desktopAsker(getenv)
	h.startTray()
	agents.Set(ws.Path, asking(reqs...))
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	return h, ws, ans, agents, f
}

func TestANotificationsAllowOnceAnswersThePermission(t *testing.T) {
	svc, addr := startActionService(t, "actions", "body")
	h, ws, ans, _, _ := askingTray(t, addr, rmBuild)
	var id uint32
	var actions []string
	h.waitFor("the notice", func() bool {
		var ok bool
		id, actions, ok = svc.shown(NoticeNeedsInput + ": proj / feat asks: Allow bash: rm -rf build?")
		return ok
	})
	if want := []string{"once", LabelAllowOnce, "reject", LabelReject}; !slices.Equal(actions, want) {
		t.Errorf("the notice's actions are %q, want %q", actions, want)
	}
	svc.click(t, id, "once")
	h.waitFor("the answer", func() bool { return len(ans.Got()) == 1 })
	want := uitest.Answer{Path: ws.Path, ID: rmBuild.ID, Reply: workspace.Reply{Permission: workspace.AllowOnce}}
	if got := ans.Got()[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("answer %+v, want %+v", got, want)
	}
	h.waitFor("the agent busy again", func() bool {
		return find(h.view.menu(), WorkspaceLabel(WorkspaceState{Workspace: ws, Agent: uitest.AgentBusy})) != nil
	})
}

func TestAQuestionsNotificationOpensItsWindow(t *testing.T) {
	svc, addr := startActionService(t, "actions", "body")
	h, _, ans, _, _ := askingTray(t, addr, goOn)
	var id uint32
	var actions []string
	h.waitFor("the notice", func() bool {
		var ok bool
		id, actions, ok = svc.shown(NoticeNeedsInput + ": proj / feat asks: Go on? (and 3 more)")
		return ok
	})
	if want := []string{"open", LabelOpenQuestion}; !slices.Equal(actions, want) {
		t.Errorf("the notice's actions are %q, want %q", actions, want)
	}
	svc.click(t, id, "open")
	h.waitFor("the question's window", func() bool { return h.windowOpen("CodeHydra: proj / feat asks") })
	if len(ans.Got()) != 0 {
		t.Errorf("opening the question answered it: %+v", ans.Got())
	}
}

func TestARequestAnsweredElsewhereTakesItsNotificationBack(t *testing.T) {
	svc, addr := startActionService(t, "actions", "body")
	h, ws, _, agents, f := askingTray(t, addr, rmBuild)
	var id uint32
	h.waitFor("the notice", func() bool {
		var ok bool
		id, _, ok = svc.shown(NoticeNeedsInput + ": proj / feat asks: Allow bash: rm -rf build?")
		return ok
	})
	// The user answered in the agent's web UI.
	agents.Set(ws.Path, uitest.AgentBusy)
	f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
	h.waitFor("the notice taken back", func() bool { return svc.wasClosed(id) })
}

func TestWithoutActionsARequestsNoticeGoesOutPlain(t *testing.T) {
	svc, addr := startActionService(t, "body")
	h, _, _, _, _ := askingTray(t, addr, rmBuild)
	h.waitFor("the notice", func() bool {
		_, actions, ok := svc.shown(NoticeNeedsInput + ": proj / feat asks: Allow bash: rm -rf build?")
		if ok && len(actions) != 0 {
			t.Fatalf("a service without actions was sent %q", actions)
		}
		return ok
	})
}

func TestANotificationActionFromAnotherClientIsNotAnAnswer(t *testing.T) {
	svc, addr := startActionService(t, "actions", "body")
	h, ws, ans, _, _ := askingTray(t, addr, rmBuild)
	var id uint32
	h.waitFor("the notice", func() bool {
		var ok bool
		id, _, ok = svc.shown(NoticeNeedsInput + ": proj / feat asks: Allow bash: rm -rf build?")
		return ok
	})
	forger, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forger.Close() })
	if err := forger.Emit(notifyPath, notifyName+".ActionInvoked", id, workspace.AllowAlways); err != nil {
		t.Fatal(err)
	}
	// The bus handles a client's messages in order: once this call is
	// answered, the forged signal has been delivered before the real one.
	if err := forger.BusObject().Call("org.freedesktop.DBus.GetId", 0).Err; err != nil {
		t.Fatal(err)
	}
	svc.click(t, id, workspace.AllowOnce)
	h.waitFor("the answer", func() bool { return len(ans.Got()) > 0 })
	want := []uitest.Answer{{Path: ws.Path, ID: rmBuild.ID, Reply: workspace.Reply{Permission: workspace.AllowOnce}}}
	if got := ans.Got(); !reflect.DeepEqual(got, want) {
		t.Errorf("answers %+v, want only the service's %+v", got, want)
	}
}

func TestDeletingAWorkspaceTakesItsRequestsNotificationBack(t *testing.T) {
	svc, addr := startActionService(t, "actions", "body")
	h, ws, _, _, f := askingTray(t, addr, rmBuild)
	var id uint32
	h.waitFor("the notice", func() bool {
		var ok bool
		id, _, ok = svc.shown(NoticeNeedsInput + ": proj / feat asks: Allow bash: rm -rf build?")
		return ok
	})
	if err := f.Delete(context.Background(), ws.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the notice taken back", func() bool { return svc.wasClosed(id) })
}
