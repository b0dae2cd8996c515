package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/png"
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
			"CodeHydra", uint32(0), "", n.Title, n.Content, []string{}, noticeHints(), int32(-1))
	if call.Err != nil {
		return fmt.Errorf("send the notification to org.freedesktop.Notifications: %w", call.Err)
	}
	return nil
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
