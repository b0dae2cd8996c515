//go:build linux

package inhibit

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/godbus/dbus/v5"
)

// defaultSystemBus is the system bus's address when
// DBUS_SYSTEM_BUS_ADDRESS does not name another (the D-Bus
// specification's).
const defaultSystemBus = "unix:path=/var/run/dbus/system_bus_socket"

// callTimeout bounds connecting to the system bus and logind's answer.
const callTimeout = 10 * time.Second

func systemHolder(o Options) holder {
	addr := o.Getenv("DBUS_SYSTEM_BUS_ADDRESS")
	if addr == "" {
		addr = defaultSystemBus
	}
	return logind{addr: addr}
}

// logind takes systemd-logind's inhibitor over the system bus at addr.
// The inhibitor is the file descriptor logind returns: it holds until
// every copy of it is closed, whatever becomes of the connection.
type logind struct{ addr string }

func (logind) retells() bool { return true }

func (l logind) hold(why string) (func() error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	// A connection per inhibitor: one is taken at most every settle
	// time, and the inhibitor outlives the connection anyway.
	conn, err := dbus.Connect(l.addr, dbus.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("connect to the system bus at %s: %w", l.addr, err)
	}
	defer conn.Close()
	var fd dbus.UnixFD
	err = conn.Object("org.freedesktop.login1", "/org/freedesktop/login1").
		CallWithContext(ctx, "org.freedesktop.login1.Manager.Inhibit", 0, "sleep:idle", "CodeHydra", why, "block").
		Store(&fd)
	if err != nil {
		return nil, fmt.Errorf("ask systemd-logind for a sleep inhibitor (org.freedesktop.login1.Manager.Inhibit): %w", err)
	}
	// The descriptor came with close-on-exec set (Go reads it with
	// MSG_CMSG_CLOEXEC), so no agent inherits it and holds it past its
	// release.
	f := os.NewFile(uintptr(fd), "logind inhibitor")
	return f.Close, nil
}
