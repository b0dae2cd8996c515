package app

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
)

// The StatusNotifier watcher: tray icons register with it, and it knows
// whether any host (a panel that draws them) is there.
const (
	sniWatcherName = "org.kde.StatusNotifierWatcher"
	sniWatcherPath = "/StatusNotifierWatcher"
	sniHostProp    = "IsStatusNotifierHostRegistered"
)

// noDisplay says why hasDisplay found none.
const noDisplay = "neither DISPLAY nor WAYLAND_DISPLAY is set, or DISPLAY names an X server that is not running"

// xSocketDir holds the sockets of the local X servers, X<N> for display :N.
const xSocketDir = "/tmp/.X11-unix"

// hasDisplay reports whether an X11 or Wayland display is there. A local X
// display (":N") counts only while its socket exists: a DISPLAY left over
// from a session whose X server is gone would otherwise make GLFW panic at
// start instead of letting the app run headless. The socket is not dialled:
// a bare X server resets when a client leaves, and the app's own
// connection right after would fail.
func hasDisplay(getenv func(string) string, socketDir string) bool {
	if getenv("WAYLAND_DISPLAY") != "" {
		return true
	}
	d := getenv("DISPLAY")
	if d == "" {
		return false
	}
	n, ok := localDisplay(d)
	if !ok {
		return true // another host, or a form we do not know: let X decide
	}
	fi, err := os.Stat(filepath.Join(socketDir, "X"+n))
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// localDisplay returns N of a local X display ":N" or ":N.S".
func localDisplay(display string) (string, bool) {
	rest, ok := strings.CutPrefix(display, ":")
	if !ok {
		return "", false
	}
	n, _, _ := strings.Cut(rest, ".")
	if _, err := strconv.Atoi(n); err != nil {
		return "", false
	}
	return n, true
}

// hasTrayHost reports whether the session has a StatusNotifier host, i.e.
// whether a tray icon would be seen. Fyne's tray on Linux is a
// StatusNotifierItem and nothing else: without a host (MATE, a bare X
// server) it silently shows nothing. Any doubt (no bus, a timeout) counts as
// no host, so the app falls back to a window rather than disappearing.
func hasTrayHost(ctx context.Context, getenv func(string) string) bool {
	addr := sessionBusAddress(getenv)
	if addr == "" {
		return false
	}
	found, err := sniHostRegistered(ctx, addr)
	return err == nil && found
}

// sessionBusAddress is the session bus to ask, "" when there is none. It
// never autolaunches a bus (godbus's default), which would start a process.
func sessionBusAddress(getenv func(string) string) string {
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" {
		return a
	}
	if dir := getenv("XDG_RUNTIME_DIR"); dir != "" {
		sock := filepath.Join(dir, "bus")
		if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return "unix:path=" + sock
		}
	}
	return ""
}

// sniHostRegistered asks the bus at addr whether a StatusNotifier watcher
// runs and has a host registered.
func sniHostRegistered(ctx context.Context, addr string) (bool, error) {
	// The connection's context bounds the handshake too: when ctx ends the
	// connection closes and every pending call returns.
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		return false, err
	}
	defer conn.Close()
	var owned bool
	err = conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, sniWatcherName).Store(&owned)
	if err != nil || !owned {
		return false, err
	}
	var v dbus.Variant
	err = conn.Object(sniWatcherName, sniWatcherPath).
		CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, sniWatcherName, sniHostProp).
		Store(&v)
	if err != nil {
		return false, err
	}
	registered, _ := v.Value().(bool)
	return registered, nil
}
