// Package assets holds CodeHydra's icons as embedded PNGs (SVG does not show
// in Linux trays). build/genicons draws them; run
// `go run build/genicons/main.go` after changing the drawing.
package assets

import (
	"embed"
	"fmt"
)

//go:embed *.png
var files embed.FS

// IconSizes returns the sizes, in pixels, of the app icon, ascending.
func IconSizes() []int { return []int{16, 22, 32, 48, 64, 128, 256, 512} }

// TraySizes returns the sizes, in pixels, of each tray state icon, ascending.
func TraySizes() []int { return []int{22, 32, 64} }

// The tray states: every agent idle (or none), some agent busy, some agent
// waiting for the user, some agent failed.
const (
	StateIdle   = "idle"
	StateBusy   = "busy"
	StateInput  = "input"
	StateFailed = "failed"
)

// Icon returns the app icon PNG of the given size, or of the next larger size
// there is (the largest for anything above 512).
func Icon(size int) []byte {
	return mustRead(fmt.Sprintf("icon-%d.png", pick(IconSizes(), size)))
}

// TrayIcon returns the 64 px tray icon of a state (StateIdle, StateBusy,
// StateInput, StateFailed); an unknown state gives the idle icon. Trays scale
// it down, and 64 px stays sharp on high-density screens.
func TrayIcon(state string) []byte {
	return TrayIconSized(state, 64)
}

// TrayIconSized is TrayIcon at the given size, or the next larger one there is.
func TrayIconSized(state string, size int) []byte {
	switch state {
	case StateIdle, StateBusy, StateInput, StateFailed:
	default:
		state = StateIdle
	}
	return mustRead(fmt.Sprintf("icon-%s-%d.png", state, pick(TraySizes(), size)))
}

// pick returns the smallest of sizes (ascending) that is at least want, or
// the largest.
func pick(sizes []int, want int) int {
	for _, s := range sizes {
		if s >= want {
			return s
		}
	}
	return sizes[len(sizes)-1]
}

func mustRead(name string) []byte {
	data, err := files.ReadFile(name)
	if err != nil {
		// Every name built above is a file that go:embed checked at build
		// time; reaching this is a programming error.
		panic(fmt.Sprintf("assets: %v", err))
	}
	return data
}
