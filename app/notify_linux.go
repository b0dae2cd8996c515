package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"github.com/godbus/dbus/v5"
)

// desktopNotifier sends notices to the desktop's notification service
// (org.freedesktop.Notifications) itself rather than through Fyne, which
// prints a failure on stderr and tells the caller nothing.
func desktopNotifier(_ fyne.App, getenv func(string) string) func(Notice) error {
	return func(n Notice) error {
		addr := sessionBusAddress(getenv)
		if addr == "" {
			return errors.New("no session bus (DBUS_SESSION_BUS_ADDRESS is unset), so no notification service")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return notifyOverDBus(ctx, addr, n)
	}
}

// notifyOverDBus shows n through the notification service on the bus at
// addr. A connection per notice: they are rare, and a shared one would
// outlive the UI.
func notifyOverDBus(ctx context.Context, addr string, n Notice) error {
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("connect to the session bus: %w", err)
	}
	defer conn.Close()
	// -1: the service's own timeout.
	call := conn.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications").
		CallWithContext(ctx, "org.freedesktop.Notifications.Notify", 0,
			"CodeHydra", uint32(0), "", n.Title, n.Content, []string{}, map[string]dbus.Variant{}, int32(-1))
	if call.Err != nil {
		return fmt.Errorf("send the notification to org.freedesktop.Notifications: %w", call.Err)
	}
	return nil
}
