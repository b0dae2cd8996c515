package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"slices"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"github.com/godbus/dbus/v5"

	"codehydra/assets"
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

// desktopAsker shows the notices of pending requests through the
// desktop's notification service with their answers as actions (see
// askOverDBus).
func desktopAsker(getenv func(string) string) func(ctx context.Context, n Notice, invoked func(key string)) error {
	return func(ctx context.Context, n Notice, invoked func(key string)) error {
		addr := sessionBusAddress(getenv)
		if addr == "" {
			return errors.New("no session bus (DBUS_SESSION_BUS_ADDRESS is unset), so no notification service")
		}
		return askOverDBus(ctx, addr, n, invoked)
	}
}

const (
	notifyName  = "org.freedesktop.Notifications"
	notifyPath  = dbus.ObjectPath("/org/freedesktop/Notifications")
	notifyCalls = 5 * time.Second
)

// askOverDBus shows n, a notice about a pending request, through the
// notification service on the bus at addr. Where the service takes
// actions (its capabilities say "actions"), the notice carries
// NoticeActions, and askOverDBus waits, reporting a click to invoked,
// until the notice is clicked or closed, or ctx ends: then the request
// was answered elsewhere, or the UI stops, and it takes the notice back.
// Elsewhere the notice goes out as any other.
func askOverDBus(ctx context.Context, addr string, n Notice, invoked func(key string)) error {
	// The connection outlives ctx for a moment, to take the notice back.
	connCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	conn, err := dbus.Connect(addr, dbus.WithContext(connCtx))
	if err != nil {
		return fmt.Errorf("connect to the session bus: %w", err)
	}
	defer conn.Close()
	obj := conn.Object(notifyName, notifyPath)
	callCtx, cancel := context.WithTimeout(ctx, notifyCalls)
	defer cancel()
	var caps []string
	if err := obj.CallWithContext(callCtx, notifyName+".GetCapabilities", 0).Store(&caps); err != nil || !slices.Contains(caps, "actions") {
		_, err := notify(callCtx, obj, n, nil)
		return err
	}
	// Any client on the bus may emit ActionInvoked, and notice IDs are
	// easy to guess: only the service's own signals are the user's
	// clicks. The notice goes to the same unique name, so that a service
	// replaced meanwhile cannot show it while its clicks go unheard.
	var owner string
	if err := conn.BusObject().CallWithContext(callCtx, "org.freedesktop.DBus.GetNameOwner", 0, notifyName).Store(&owner); err != nil {
		return fmt.Errorf("find the owner of org.freedesktop.Notifications: %w", err)
	}
	obj = conn.Object(owner, notifyPath)
	// Listen before the notice shows, so that no click goes unheard.
	if err := conn.AddMatchSignalContext(callCtx, dbus.WithMatchSender(owner), dbus.WithMatchObjectPath(notifyPath), dbus.WithMatchInterface(notifyName)); err != nil {
		return fmt.Errorf("listen to org.freedesktop.Notifications: %w", err)
	}
	signals := make(chan *dbus.Signal, 16)
	conn.Signal(signals)
	var actions []string
	for _, a := range NoticeActions(*n.Asks) {
		actions = append(actions, a.Key, a.Label)
	}
	cancel()
	// Once sent, the notice may show even if ctx ends before the reply:
	// wait for its ID regardless, so that it can be taken back below.
	sendCtx, cancel := context.WithTimeout(connCtx, notifyCalls)
	defer cancel()
	id, err := notify(sendCtx, obj, n, actions)
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			closeCtx, cancel := context.WithTimeout(connCtx, notifyCalls)
			defer cancel()
			if call := obj.CallWithContext(closeCtx, notifyName+".CloseNotification", 0, id); call.Err != nil {
				return fmt.Errorf("take back the notification: %w", call.Err)
			}
			return nil
		case sig, ok := <-signals:
			if !ok {
				return errors.New("the session bus went away")
			}
			if sig.Sender != owner || len(sig.Body) < 2 || sig.Body[0] != id {
				continue
			}
			switch sig.Name {
			case notifyName + ".ActionInvoked":
				if key, ok := sig.Body[1].(string); ok {
					invoked(key)
				}
				return nil
			case notifyName + ".NotificationClosed":
				return nil
			}
		}
	}
}

// notify sends n with actions (key, label, key, label…) and returns its
// ID.
func notify(ctx context.Context, obj dbus.BusObject, n Notice, actions []string) (uint32, error) {
	if actions == nil {
		actions = []string{}
	}
	var id uint32
	// -1: the service's own timeout.
	err := obj.CallWithContext(ctx, notifyName+".Notify", 0,
		"CodeHydra", uint32(0), "", n.Title, n.Content, actions, noticeHints(), int32(-1)).Store(&id)
	if err != nil {
		return 0, fmt.Errorf("send the notification to org.freedesktop.Notifications: %w", err)
	}
	return id, nil
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
	_, err = notify(ctx, conn.Object(notifyName, notifyPath), n, nil)
	return err
}

// noticeIcon is the app's icon in the shape of the notification spec's
// "image-data" hint (iiibiiay: width, height, row stride, alpha, bits per
// sample, channels, RGBA bytes). It is sent inline, since the service
// cannot read the icon Fyne keeps in its own cache, and no file has to be
// written for it.
type noticeIcon struct {
	Width, Height, Stride int32
	Alpha                 bool
	Bits, Channels        int32
	Data                  []byte
}

// noticeHints returns the hints every notice carries: the app's icon.
var noticeHints = sync.OnceValue(func() map[string]dbus.Variant {
	img, err := png.Decode(bytes.NewReader(assets.Icon(64)))
	if err != nil {
		return map[string]dbus.Variant{} // a notice without an icon is still a notice
	}
	rgba := image.NewNRGBA(img.Bounds())
	draw.Draw(rgba, rgba.Bounds(), img, img.Bounds().Min, draw.Src)
	b := rgba.Bounds()
	icon := noticeIcon{Width: int32(b.Dx()), Height: int32(b.Dy()), Stride: int32(rgba.Stride),
		Alpha: true, Bits: 8, Channels: 4, Data: rgba.Pix}
	return map[string]dbus.Variant{"image-data": dbus.MakeVariant(icon)}
})
