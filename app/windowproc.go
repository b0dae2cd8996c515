package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	"codehydra/app/bridge"
	"codehydra/app/window"
	"codehydra/assets"
)

// The tray app's windows open in a short-lived process of their own (a
// "window process": the same binary, run as Deps.WindowCommand), which
// reaches the app over the bridge (package bridge) and ends when its
// window closes. Opening a window loads the GL driver (on Linux with Mesa
// about 54 MB, more with its heap); in a process of its own that memory is
// given back when the window closes, and the tray process never loads it.
// Where no window process can be started, the window opens in the tray
// process as before.

// windowProcs starts and tracks the window processes of the tray process.
type windowProcs struct {
	t    *Tray
	argv []string
	// wait bounds how long a window process may take to end once the app
	// quits, before it is killed.
	wait time.Duration

	mu    sync.Mutex
	procs map[string]*windowSignals // by window key
}

// windowSignals are what the app tells one window process: come forward,
// close.
type windowSignals struct{ raise, close chan struct{} }

func newWindowProcs(t *Tray, argv []string) *windowProcs {
	return &windowProcs{t: t, argv: argv, wait: 2 * time.Second, procs: map[string]*windowSignals{}}
}

// close closes the window of key in its window process, if one shows it.
func (p *windowProcs) close(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.procs[key]; ok {
		select {
		case w.close <- struct{}{}:
		default:
		}
	}
}

// open shows the window of s in a window process, or brings forward the
// one open for its key. inApp opens it in this process instead, when no
// window process could run. Once the app is quitting, nothing opens.
func (p *windowProcs) open(s window.Spec, inApp func()) {
	if p.t.ctx.Err() != nil {
		return
	}
	key := s.Key()
	p.mu.Lock()
	if w, ok := p.procs[key]; ok {
		p.mu.Unlock()
		p.t.log.Info("window brought forward", slog.String("window", key))
		select {
		case w.raise <- struct{}{}:
		default:
		}
		return
	}
	w := &windowSignals{raise: make(chan struct{}, 1), close: make(chan struct{}, 1)}
	p.procs[key] = w
	p.mu.Unlock()
	forget := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.procs[key] == w {
			delete(p.procs, key)
		}
	}
	p.t.background(func(ctx context.Context) {
		defer forget()
		if err := p.run(ctx, s, w, forget); err != nil && ctx.Err() == nil {
			p.t.log.Warn("no window process; opening the window in the app", slog.String("window", key), slog.Any("err", err))
			p.t.do(inApp)
		}
	})
}

// run runs one window process until it ends, serving it the bridge. An
// error means it never asked for its window (it could not start, or
// failed at once).
func (p *windowProcs) run(ctx context.Context, s window.Spec, w *windowSignals, closed func()) error {
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.t.log.Info("window process started", slog.String("window", s.Key()), slog.Int("pid", cmd.Process.Pid))
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		p.logLines(s.Key(), stderr)
	}()
	b := bridge.NewServer(p.served(s, w, closed))
	b.Serve(ctx, bridge.PipeConn(stdout, stdin))
	stdin.Close()
	exited := make(chan error, 1)
	go func() { <-logged; exited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-exited:
	case <-time.After(p.wait):
		cmd.Process.Kill()
		werr = <-exited
	}
	p.t.log.Info("window process ended", slog.String("window", s.Key()), slog.Any("status", werr))
	if !b.Greeted() {
		if werr == nil {
			werr = errors.New("it ended before it asked for its window")
		}
		return fmt.Errorf("window process: %w", werr)
	}
	return nil
}

// served is what the window process of s gets over the bridge: the Deps
// the tray's own windows get, and what only the tray process does for it
// (on the Fyne thread). Its Restart quits this process, the app, as the
// settings window's Restart now does in the app itself.
func (p *windowProcs) served(s window.Spec, w *windowSignals, closed func()) bridge.App {
	t := p.t
	a := bridge.App{
		Deps:     t.deps.windows(t, t.log),
		Window:   s,
		CopyText: func(text string) { t.do(func() { t.copyText(text) }) },
		Closed:   closed,
		Raise:    w.raise,
		Close:    w.close,
	}
	if restart := t.deps.Restart; restart != nil {
		a.Deps.Restart = func() {
			t.do(func() {
				restart()
				t.app.Quit()
			})
		}
	}
	if s.Answered != nil {
		a.Answered = func() { t.do(s.Answered) }
	}
	if s.Elicited != nil {
		a.Elicited = func(ans window.Answer) { t.do(func() { s.Elicited(ans) }) }
	}
	return a
}

// logLines passes what a window process writes on stderr (its log, and
// Fyne's) on to the app's log.
func (p *windowProcs) logLines(key string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		p.t.log.Info("window process", slog.String("window", key), slog.String("line", sc.Text()))
	}
}

// PipeConn joins a reading and a writing end into one connection: a window
// process's stdout and stdin in the app, its own stdin and stdout in the
// window process.
func PipeConn(r io.ReadCloser, w io.WriteCloser) io.ReadWriteCloser { return bridge.PipeConn(r, w) }

// RunWindow is the window process: it asks the app on conn (its stdin and
// stdout) which window to show, shows it, and returns when the window is
// closed or the app has gone. Its log goes to log.
func RunWindow(ctx context.Context, conn io.ReadWriteCloser, log *slog.Logger) error {
	c := bridge.NewClient(conn, log)
	h, err := c.Hello()
	if err != nil {
		return fmt.Errorf("this command is started by the CodeHydra app for its windows: %w", err)
	}
	if h.Protocol != bridge.Protocol {
		// A binary replaced under a running app (an upgrade) may not
		// speak the app's bridge.
		return fmt.Errorf("the running CodeHydra app speaks bridge protocol %d, this binary %d: restart CodeHydra", h.Protocol, bridge.Protocol)
	}
	a := fyneapp.NewWithID(DefaultAppID)
	if icon := assets.Icon(256); len(icon) > 0 {
		a.SetIcon(fyne.NewStaticResource("codehydra.png", icon))
	}
	uiCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	spec := h.Window
	switch spec.Kind {
	case window.KindConfirm:
		spec.Answered = c.Answered
	case window.KindElicit:
		spec.Elicited = c.Elicited
	}
	u := window.New(uiCtx, a, c.Deps(h), window.Options{
		// The app outlives the window: a copy goes to its clipboard.
		Clipboard: c.CopyText,
		// The app learns at once that the window closed, before this
		// process ends: a click that opens it again then starts a new
		// process rather than raising this one.
		Closed: func(key string) {
			if key == spec.Key() {
				c.Closed()
			}
		},
	})
	go func() {
		for {
			closeIt, err := c.WaitRaise()
			if err != nil {
				log.Info("the app has gone; closing the window", slog.Any("err", err))
				break
			}
			if closeIt {
				// As its close button would: what it asked is answered
				// cancel, which the app no longer waits for.
				log.Info("the app closes the window")
				fyne.Do(func() { u.Close(spec.Key()) })
				break
			}
			fyne.Do(u.Raise)
		}
		fyne.Do(a.Quit)
	}()
	u.Open(spec)
	if !u.Shown() {
		return fmt.Errorf("no window of kind %q to open", spec.Kind)
	}
	a.Run()
	cancel()
	u.Wait()
	return nil
}
