// Package window is CodeHydra's windows, built with Fyne: the dialogs that
// create and delete workspaces and add and remove projects, the settings
// window with its metadata editor, questions, error windows, and the
// address of an agent no browser could open.
//
// A window opens in whichever process asks for it: the tray process opens
// its windows in a short-lived window process of their own (package app
// starts it, package bridge connects it), and in itself only where no
// window process can run. Either way a window reaches the app through
// Deps.
package window

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/workspace"
)

// Options are how a process shows its windows; the zero value shows them
// here, on Fyne's thread, and copies to this process's clipboard.
type Options struct {
	// Do runs fn on the Fyne thread; nil is fyne.Do (tests pass a queue).
	Do func(fn func())
	// Elsewhere, when set, opens the window of s outside this process (in
	// a window process); it calls here to open it in this process instead,
	// when it cannot.
	Elsewhere func(s Spec, here func())
	// Clipboard, when set, is where copied text goes instead of this
	// process's clipboard: a window process's copies go to the app, which
	// outlives the window.
	Clipboard func(text string)
	// Closed, when set, is told the key (Spec.Key) of each window that
	// closes.
	Closed func(key string)
	// CloseElsewhere, when set, closes the window of key where Elsewhere
	// opened it, if it is open there.
	CloseElsewhere func(key string)
}

// UI is the windows of one process and the background work they started.
type UI struct {
	ctx  context.Context // done when the UI stops
	app  fyne.App
	deps Deps
	log  *slog.Logger
	do   func(fn func())
	opts Options
	// openFolder shows a folder in the file manager (openers.go); failed
	// gets a failure that comes after it returned.
	openFolder func(path string, failed func(error)) error
	// errors counts the error windows shown, to tell them apart.
	errors int

	wg sync.WaitGroup
	// windows are the open single-instance windows by key (Spec.Key:
	// "create", "settings", "delete:<path>"…); only touched on the Fyne
	// thread.
	windows map[string]fyne.Window
}

// New makes the windows of app a, which reach the rest of the app through
// deps, until ctx is done.
func New(ctx context.Context, a fyne.App, deps Deps, opts Options) *UI {
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if deps.Getenv == nil {
		deps.Getenv = os.Getenv
	}
	do := opts.Do
	if do == nil {
		do = fyne.Do
	}
	u := &UI{ctx: ctx, app: a, deps: deps, log: log, do: do, opts: opts, windows: map[string]fyne.Window{}}
	u.openFolder = func(path string, failed func(error)) error { return u.open(FileManager, path, failed) }
	return u
}

// background runs fn on its own goroutine; fn gets the UI's context and
// must return soon after it is done.
func (u *UI) background(fn func(ctx context.Context)) {
	u.wg.Go(func() { fn(u.ctx) })
}

// follow subscribes to the manager's events, then runs load (if not nil),
// then hands the events in batches to handle on a background goroutine
// until ctx ends. Subscribing first means no change falls between what
// load reads and the first batch.
func (u *UI) follow(ctx context.Context, load func(), handle func(batch []workspace.Event)) {
	events, unsubscribe := u.deps.Workspaces.Subscribe()
	if load != nil {
		load()
	}
	u.background(func(context.Context) {
		defer unsubscribe()
		workspace.Follow(ctx, events, handle)
	})
}

// Wait waits for the windows' background work, which ends once the
// context New was given is done.
func (u *UI) Wait() { u.wg.Wait() }

// Shown reports whether a window is open in this process.
func (u *UI) Shown() bool { return len(u.windows) > 0 }

// Raise brings this process's windows forward.
func (u *UI) Raise() {
	for _, w := range u.windows {
		w.Show()
		w.RequestFocus()
	}
}

// Close closes the window of key (Spec.Key), here or where Elsewhere
// opened it, as its close button would; none open is no error.
func (u *UI) Close(key string) {
	if w, ok := u.windows[key]; ok {
		w.Close()
	}
	if u.opts.CloseElsewhere != nil {
		u.opts.CloseElsewhere(key)
	}
}

// window brings the open window of spec forward, or makes one with
// build, shows it, and remembers it until it closes; then closed (if not
// nil) runs. With Options.Elsewhere, spec's window opens there instead,
// unless it cannot.
func (u *UI) window(spec Spec, build func() (w fyne.Window, closed func())) {
	if u.opts.Elsewhere != nil {
		u.opts.Elsewhere(spec, func() { u.windowHere(spec.Key(), build) })
		return
	}
	u.windowHere(spec.Key(), build)
}

// windowHere is window in this process.
func (u *UI) windowHere(key string, build func() (w fyne.Window, closed func())) {
	if w, ok := u.windows[key]; ok {
		w.Show()
		w.RequestFocus()
		return
	}
	w, closed := build()
	u.windows[key] = w
	w.SetOnClosed(func() {
		if u.windows[key] == w {
			delete(u.windows, key)
		}
		if u.opts.Closed != nil {
			u.opts.Closed(key)
		}
		if closed != nil {
			closed()
		}
	})
	w.Show()
}

// ShowError shows err in a small window of its own, titled after what
// failed: in tray mode there is no window to hang a dialog on.
func (u *UI) ShowError(title string, err error) {
	u.log.Warn(title, slog.Any("err", err))
	u.errors++
	u.showMessage(Spec{Kind: KindError, Title: title, Message: UserMessage(err), Seq: u.errors})
}

// showMessage shows an error window: what failed (s.Title) and why
// (s.Message).
func (u *UI) showMessage(s Spec) {
	u.window(s, func() (fyne.Window, func()) {
		w := u.app.NewWindow("CodeHydra: " + s.Title)
		w.SetContent(errorContent(w, s.Title, s.Message))
		answerEscape(w, w.Close)
		return w, nil
	})
}

// CopyText puts text on the clipboard (Options.Clipboard's, if set).
func (u *UI) CopyText(text string) {
	if u.opts.Clipboard != nil {
		u.opts.Clipboard(text)
		return
	}
	u.app.Clipboard().SetContent(text)
}

// UserMessage is the sentence a user sees for err: the message of a
// *workspace.Error (its cause only for internal errors), else err's text.
func UserMessage(err error) string {
	var we *workspace.Error
	if errors.As(err, &we) && we.Code != workspace.CodeInternal {
		return we.Message
	}
	return err.Error()
}

// WorkspaceTitle names a workspace for people: "project / name".
func WorkspaceTitle(ws workspace.Workspace) string {
	return fmt.Sprintf("%s / %s", baseName(ws.ProjectPath), ws.Name)
}

// baseName is the last element of a path, whatever its separators.
func baseName(p string) string {
	return filepath.Base(filepath.FromSlash(p))
}

// plural is n and word, with an s when n is not one: "1 tool", "3 tools".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// errorContent is the body of an error window: what failed, why, and a
// button to close it.
func errorContent(w fyne.Window, title, msg string) fyne.CanvasObject {
	head := widget.NewLabelWithStyle(title+" failed", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	body := widget.NewLabel(msg)
	body.Wrapping = fyne.TextWrapWord
	w.Resize(fyne.NewSize(420, 0))
	return container.NewVBox(head, body, container.NewHBox(layout.NewSpacer(), widget.NewButton("Close", w.Close)))
}
