package window

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"codehydra/app/internal/uitest"
	"codehydra/internal/sandbox"
	"codehydra/internal/settings"
	"codehydra/workspace"
)

func newStore(t *testing.T) (*settings.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "settings.json")
	st := settings.NewStore(path)
	if err := st.Load(); err != nil {
		t.Fatal(err)
	}
	return st, path
}

func TestSettingsSaveWritesTheFileAndReopeningShowsIt(t *testing.T) {
	store, path := newStore(t)
	if err := store.Update(func(s *settings.Settings) { s.Projects = []string{"/src/proj"} }); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	restarts := 0
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store, Restart: func() { restarts++ }})
	w := h.u.openSettings()

	if w.mcpMode.Selected != portDynamic || !w.mcpPort.Disabled() {
		t.Errorf("defaults: MCP port mode %q (entry disabled %v), want dynamic", w.mcpMode.Selected, w.mcpPort.Disabled())
	}
	w.mcpMode.SetSelected(portFixed)
	test.Type(w.mcpPort, "4711")
	w.ocMode.SetSelected(portFixed)
	test.Type(w.ocPort, "5000")
	test.Type(w.worktreeRoot, root)
	w.notifications.SetChecked(false)
	w.preventSleep.SetChecked(false)
	w.ratePerSecond.SetText("")
	test.Type(w.ratePerSecond, "2.5")
	w.rateBurst.SetText("")
	test.Type(w.rateBurst, "8")
	test.Tap(w.save)

	if w.status.Text != "Saved." {
		t.Fatalf("status = %q", w.status.Text)
	}
	if !strings.Contains(w.restartNote.Text, "MCP port") || !strings.Contains(w.restartNote.Text, "computer awake") || !w.restartNow.Visible() {
		t.Errorf("restart note %q (button visible %v), want it to name the MCP port and offer a restart", w.restartNote.Text, w.restartNow.Visible())
	}
	test.Tap(w.restartNow)
	if restarts != 1 || h.app.Quits() != 1 {
		t.Errorf("Restart now: %d restarts, %d quits; want Deps.Restart called and the UI quit", restarts, h.app.Quits())
	}

	onDisk, err := settings.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := settings.Default()
	want.MCPPort, want.OpencodeBasePort, want.WorktreeRoot, want.Notifications, want.PreventSleep = 4711, 5000, root, false, false
	want.RateLimit = settings.RateLimit{PerSecond: 2.5, Burst: 8}
	want.Projects = []string{"/src/proj"}
	if !reflect.DeepEqual(onDisk, want) {
		t.Errorf("file holds %+v, want %+v", onDisk, want)
	}

	w.win.Close()
	w2 := h.u.openSettings()
	if w2 == nil || w2 == w {
		t.Fatal("reopening did not build a new window")
	}
	got := []string{w2.mcpMode.Selected, w2.mcpPort.Text, w2.ocMode.Selected, w2.ocPort.Text, w2.worktreeRoot.Text, w2.ratePerSecond.Text, w2.rateBurst.Text}
	if wantText := []string{portFixed, "4711", portFixed, "5000", root, "2.5", "8"}; !slices.Equal(got, wantText) {
		t.Errorf("reopened form shows %q, want %q", got, wantText)
	}
	if w2.notifications.Checked || w2.preventSleep.Checked {
		t.Error("reopened form shows notifications or keeping awake on")
	}

	// Back to dynamic: saved as 0.
	w2.mcpMode.SetSelected(portDynamic)
	test.Tap(w2.save)
	if store.Get().MCPPort != 0 {
		t.Errorf("MCP port = %d, want 0 (dynamic)", store.Get().MCPPort)
	}
}

func TestSettingsRejectInvalidValuesWithoutSaving(t *testing.T) {
	tests := []struct {
		name string
		edit func(w *settingsWindow)
		want string
	}{
		{"port zero", func(w *settingsWindow) { w.mcpMode.SetSelected(portFixed); w.mcpPort.SetText("0") }, "MCP port: enter a port from 1 to 65535"},
		{"port too big", func(w *settingsWindow) { w.ocMode.SetSelected(portFixed); w.ocPort.SetText("70000") }, "OpenCode base port: enter a port from 1 to 65535"},
		{"port not a number", func(w *settingsWindow) { w.mcpMode.SetSelected(portFixed); w.mcpPort.SetText("abc") }, "MCP port: enter a port"},
		{"relative worktree root", func(w *settingsWindow) { w.worktreeRoot.SetText("wt/here") }, "worktree root: wt/here is a relative path"},
		{"missing binary", func(w *settingsWindow) { w.ocBin.SetText("/no/such/opencode") }, "/no/such/opencode does not exist"},
		{"relative binary", func(w *settingsWindow) { w.ocBin.SetText("bin/opencode") }, "bin/opencode is a relative path"},
		{"zero rate", func(w *settingsWindow) { w.ratePerSecond.SetText("0") }, "calls per second as a number above 0"},
		{"bad burst", func(w *settingsWindow) { w.rateBurst.SetText("-1") }, "burst: enter a whole number of 1 or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, path := newStore(t)
			h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store})
			w := h.u.openSettings()
			tt.edit(w)
			test.Tap(w.save)
			if !strings.HasPrefix(w.status.Text, "Not saved.") || !strings.Contains(w.status.Text, tt.want) {
				t.Errorf("status = %q, want %q in it", w.status.Text, tt.want)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the settings file was written: %v", err)
			}
			if !reflect.DeepEqual(store.Get(), settings.Default()) {
				t.Errorf("store changed to %+v", store.Get())
			}
		})
	}
}

func TestSettingsAcceptACommandNameOrAnExistingBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "opencode")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"", "opencode", bin} {
		store, _ := newStore(t)
		h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store})
		w := h.u.openSettings()
		w.ocBin.SetText(v)
		test.Tap(w.save)
		if w.status.Text != "Saved." || store.Get().OpencodeBin != v {
			t.Errorf("binary %q: status %q, saved %q", v, w.status.Text, store.Get().OpencodeBin)
		}
		if w.restartNote.Text != "" && v == "" {
			t.Errorf("nothing changed but the window asks for a restart: %q", w.restartNote.Text)
		}
	}
}

func TestSettingsShowThePortInUseAndWhereOpencodeWasFound(t *testing.T) {
	store, _ := newStore(t)
	if err := store.Update(func(s *settings.Settings) { s.MCPPort = 4711 }); err != nil {
		t.Fatal(err)
	}
	agents := uitest.NewAgents()
	agents.SetBinary("/usr/local/bin/opencode")
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store, MCP: uitest.MCP{InUse: 43210}, Agents: agents})
	w := h.u.openSettings()
	if want := "In use now: 43210 (port 4711 was taken)"; w.mcpInUse.Text != want {
		t.Errorf("in use = %q, want %q", w.mcpInUse.Text, want)
	}
	if want := "Found: /usr/local/bin/opencode"; w.ocFound.Text != want {
		t.Errorf("binary = %q, want %q", w.ocFound.Text, want)
	}
	w.win.Close()

	agents.SetBinary("")
	w = h.u.openSettings()
	if !strings.HasPrefix(w.ocFound.Text, "Not found: install OpenCode") {
		t.Errorf("binary = %q, want a not-found hint", w.ocFound.Text)
	}
	if w.restartNow.Visible() {
		t.Error("Restart now shows before anything was saved")
	}
}

func TestRotateTokenRestartsEveryAgentAndSaysToRecopyConfigs(t *testing.T) {
	f := uitest.NewWorkspaces()
	f.AddWorkspace("proj", "a")
	agents := uitest.NewAgents()
	rotations := 0
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, RotateToken: func() error { rotations++; return nil }})
	w := h.u.openSettings()

	test.Tap(w.rotate)
	q := h.app.AskedQuestion("Rotate the access token?")
	if q == nil {
		t.Fatal("Rotate token… asked for no confirmation")
	}
	if !strings.Contains(q.Message.Text, "copy their config again") {
		t.Errorf("the confirmation does not say that other clients need their config copied again: %q", q.Message.Text)
	}
	test.Tap(q.OK)
	h.waitFor("the rotation", func() bool { return strings.HasPrefix(w.rotateStatus.Text, "Token rotated") })
	if rotations != 1 {
		t.Errorf("%d rotations", rotations)
	}
	if got := agents.Restarted(); !slices.Equal(got, []string{"all"}) {
		t.Errorf("restarted %q, want every agent", got)
	}
	if want := "Token rotated and every agent restarted. Copy the MCP config again for other clients."; w.rotateStatus.Text != want {
		t.Errorf("status = %q, want %q", w.rotateStatus.Text, want)
	}
}

func TestRotateTokenIsOffWithoutATokenAndFailuresAreShown(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()})
	if w := h.u.openSettings(); !w.rotate.Disabled() {
		t.Error("Rotate token is enabled without Deps.RotateToken")
	}
	h2 := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), RotateToken: func() error {
		return workspace.Errorf(workspace.CodeInternal, "write token file: disk full")
	}})
	w := h2.u.openSettings()
	w.rotateToken()
	h2.waitFor("the failure", func() bool { return strings.Contains(w.rotateStatus.Text, "disk full") })
	if w.rotate.Disabled() {
		t.Error("Rotate stays disabled after a failure")
	}
}

func TestSettingsSaveTheSandboxModeAndSayWhatThisSystemCanConfine(t *testing.T) {
	store, path := newStore(t)
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store})
	w := h.u.openSettings()
	if w.sandboxMode.Selected != string(sandbox.ModeAuto) {
		t.Errorf("mode shown %q, want auto by default", w.sandboxMode.Selected)
	}
	if want := SandboxSupport(sandbox.Probe()); w.sandboxInfo.Text != want {
		t.Errorf("info = %q, want %q", w.sandboxInfo.Text, want)
	}
	w.sandboxMode.SetSelected(string(sandbox.ModeRequired))
	test.Tap(w.save)
	onDisk, err := settings.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk.Sandbox.Mode != "required" || !slices.Equal(onDisk.Sandbox.Hidden, settings.DefaultHidden) {
		t.Errorf("saved sandbox %+v, want required with the default hidden list kept", onDisk.Sandbox)
	}
	for _, tc := range []struct {
		st   sandbox.Status
		want string
	}{
		{sandbox.Status{Enforced: true, ABI: 9}, "This system confines agents with Landlock ABI 9. auto"},
		{sandbox.Status{Enforced: true, ABI: 7, UnixSocketFilter: true}, "This system confines agents with Landlock ABI 7, and a seccomp filter that keeps them from unix sockets. auto"},
		{sandbox.Status{Enforced: true, ABI: 7, Gaps: sandbox.GapsOf(7, false, true)},
			"This system confines agents with Landlock ABI 7. Not restricted: connecting to unix sockets by path, such as the session D-Bus, an ssh-agent or X11 (settings sandbox.unixSockets)."},
		{sandbox.Status{Reason: "not confined: not supported on this system"}, "This system cannot confine agents (not supported on this system)."},
	} {
		if got := SandboxSupport(tc.st); !strings.HasPrefix(got, tc.want) {
			t.Errorf("SandboxSupport(%+v) = %q, want it to start %q", tc.st, got, tc.want)
		}
	}
}

func TestSettingsSayThatUnixSocketsAreAllowedWhenTheSettingsAllowThem(t *testing.T) {
	if !sandbox.Probe().Enforced {
		t.Skip("this system confines nothing: there is no gap to say")
	}
	store, _ := newStore(t)
	if err := store.Update(func(s *settings.Settings) { s.Sandbox.UnixSockets = true }); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store})
	w := h.u.openSettings()
	if !strings.Contains(w.sandboxInfo.Text, "Not restricted: connecting to unix sockets by path") ||
		!strings.Contains(w.sandboxInfo.Text, "sandbox.unixSockets") || strings.Contains(w.sandboxInfo.Text, "seccomp filter") {
		t.Errorf("info = %q, want it to say that unix sockets are open by the settings", w.sandboxInfo.Text)
	}
}
