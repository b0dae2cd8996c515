package app

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"

	"codehydra/app/internal/uitest"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// notificationService is a notification daemon on a test bus that
// records what it is sent.
type notificationService struct {
	mu    sync.Mutex
	shown []string // "title: body"
	icons []string // the signature and size of each notice's image-data hint
}

func (s *notificationService) Notify(app string, replaces uint32, icon, summary, body string,
	actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shown = append(s.shown, summary+": "+body)
	shape := "none"
	if v, ok := hints["image-data"]; ok {
		shape = "not a struct"
		if f, ok := v.Value().([]any); ok && len(f) == 7 {
			shape = fmt.Sprintf("%vx%v stride %v alpha %v bits %v channels %v bytes %d", f[0], f[1], f[2], f[3], f[4], f[5], len(f[6].([]byte)))
		}
	}
	s.icons = append(s.icons, shape)
	return uint32(len(s.shown)), nil
}

func (s *notificationService) notes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.shown...)
}

func (s *notificationService) iconHints() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.icons...)
}

// finishAgentUnderTray runs a tray whose desktop notifications go to the
// bus at addr, lets its agent finish a turn, and returns the UI's log.
func finishAgentUnderTray(t *testing.T, addr string) string {
	t.Helper()
	f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
	var log testenv.SyncBuffer
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	h.tray.notifier = desktopNotifier(h.app, func(k string) string {
		if k == "DBUS_SESSION_BUS_ADDRESS" {
			return addr
		}
		return ""
	})
	h.startTray()
	for _, st := range []workspace.AgentStatus{uitest.AgentBusy, uitest.AgentIdle} {
		agents.Set(ws.Path, st)
		f.Publish(workspace.Event{Kind: workspace.EventAgentChanged, Workspace: ws})
		h.waitFor("the new status", func() bool {
			return find(h.view.menu(), WorkspaceLabel(WorkspaceState{Workspace: ws, Agent: st})) != nil
		})
	}
	h.drain()
	return log.String()
}

func TestAFailedNotificationIsWrittenToTheLog(t *testing.T) {
	addr := sessionBus(t) // no notification service on it
	log := finishAgentUnderTray(t, addr)
	for _, want := range []string{"desktop notification failed", "title=\"" + NoticeFinished + "\"", "org.freedesktop.Notifications"} {
		if !strings.Contains(log, want) {
			t.Errorf("log does not say %q:\n%s", want, log)
		}
	}
}

func TestANotificationReachesTheDesktopsNotificationService(t *testing.T) {
	addr := sessionBus(t)
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	svc := &notificationService{}
	if err := conn.Export(svc, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.Notifications: %v %v", reply, err)
	}
	log := finishAgentUnderTray(t, addr)
	if got := svc.notes(); len(got) != 1 || !strings.HasPrefix(got[0], NoticeFinished+": ") {
		t.Errorf("the service was sent %q, want one %q", got, NoticeFinished)
	}
	// The service cannot read Fyne's icon cache, so the icon goes inline.
	if sig := noticeHints()["image-data"].Signature().String(); sig != "(iiibiiay)" {
		t.Errorf("image-data is sent as %s, want the spec's (iiibiiay)", sig)
	}
	want := "64x64 stride 256 alpha true bits 8 channels 4 bytes 16384"
	if got := svc.iconHints(); len(got) != 1 || got[0] != want {
		t.Errorf("the notice's image-data hint is %q, want %q", got, want)
	}
	if strings.Contains(log, "notification failed") {
		t.Errorf("log says a notification failed:\n%s", log)
	}
}
