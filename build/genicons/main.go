//go:build ignore

// Genicons draws CodeHydra's icons and writes them as PNGs into assets/:
// the app icon at the sizes desktops ask for, and the tray icon in each
// agent state. Run it from the repository root after changing the drawing:
//
//	go run build/genicons/main.go
//
// The drawing is a hydra as a git graph: three heads (the workspaces' agents)
// on necks that branch from one body (the project), on a dark rounded
// square. Shapes are signed distance fields, so every edge is anti-aliased
// at every size without supersampling.
package main

import (
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
	"path/filepath"
)

// The sizes of the app icon, and of the tray icon in each state.
var (
	appSizes  = []int{16, 22, 32, 48, 64, 128, 256, 512}
	traySizes = []int{22, 32, 64}
)

// badge colours of the tray states; idle has no badge.
var badges = map[string]rgba{
	"idle":   {},
	"busy":   hex(0x3B82F6), // blue: agents at work
	"input":  hex(0xF59E0B), // amber: an agent waits for the user
	"failed": hex(0xEF4444), // red: an agent could not run
}

func main() {
	out := flag.String("out", "assets", "folder to write the PNGs to")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, size := range appSizes {
		write(filepath.Join(*out, fmt.Sprintf("icon-%d.png", size)), draw(size, rgba{}))
	}
	for state, badge := range badges {
		for _, size := range traySizes {
			write(filepath.Join(*out, fmt.Sprintf("icon-%s-%d.png", state, size)), draw(size, badge))
		}
	}
}

func write(path string, img image.Image) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(f, img); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

// rgba is a colour with premultiplied float channels in 0..1.
type rgba struct{ r, g, b, a float64 }

func hex(v uint32) rgba {
	return rgba{float64(v>>16&0xff) / 255, float64(v>>8&0xff) / 255, float64(v&0xff) / 255, 1}
}

func mix(x, y rgba, t float64) rgba {
	t = clamp(t, 0, 1)
	return rgba{x.r + (y.r-x.r)*t, x.g + (y.g-x.g)*t, x.b + (y.b-x.b)*t, x.a + (y.a-x.a)*t}
}

// over paints src with the given coverage over dst.
func over(dst, src rgba, coverage float64) rgba {
	a := src.a * coverage
	return rgba{
		src.r*a + dst.r*(1-a),
		src.g*a + dst.g*(1-a),
		src.b*a + dst.b*(1-a),
		a + dst.a*(1-a),
	}
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

type vec struct{ x, y float64 }

func (a vec) sub(b vec) vec        { return vec{a.x - b.x, a.y - b.y} }
func (a vec) add(b vec) vec        { return vec{a.x + b.x, a.y + b.y} }
func (a vec) mul(k float64) vec    { return vec{a.x * k, a.y * k} }
func (a vec) dot(b vec) float64    { return a.x*b.x + a.y*b.y }
func (a vec) length() float64      { return math.Hypot(a.x, a.y) }
func lerp(a, b vec, t float64) vec { return a.add(b.sub(a).mul(t)) }

// Signed distances: negative inside.

func sdCircle(p, c vec, r float64) float64 { return p.sub(c).length() - r }

func sdRoundBox(p, c vec, half, r float64) float64 {
	q := vec{math.Abs(p.x-c.x) - half + r, math.Abs(p.y-c.y) - half + r}
	outside := vec{math.Max(q.x, 0), math.Max(q.y, 0)}.length()
	return outside + math.Min(math.Max(q.x, q.y), 0) - r
}

func sdSegment(p, a, b vec) float64 {
	pa, ba := p.sub(a), b.sub(a)
	h := clamp(pa.dot(ba)/ba.dot(ba), 0, 1)
	return pa.sub(ba.mul(h)).length()
}

// sdCurve is the distance to a quadratic Bézier from a through control c
// to b, stroked with half-width w.
func sdCurve(p, a, c, b vec, w float64) float64 {
	const steps = 40
	d := math.Inf(1)
	prev := a
	for i := 1; i <= steps; i++ {
		t := float64(i) / steps
		next := lerp(lerp(a, c, t), lerp(c, b, t), t)
		d = math.Min(d, sdSegment(p, prev, next))
		prev = next
	}
	return d - w
}

// draw renders the icon at size pixels, with a badge dot when badge.a > 0.
func draw(size int, badge rgba) *image.NRGBA {
	s := float64(size)
	// Small icons get bolder strokes, in pixels, so that they stay legible.
	px := func(frac, minPx float64) float64 { return math.Max(frac*s, minPx) }

	bgTop, bgBottom := hex(0x22304F), hex(0x0B1220)
	neckCol := hex(0x14B8A6)
	headTop, headBottom := hex(0x99F6E4), hex(0x2DD4BF)
	eyeCol := hex(0x0B1220)

	margin := 0.03 * s
	half := s/2 - margin
	radius := 0.22 * s
	centre := vec{s / 2, s / 2}

	body := vec{0.5 * s, 0.76 * s}
	heads := []vec{{0.24 * s, 0.34 * s}, {0.5 * s, 0.25 * s}, {0.76 * s, 0.34 * s}}
	controls := []vec{{0.26 * s, 0.62 * s}, {0.5 * s, 0.5 * s}, {0.74 * s, 0.62 * s}}
	neckHalf := px(0.038, 0.75)
	headR := px(0.1, 1.9)
	bodyR := px(0.1, 2.0)
	if size <= 22 {
		// Spread the heads so that they do not merge into one blob.
		heads = []vec{{0.2 * s, 0.33 * s}, {0.5 * s, 0.22 * s}, {0.8 * s, 0.33 * s}}
		controls = []vec{{0.22 * s, 0.62 * s}, {0.5 * s, 0.5 * s}, {0.78 * s, 0.62 * s}}
	}
	eyeR := 0.022 * s

	badgeC := vec{0.77 * s, 0.77 * s}
	badgeR := px(0.19, 3.6)
	ringW := px(0.05, 1.2)

	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			p := vec{float64(x) + 0.5, float64(y) + 0.5}
			cov := func(d float64) float64 { return clamp(0.5-d, 0, 1) }

			var c rgba
			c = over(c, mix(bgTop, bgBottom, p.y/s), cov(sdRoundBox(p, centre, half, radius)))
			for i := range heads {
				c = over(c, neckCol, cov(sdCurve(p, body, controls[i], heads[i], neckHalf)))
			}
			c = over(c, neckCol, cov(sdCircle(p, body, bodyR)))
			for _, h := range heads {
				t := (p.y - (h.y - headR)) / (2 * headR)
				c = over(c, mix(headTop, headBottom, t), cov(sdCircle(p, h, headR)))
				if size >= 48 {
					// Eyes look the way the head leans; too small to see below 48 px.
					lean := clamp((h.x-s/2)/(0.26*s), -1, 1)
					eye := h.add(vec{lean * 0.035 * s, -0.01 * s})
					c = over(c, eyeCol, cov(sdCircle(p, eye, eyeR)))
				}
			}
			if badge.a > 0 {
				// A ring in the background colour separates the dot from the
				// drawing beneath it.
				c = over(c, bgBottom, cov(sdCircle(p, badgeC, badgeR+ringW)))
				c = over(c, badge, cov(sdCircle(p, badgeC, badgeR)))
			}
			img.SetNRGBA(x, y, toNRGBA(c))
		}
	}
	return img
}

func toNRGBA(c rgba) color.NRGBA {
	if c.a <= 0 {
		return color.NRGBA{}
	}
	ch := func(v float64) uint8 { return uint8(math.Round(clamp(v/c.a, 0, 1) * 255)) }
	return color.NRGBA{ch(c.r), ch(c.g), ch(c.b), uint8(math.Round(clamp(c.a, 0, 1) * 255))}
}
