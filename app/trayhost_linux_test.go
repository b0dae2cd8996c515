package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"

	"codehydra/app/internal/uitest"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

// sessionBus starts a private dbus-daemon and returns its address. make
// test installs dbus-daemon (build/setup.sh) and sets CODEHYDRA_REQUIRE_GUI;
// there a skip would hide a broken install.
func sessionBus(t *testing.T) string { return testenv.PrivateBus(t) }

// watcher puts a StatusNotifier watcher on the bus at addr.
func watcher(t *testing.T, addr string, hostRegistered *bool) {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if reply, err := conn.RequestName(sniWatcherName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v %v", sniWatcherName, reply, err)
	}
	if hostRegistered == nil {
		return // owns the name but answers nothing
	}
	_, err = prop.Export(conn, sniWatcherPath, prop.Map{
		sniWatcherName: {sniHostProp: {Value: *hostRegistered, Emit: prop.EmitFalse}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTrayHostIsFoundOnlyWhenAWatcherHasAHost(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name    string
		watcher bool
		host    *bool
		want    bool
	}{
		{"no watcher", false, nil, false},
		{"watcher without host", true, &no, false},
		{"watcher with host", true, &yes, true},
		{"watcher that does not answer", true, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := sessionBus(t)
			if tt.watcher {
				watcher(t, addr, tt.host)
			}
			env := map[string]string{"DBUS_SESSION_BUS_ADDRESS": addr}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if got := hasTrayHost(ctx, func(k string) string { return env[k] }); got != tt.want {
				t.Errorf("hasTrayHost = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTrayHostWithoutABusIsNone(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"XDG_RUNTIME_DIR": dir} // no bus socket in it
	if hasTrayHost(context.Background(), func(k string) string { return env[k] }) {
		t.Error("found a tray host without a session bus")
	}
}

func TestTrayHostGivesUpOnASilentBus(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "bus")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		// Accept and say nothing, like a hung bus.
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	env := map[string]string{"XDG_RUNTIME_DIR": filepath.Dir(sock)}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if hasTrayHost(ctx, func(k string) string { return env[k] }) {
		t.Error("found a tray host on a silent bus")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v; the timeout must bound the check", d)
	}
}

func TestRunWithoutADisplayReturnsErrNoDisplay(t *testing.T) {
	err := Run(context.Background(), Deps{
		Workspaces: uitest.NewWorkspaces(),
		Settings:   nil,
		Getenv:     func(string) string { return "" },
	})
	if err == nil || err == ErrNoDisplay {
		t.Fatalf("Run without Settings = %v, want a missing-deps error", err)
	}
	store := settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
	err = Run(context.Background(), Deps{
		Workspaces: uitest.NewWorkspaces(),
		Settings:   store,
		Getenv:     func(string) string { return "" },
	})
	if err != ErrNoDisplay {
		t.Errorf("Run = %v, want ErrNoDisplay", err)
	}
}

func TestHasDisplayNeedsWaylandOrAnXServerThatIsRunning(t *testing.T) {
	// A socket dir with display :5 running; :6 left a plain file behind.
	dir, err := os.MkdirTemp("", "x11-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "X5"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.WriteFile(filepath.Join(dir, "X6"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		display, wayland string
		want             bool
	}{
		{"", "", false},
		{"", "wayland-0", true},
		{":5", "", true},
		{":5.0", "", true},
		{":7", "", false},         // no server: a DISPLAY left from an ended session
		{":6", "", false},         // not a socket
		{":7", "wayland-0", true}, // Wayland does not need X
		{"otherhost:0", "", true}, // remote: X decides
		{"/tmp/launch-x/org.xquartz:0", "", true},
	} {
		env := map[string]string{"DISPLAY": tt.display, "WAYLAND_DISPLAY": tt.wayland}
		if got := hasDisplay(func(k string) string { return env[k] }, dir); got != tt.want {
			t.Errorf("DISPLAY=%q WAYLAND_DISPLAY=%q: hasDisplay = %v, want %v", tt.display, tt.wayland, got, tt.want)
		}
	}
}
