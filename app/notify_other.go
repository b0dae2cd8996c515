//go:build !linux

package app

import "fyne.io/fyne/v2"

// desktopNotifier is Fyne's outside Linux.
func desktopNotifier(a fyne.App, _ func(string) string) func(Notice) error {
	return fyneNotifier(a)
}
