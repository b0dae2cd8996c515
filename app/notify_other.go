//go:build !linux

package app

import (
	"context"

	"fyne.io/fyne/v2"
)

// desktopNotifier is Fyne's outside Linux.
func desktopNotifier(a fyne.App, _ func(string) string) func(Notice) error {
	return fyneNotifier(a)
}

// desktopAsker is none outside Linux: the notices of pending requests go
// out as any other, without actions.
func desktopAsker(func(string) string) func(ctx context.Context, n Notice, invoked func(key string)) error {
	return nil
}
