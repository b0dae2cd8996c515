package tasks

import (
	"bytes"
	"io"
	"sync"
	"unicode/utf8"
)

// OutputPage is a part of a run's combined stdout and stderr. Offsets
// count bytes from the first the run printed.
type OutputPage struct {
	// Text is the output from Offset to Next, cut at whole UTF-8
	// characters.
	Text         string
	Offset, Next int64
	// Total is all the output so far.
	Total int64
	// Dropped is how much of the start of the output is no longer kept:
	// a page asked for before it starts there.
	Dropped int64
	// Running says more output may come.
	Running bool
}

// tail keeps the last max bytes written to it, in a buffer of at most
// twice that, and counts all of them. Foreground runs return it whole;
// background runs are read from it a page at a time.
type tail struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

// newTail keeps the last max bytes; its buffer grows as output comes, up
// to twice max.
func newTail(max int) *tail { return &tail{max: max} }

// ReadFrom copies r into the tail until r ends.
func (t *tail) ReadFrom(r io.Reader) (int64, error) {
	chunk := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(chunk)
		if k > 0 {
			t.write(chunk[:k])
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}

func (t *tail) write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return
	}
	if need := len(t.buf) + len(p); need > cap(t.buf) && cap(t.buf) < 2*t.max {
		grown := make([]byte, len(t.buf), min(2*t.max, max(2*cap(t.buf), need, 4<<10)))
		t.buf = grown[:copy(grown, t.buf)]
	}
	if len(t.buf)+len(p) > cap(t.buf) {
		// Keep the last max-len(p) bytes, so that p fits and the buffer
		// never grows past twice max.
		keep := t.buf[len(t.buf)-min(len(t.buf), t.max-len(p)):]
		t.buf = t.buf[:copy(t.buf, keep)]
	}
	t.buf = append(t.buf, p...)
}

// page is at most n bytes of the kept output from offset off; an offset
// before the kept part reads from its start, a negative one reads the
// last n bytes. The page starts at a whole character, and ends at one
// where n cuts it. n must be at least utf8.UTFMax.
func (t *tail) page(off int64, n int) OutputPage {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.buf[len(t.buf)-min(len(t.buf), t.max):]
	first := t.total - int64(len(kept))
	if off < 0 {
		off = t.total - int64(n)
	}
	off = min(max(off, first), t.total)
	b := kept[off-first:]
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b, off = b[1:], off+1
	}
	if len(b) > n {
		b = b[:n]
		// Back to the start of the last character, unless it is whole.
		i := len(b) - 1
		for i > 0 && i > len(b)-utf8.UTFMax && !utf8.RuneStart(b[i]) {
			i--
		}
		if !utf8.FullRune(b[i:]) {
			b = b[:i]
		}
	}
	return OutputPage{Text: string(b), Offset: off, Next: off + int64(len(b)), Total: t.total, Dropped: first}
}

// result is the kept output (starting at a whole character), all bytes
// written and how many of them are not kept.
func (t *tail) result() (string, int64, int64) {
	p := t.page(0, t.max)
	return p.Text, p.Total, p.Total - int64(len(p.Text))
}

// progress is the last non-empty line so far, cut at maxLineShown, and
// all bytes written.
func (t *tail) progress() (string, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := bytes.TrimRight(t.buf, "\r\n")
	if i := bytes.LastIndexAny(b, "\r\n"); i >= 0 {
		b = b[i+1:]
	}
	if len(b) > maxLineShown {
		b = b[len(b)-maxLineShown:]
	}
	return string(bytes.ToValidUTF8(b, nil)), t.total
}
