package uitest

import (
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"codehydra/internal/testenv"
)

// App is a test Fyne app that records notifications, opened URLs and
// quits instead of acting on them.
type App struct {
	fyne.App
	mu    sync.Mutex
	notes []fyne.Notification
	urls  []string
	quits int
}

// NewApp is a recording test app, gone when t ends.
func NewApp(t *testing.T) *App { return &App{App: test.NewTempApp(t)} }

func (a *App) SendNotification(n *fyne.Notification) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.notes = append(a.notes, *n)
}

func (a *App) OpenURL(u *url.URL) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.urls = append(a.urls, u.String())
	return nil
}

func (a *App) Quit() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.quits++
}

// Notifications are the notifications sent, in order.
func (a *App) Notifications() []fyne.Notification {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.notes)
}

// Quits counts the calls to Quit.
func (a *App) Quits() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.quits
}

// Window is the open window titled title, nil when none is.
func (a *App) Window(title string) fyne.Window {
	for _, w := range a.Driver().AllWindows() {
		if w.Title() == title {
			return w
		}
	}
	return nil
}

// WindowOpen reports whether a window titled title is open.
func (a *App) WindowOpen(title string) bool { return a.Window(title) != nil }

// Texts are the labels of the open window titled title, one a line; ""
// when none is open.
func (a *App) Texts(title string) string {
	w := a.Window(title)
	if w == nil {
		return ""
	}
	var out []string
	for _, o := range test.LaidOutObjects(w.Content()) {
		if l, ok := o.(*widget.Label); ok {
			out = append(out, l.Text)
		}
	}
	return strings.Join(out, "\n")
}

// CloseAll closes every open window.
func (a *App) CloseAll() {
	for _, w := range slices.Clone(a.Driver().AllWindows()) {
		w.Close()
	}
}

// Thread is the Fyne thread, played by the test goroutine: what the UI
// hands to Do waits in a queue until the test drains it, so widgets are
// only touched by one goroutine.
type Thread struct {
	mu    sync.Mutex
	queue []func()
}

// Do queues fn for the next Drain.
func (q *Thread) Do(fn func()) {
	q.mu.Lock()
	q.queue = append(q.queue, fn)
	q.mu.Unlock()
}

// Drain runs what was queued, and what that queued, until nothing is.
func (q *Thread) Drain() {
	for {
		q.mu.Lock()
		fns := q.queue
		q.queue = nil
		q.mu.Unlock()
		if len(fns) == 0 {
			return
		}
		for _, fn := range fns {
			fn()
		}
	}
}

// WaitFor drains the queue until cond holds, failing t after a deadline.
func (q *Thread) WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, what, 10*time.Second, func() bool {
		q.Drain()
		return cond()
	})
}

// Escape is the Escape key.
var Escape = &fyne.KeyEvent{Name: fyne.KeyEscape}

// PressEscape presses Escape in w as the desktop driver does: to the
// focused widget when there is one, else to the canvas.
func PressEscape(w fyne.Window) {
	if f := w.Canvas().Focused(); f != nil {
		f.TypedKey(Escape)
		return
	}
	if fn := w.Canvas().OnTypedKey(); fn != nil {
		fn(Escape)
	}
}

// FindButton finds a button by its text under o; nil when there is none.
func FindButton(o fyne.CanvasObject, text string) *widget.Button {
	if o == nil {
		return nil
	}
	for _, c := range test.LaidOutObjects(o) {
		if b, ok := c.(*widget.Button); ok && b.Text == text {
			return b
		}
	}
	return nil
}

// Question is an open confirmation, read back from its window.
type Question struct {
	Win     fyne.Window
	Message *widget.Label
	OK      *widget.Button
	Cancel  *widget.Button
}

// AskedQuestion is the open confirmation titled title (its window is
// "CodeHydra: " and the title); nil when none is open.
func (a *App) AskedQuestion(title string) *Question {
	w := a.Window("CodeHydra: " + title)
	if w == nil {
		return nil
	}
	q := &Question{Win: w}
	for _, o := range test.LaidOutObjects(w.Content()) {
		switch o := o.(type) {
		case *widget.Button:
			if o.Importance == widget.DangerImportance {
				q.OK = o
			} else if o.Text == "Cancel" {
				q.Cancel = o
			}
		case *widget.Label:
			if o.Wrapping == fyne.TextWrapWord {
				q.Message = o
			}
		}
	}
	return q
}
