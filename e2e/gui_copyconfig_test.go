//go:build linux

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/app"
	"codehydra/mcp"
)

// guiNotifier is a desktop's notification server on the test's session
// bus: it records what the app shows.
type guiNotifier struct {
	mu    sync.Mutex
	notes []string
}

// Notify is org.freedesktop.Notifications.Notify.
func (n *guiNotifier) Notify(appName string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes = append(n.notes, summary+": "+body)
	return uint32(len(n.notes)), nil
}

func (n *guiNotifier) shown() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.notes...)
}

func startGUINotifier(t *testing.T, busAddr string) *guiNotifier {
	t.Helper()
	conn, err := dbus.Connect(busAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	n := &guiNotifier{}
	if err := conn.Export(n, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own org.freedesktop.Notifications: %v %v", reply, err)
	}
	return n
}

// TestGUICopiesAWorkingMCPConfigForAWorkspace clicks a workspace's
// "Copy MCP config ▸ Claude Code" over D-Bus, as a panel does, reads the
// clipboard as a paste would, and runs the pasted config as Claude Code
// would: its workspace_get_status answers for that workspace. A
// notification confirms the copy.
func TestGUICopiesAWorkingMCPConfigForAWorkspace(t *testing.T) {
	bin, repo := guiSetup(t)
	if _, err := exec.LookPath("xclip"); err != nil {
		t.Fatal("the test reads the clipboard with xclip; build/setup.sh installs it")
	}
	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	notes := startGUINotifier(t, d.busAddr)
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)

	var menu trayItem
	guiWaitUntil(t, 60*time.Second, "the tray menu to show the workspace", a.exited, func() (bool, string) {
		var err error
		if menu, err = tray.layout(); err != nil {
			return false, err.Error()
		}
		return trayWorkspace(menu, "feature-x") != nil, menu.String()
	})
	if top := menu.find(app.LabelCopyMCPConfig); top == nil || top.find(app.LabelUserConfigScope) == nil {
		t.Errorf("the top-level copy does not say it acts as the user on all projects:\n%s", menu)
	}
	ws := trayWorkspace(menu, "feature-x")
	sub := ws.find(app.LabelCopyWorkspaceMCPConfig)
	if sub == nil || sub.find(app.LabelWorkspaceConfigScope) == nil {
		t.Fatalf("workspace feature-x has no %q submenu that says what it does:\n%s", app.LabelCopyWorkspaceMCPConfig, menu)
	}
	item := sub.find(mcp.ClientTitle(mcp.ClientClaudeCode))
	if item == nil || !item.enabled {
		t.Fatalf("no enabled Claude Code in feature-x's copy submenu:\n%s", menu)
	}
	call := tray.conn.Object(tray.name, dbusmenuPath).Call(dbusmenuIface+".Event", 0, item.id, "clicked", dbus.MakeVariant(int32(0)), uint32(0))
	if call.Err != nil {
		t.Fatal(call.Err)
	}

	var pasted string
	guiWaitUntil(t, 20*time.Second, "the config on the clipboard", a.exited, func() (bool, string) {
		out, err := d.run("xclip", "-selection", "clipboard", "-o")
		pasted = out
		return err == nil && strings.Contains(out, "mcp-stdio"), out
	})
	argv := stdioCommandOf(t, mcp.ClientClaudeCode, []byte(pasted))
	if argv[0] != bin {
		t.Fatalf("the pasted config runs %s, want %s", argv[0], bin)
	}
	run := exec.Command(argv[0], argv[1:]...)
	run.Env = d.env
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "claude-code", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: run}, nil)
	if err != nil {
		t.Fatalf("run the pasted config: %v\n%s", err, pasted)
	}
	defer cs.Close()
	if got, isErr := toolJSON(t, cs, mcp.ToolGetStatus); isErr || !strings.Contains(got, `"name":"feature-x"`) {
		t.Fatalf("%s through the pasted config = %s", mcp.ToolGetStatus, got)
	}

	guiWaitUntil(t, 10*time.Second, "a notification confirming the copy", a.exited, func() (bool, string) {
		got := strings.Join(notes.shown(), "\n")
		return strings.Contains(got, "Copied the Claude Code config for feature-x"), got
	})
}
