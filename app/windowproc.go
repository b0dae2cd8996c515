package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	"codehydra/assets"
	"codehydra/workspace"
)

// The tray app's windows open in a short-lived process of their own (a
// "window process": the same binary, run as Deps.WindowCommand), which
// reaches the app over the bridge (bridge.go) and ends when its window
// closes. Opening a window loads the GL driver (on Linux with Mesa about
// 54 MB, more with its heap); in a process of its own that memory is
// given back when the window closes, and the tray process never loads it.
// Where no window process can be started, the window opens in the tray
// process as before.

// windowSpec says which window to open, and for what: all a window
// process needs to build it.
type windowSpec struct {
	// Kind is one of the window kinds below.
	Kind string
	// Path is the project of "create" ("" to choose), the workspace of
	// "agent-url".
	Path      string
	Workspace workspace.Workspace // "delete"
	Project   workspace.Project   // "remove-project"
	// Title, Message and Action are an "error" window's and a "confirm"
	// question's.
	Title, Message, Action string
	// Link is the agent's address ("agent-url").
	Link string
	// Seq tells "error" windows apart: each gets its own.
	Seq int

	// answered runs in the tray process when a "confirm" question is
	// answered yes.
	answered func()
}

// The kinds of window.
const (
	windowCreate        = "create"
	windowDelete        = "delete"
	windowAddProject    = "add-project"
	windowRemoveProject = "remove-project"
	windowSettings      = "settings"
	windowAgentURL      = "agent-url"
	windowError         = "error"
	windowConfirm       = "confirm"
)

// key names the window for u.window: one of each key is open at a time.
func (s windowSpec) key() string {
	switch s.Kind {
	case windowDelete:
		return s.Kind + ":" + s.Workspace.Path
	case windowRemoveProject:
		return s.Kind + ":" + s.Project.Path
	case windowAgentURL:
		return s.Kind + ":" + s.Path
	case windowConfirm:
		return s.Kind + ":" + s.Title
	case windowError:
		return s.Kind + ":" + strconv.Itoa(s.Seq)
	}
	return s.Kind
}

// openSpec builds the window s asks for in this process.
func (u *ui) openSpec(s windowSpec) {
	switch s.Kind {
	case windowCreate:
		u.openCreate(s.Path)
	case windowDelete:
		u.openDelete(s.Workspace)
	case windowAddProject:
		u.openAddProject()
	case windowRemoveProject:
		u.openRemoveProject(s.Project)
	case windowSettings:
		u.openSettings()
	case windowAgentURL:
		u.showAgentURL(s.Path, s.Link)
	case windowError:
		u.showMessage(s)
	case windowConfirm:
		u.confirm(s.Title, s.Message, s.Action, s.answered)
	default:
		u.log.Warn("unknown window", slog.String("kind", s.Kind))
	}
}

// windowProcs starts and tracks the window processes of the tray process.
type windowProcs struct {
	u    *ui
	argv []string
	// wait bounds how long a window process may take to end once the app
	// quits, before it is killed.
	wait time.Duration

	mu    sync.Mutex
	procs map[string]chan struct{} // key → its raise signal
}

func newWindowProcs(u *ui, argv []string) *windowProcs {
	return &windowProcs{u: u, argv: argv, wait: 2 * time.Second, procs: map[string]chan struct{}{}}
}

// open shows the window of s in a window process, or brings forward the
// one open for its key. inApp opens it in this process instead, when no
// window process could run. Once the app is quitting, nothing opens.
func (p *windowProcs) open(s windowSpec, inApp func()) {
	if p.u.ctx.Err() != nil {
		return
	}
	key := s.key()
	p.mu.Lock()
	if raise, ok := p.procs[key]; ok {
		p.mu.Unlock()
		p.u.log.Info("window brought forward", slog.String("window", key))
		select {
		case raise <- struct{}{}:
		default:
		}
		return
	}
	raise := make(chan struct{}, 1)
	p.procs[key] = raise
	p.mu.Unlock()
	forget := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.procs[key] == raise {
			delete(p.procs, key)
		}
	}
	p.u.background(func(ctx context.Context) {
		defer forget()
		if err := p.run(ctx, s, raise, forget); err != nil && ctx.Err() == nil {
			p.u.log.Warn("no window process; opening the window in the app", slog.String("window", key), slog.Any("err", err))
			p.u.do(inApp)
		}
	})
}

// run runs one window process until it ends, serving it the bridge. An
// error means it never asked for its window (it could not start, or
// failed at once).
func (p *windowProcs) run(ctx context.Context, s windowSpec, raise chan struct{}, closed func()) error {
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
	p.u.log.Info("window process started", slog.String("window", s.key()), slog.Int("pid", cmd.Process.Pid))
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		p.logLines(s.key(), stderr)
	}()
	b := &bridgeServer{u: p.u, hello: p.hello(s), raise: raise, answered: s.answered, closed: closed}
	b.serve(ctx, pipeConn{stdout, stdin})
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
	p.u.log.Info("window process ended", slog.String("window", s.key()), slog.Any("status", werr))
	if !b.wasGreeted() {
		if werr == nil {
			werr = errors.New("it ended before it asked for its window")
		}
		return fmt.Errorf("window process: %w", werr)
	}
	return nil
}

// hello is what the window process of s learns first.
func (p *windowProcs) hello(s windowSpec) bridgeHello {
	d := p.u.deps
	return bridgeHello{
		Protocol:            bridgeProtocol,
		Window:              s,
		Agents:              d.Agents != nil,
		MCP:                 d.MCP != nil,
		Gateway:             d.Gateway != nil,
		Prepare:             d.Prepare != nil,
		RotateToken:         d.RotateToken != nil,
		MCPConfig:           d.MCPConfig != nil,
		Restart:             d.Restart != nil,
		DefaultWorktreeRoot: d.DefaultWorktreeRoot,
	}
}

// logLines passes what a window process writes on stderr (its log, and
// Fyne's) on to the app's log.
func (p *windowProcs) logLines(key string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		p.u.log.Info("window process", slog.String("window", key), slog.String("line", sc.Text()))
	}
}

// PipeConn joins a reading and a writing end into one connection: a window
// process's stdout and stdin in the app, its own stdin and stdout in the
// window process.
func PipeConn(r io.ReadCloser, w io.WriteCloser) io.ReadWriteCloser { return pipeConn{r, w} }

type pipeConn struct {
	io.ReadCloser
	w io.WriteCloser
}

func (c pipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }

func (c pipeConn) Close() error {
	err := c.w.Close()
	if rerr := c.ReadCloser.Close(); err == nil {
		err = rerr
	}
	return err
}

// RunWindow is the window process: it asks the app on conn (its stdin and
// stdout) which window to show, shows it, and returns when the window is
// closed or the app has gone. Its log goes to log.
func RunWindow(ctx context.Context, conn io.ReadWriteCloser, log *slog.Logger) error {
	c := newBridgeClient(conn, log)
	h, err := c.hello()
	if err != nil {
		return fmt.Errorf("this command is started by the CodeHydra app for its windows: %w", err)
	}
	if h.Protocol != bridgeProtocol {
		// A binary replaced under a running app (an upgrade) may not
		// speak the app's bridge.
		return fmt.Errorf("the running CodeHydra app speaks bridge protocol %d, this binary %d: restart CodeHydra", h.Protocol, bridgeProtocol)
	}
	a := fyneapp.NewWithID(DefaultAppID)
	if icon := assets.Icon(256); len(icon) > 0 {
		a.SetIcon(fyne.NewStaticResource("codehydra.png", icon))
	}
	uiCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	u := newUI(uiCtx, a, c.deps(h))
	u.notify = desktopNotifier(a, os.Getenv)
	u.clipboard = func(text string) { c.quiet("CopyText", c.call("CopyText", text, nil)) }
	// The windows ask the tray's state (which agents are busy, which
	// workspace is being deleted): the app's tray has it.
	u.tray.remote = func() State {
		st, err := get[State](c, "TrayState", noArgs)
		c.quiet("TrayState", err)
		return st
	}
	spec := h.Window
	if spec.Kind == windowConfirm {
		spec.answered = func() { c.quiet("Answered", c.call("Answered", noArgs, nil)) }
	}
	go func() {
		var err error
		for err == nil {
			if err = c.call("WaitRaise", noArgs, nil); err == nil {
				fyne.Do(u.raiseAll)
			}
		}
		log.Info("the app has gone; closing the window", slog.Any("err", err))
		fyne.Do(a.Quit)
	}()
	// The app learns at once that the window closed, before this process
	// ends: a click that opens it again then starts a new process rather
	// than raising this one.
	u.closed = func(key string) {
		if key == spec.key() {
			c.quiet("Closed", c.call("Closed", noArgs, nil))
		}
	}
	u.openSpec(spec)
	if len(u.windows) == 0 {
		return fmt.Errorf("no window of kind %q to open", spec.Kind)
	}
	a.Run()
	cancel()
	u.wait()
	return nil
}

// raiseAll brings this process's windows forward.
func (u *ui) raiseAll() {
	for _, w := range u.windows {
		w.Show()
		w.RequestFocus()
	}
}
