package assets

import (
	"bytes"
	"image/png"
	"testing"
)

func TestIconReturnsAPNGOfTheNearestSizeAtLeastAsBig(t *testing.T) {
	tests := []struct{ ask, want int }{
		{16, 16}, {1, 16}, {20, 22}, {22, 22}, {100, 128}, {512, 512}, {1024, 512},
	}
	for _, tt := range tests {
		img, err := png.Decode(bytes.NewReader(Icon(tt.ask)))
		if err != nil {
			t.Fatalf("Icon(%d): %v", tt.ask, err)
		}
		if b := img.Bounds(); b.Dx() != tt.want || b.Dy() != tt.want {
			t.Errorf("Icon(%d) is %v, want %dx%d", tt.ask, b, tt.want, tt.want)
		}
	}
}

func TestTrayIconsDifferByStateAndUnknownIsIdle(t *testing.T) {
	seen := map[string]string{}
	for _, state := range []string{StateIdle, StateBusy, StateInput, StateFailed} {
		for _, size := range TraySizes() {
			data := TrayIconSized(state, size)
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s %d: %v", state, size, err)
			}
			if img.Bounds().Dx() != size {
				t.Errorf("%s %d is %v", state, size, img.Bounds())
			}
			if other, dup := seen[string(data)]; dup {
				t.Errorf("%s %d looks the same as %s", state, size, other)
			}
			seen[string(data)] = state
		}
	}
	if !bytes.Equal(TrayIcon("nonsense"), TrayIcon(StateIdle)) {
		t.Error("unknown state does not give the idle icon")
	}
	if img, err := png.Decode(bytes.NewReader(TrayIcon(StateBusy))); err != nil || img.Bounds().Dx() != 64 {
		t.Errorf("TrayIcon is not 64 px: %v", err)
	}
}

func TestIconHasTransparentCornersAndOpaqueCentre(t *testing.T) {
	img, err := png.Decode(bytes.NewReader(Icon(256)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
		t.Errorf("corner alpha %d, want 0 (rounded square)", a)
	}
	if _, _, _, a := img.At(128, 128).RGBA(); a != 0xffff {
		t.Errorf("centre alpha %d, want opaque", a)
	}
}
