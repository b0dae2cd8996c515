package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/rpc"
	"sync"
	"sync/atomic"

	"codehydra/app/window"
	"codehydra/internal/settings"
	"codehydra/workspace"
)

// App is what the tray app serves one window process: the Deps its own
// windows get, and what only the tray process can do for the window.
type App struct {
	// Deps are the app's parts; Workspaces, Settings and Tray are
	// required, the others are served when set.
	Deps window.Deps
	// Window is the window the window process opens.
	Window window.Spec
	// CopyText puts text on the app's clipboard, which outlives the
	// window.
	CopyText func(text string)
	// Answered runs when the window's question is answered yes; nil for a
	// window that asks none.
	Answered func()
	// Elicited runs with the answer of the window's question of a
	// gateway MCP server (window.KindElicit); nil for another window.
	Elicited func(window.Answer)
	// Closed runs when the window process's window has closed.
	Closed func()
	// Raise is signalled when the window should come forward.
	Raise <-chan struct{}
	// Close is signalled when the window should close (what it stands
	// for went away, e.g. a question answered elsewhere).
	Close <-chan struct{}
}

// Server serves an App to one window process.
type Server struct {
	app      App
	hello    Hello
	handlers map[string]handler
	// conn is done when the window process has gone: what waits for it
	// (events, a raise) ends then. Calls run in the context Serve was
	// given, so that a create or delete goes on when its window closes,
	// as it does when the window is in the tray process.
	conn context.Context

	// greeted is set once the window process asked for its window.
	greeted atomic.Bool

	mu   sync.Mutex
	subs map[int]*bridgeSub
	next int
}

// bridgeSub is a window process's subscription to the manager's events.
type bridgeSub struct {
	events <-chan workspace.Event
	cancel func()
}

// NewServer makes the server of a.
func NewServer(a App) *Server {
	d := a.Deps
	s := &Server{
		app: a,
		hello: Hello{
			Protocol:            Protocol,
			Window:              a.Window,
			Agents:              d.Agents != nil,
			MCP:                 d.MCP != nil,
			Gateway:             d.Gateway != nil,
			Prepare:             d.Prepare != nil,
			Landing:             d.Landing != nil,
			RotateToken:         d.RotateToken != nil,
			Restart:             d.Restart != nil,
			DefaultWorktreeRoot: d.DefaultWorktreeRoot,
		},
		subs: map[int]*bridgeSub{},
	}
	s.handlers = s.methods()
	return s
}

// Greeted reports whether the window process asked for its window: one
// that did not never ran.
func (s *Server) Greeted() bool { return s.greeted.Load() }

// Bridge is the net/rpc receiver; net/rpc wants an exported type.
type Bridge struct {
	s   *Server
	ctx context.Context
}

// Do runs one call.
func (b *Bridge) Do(req Request, resp *Response) error {
	h, ok := b.s.handlers[req.Method]
	if !ok {
		resp.Err = toWire(fmt.Errorf("bridge: no method %q", req.Method))
		return nil
	}
	v, err := h(b.ctx, req.Args)
	if err != nil {
		resp.Err = toWire(err)
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		resp.Err = toWire(fmt.Errorf("bridge result of %s: %w", req.Method, err))
		return nil
	}
	resp.Result = data
	return nil
}

// Serve answers the window process on conn until it closes it or ctx
// ends, then drops its subscriptions. Calls run in ctx. A Server serves
// once.
func (s *Server) Serve(ctx context.Context, conn io.ReadWriteCloser) {
	connCtx, gone := context.WithCancel(ctx)
	defer gone()
	s.conn = connCtx
	srv := rpc.NewServer()
	if err := srv.RegisterName("Bridge", &Bridge{s, ctx}); err != nil {
		panic(err) // Bridge's methods are fixed: only a programming error fails
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	// ServeConn waits for the calls in progress before it returns; the
	// ones that wait for the window process (events, a raise) must learn
	// as soon as its end of the pipe closes.
	srv.ServeConn(endingConn{conn, gone})
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sub := range s.subs {
		sub.cancel()
		delete(s.subs, id)
	}
}

// handler runs one bridge method on its JSON arguments.
type handler func(ctx context.Context, args []byte) (any, error)

// on makes a handler of fn, which takes its arguments as an A.
func on[A any](fn func(ctx context.Context, a A) (any, error)) handler {
	return func(ctx context.Context, args []byte) (any, error) {
		var a A
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, fmt.Errorf("bridge arguments: %w", err)
		}
		return fn(ctx, a)
	}
}

// methods is the table of what a window process may call: the Deps it
// has, plus the few things only the tray process can do (hold the
// clipboard, take the question's answer, raise the window).
func (s *Server) methods() map[string]handler {
	m := map[string]handler{
		"Hello": on(func(context.Context, struct{}) (any, error) {
			s.greeted.Store(true)
			return s.hello, nil
		}),
	}
	s.workspaceMethods(m)
	s.settingsMethods(m)
	s.trayMethods(m)
	s.agentMethods(m)
	s.optionalMethods(m)
	s.landingMethods(m)
	s.appMethods(m)
	return m
}

// workspaceMethods adds the Workspaces' methods, and the two that carry
// a subscription's events.
func (s *Server) workspaceMethods(m map[string]handler) {
	ws := s.app.Deps.Workspaces
	m["Workspaces.Projects"] = on(func(context.Context, struct{}) (any, error) { return ws.Projects(), nil })
	m["Workspaces.Workspaces"] = on(func(_ context.Context, a pathArg) (any, error) { return ws.Workspaces(a.Path) })
	m["Workspaces.AddProject"] = on(func(ctx context.Context, a pathArg) (any, error) { return ws.AddProject(ctx, a.Path) })
	m["Workspaces.RemoveProject"] = on(func(ctx context.Context, a pathArg) (any, error) {
		return nil, ws.RemoveProject(ctx, a.Path)
	})
	m["Workspaces.Create"] = on(func(ctx context.Context, a createArg) (any, error) { return ws.Create(ctx, a.Options) })
	m["Workspaces.Delete"] = on(func(ctx context.Context, a deleteArg) (any, error) {
		return nil, ws.Delete(ctx, a.Path, a.Options)
	})
	m["Workspaces.Status"] = on(func(ctx context.Context, a pathArg) (any, error) { return ws.Status(ctx, a.Path) })
	m["Workspaces.Changes"] = on(func(ctx context.Context, a pathArg) (any, error) { return ws.Changes(ctx, a.Path) })
	m["Workspaces.BranchCreated"] = on(func(ctx context.Context, a pathArg) (any, error) { return ws.BranchCreated(ctx, a.Path) })
	m["Workspaces.Metadata"] = on(func(ctx context.Context, a pathArg) (any, error) { return ws.Metadata(ctx, a.Path) })
	m["Workspaces.SetMetadata"] = on(func(ctx context.Context, a metadataArg) (any, error) {
		return nil, ws.SetMetadata(ctx, a.Path, a.Key, a.Value)
	})
	m["Workspaces.Branches"] = on(func(ctx context.Context, a pathArg) (any, error) { return ws.Branches(ctx, a.Path) })
	m["Workspaces.ReusableBranches"] = on(func(ctx context.Context, a pathArg) (any, error) {
		return ws.ReusableBranches(ctx, a.Path)
	})
	m["Workspaces.DefaultBase"] = on(func(ctx context.Context, a pathArg) (any, error) { return ws.DefaultBase(ctx, a.Path) })
	m["Workspaces.Subscribe"] = on(func(context.Context, struct{}) (any, error) { return s.subscribe(), nil })
	m["Workspaces.Events"] = on(s.events)
	m["Workspaces.Unsubscribe"] = on(func(_ context.Context, a subscription) (any, error) {
		s.unsubscribe(a.ID)
		return nil, nil
	})
}

// settingsMethods adds the SettingsStore's: its Update is a read, then a
// replacement that is refused when the settings changed meanwhile.
func (s *Server) settingsMethods(m map[string]handler) {
	m["Settings.Get"] = on(func(context.Context, struct{}) (any, error) {
		return json.RawMessage(mustJSON(s.app.Deps.Settings.Get())), nil
	})
	m["Settings.Replace"] = on(func(_ context.Context, a replaceArg) (any, error) { return nil, s.replaceSettings(a) })
}

// trayMethods adds the Tray's: the windows read the app's tray, which
// follows every event, rather than following them themselves.
func (s *Server) trayMethods(m map[string]handler) {
	tray := s.app.Deps.Tray
	m["Tray.BusyAgents"] = on(func(context.Context, struct{}) (any, error) { return tray.BusyAgents(), nil })
	m["Tray.DeleteProgress"] = on(func(_ context.Context, a pathArg) (any, error) { return tray.DeleteProgress(a.Path), nil })
}

// agentMethods adds the Agents' methods when the app has agents.
func (s *Server) agentMethods(m map[string]handler) {
	ag := s.app.Deps.Agents
	if ag == nil {
		return
	}
	m["Agents.AgentStatus"] = on(func(_ context.Context, a pathArg) (any, error) { return ag.AgentStatus(a.Path), nil })
	m["Agents.OpencodeServer"] = on(func(_ context.Context, a pathArg) (any, error) {
		port, password, ok := ag.OpencodeServer(a.Path)
		return serverResult{port, password, ok}, nil
	})
	m["Agents.Restart"] = on(func(_ context.Context, a pathArg) (any, error) { return nil, ag.Restart(a.Path) })
	m["Agents.RestartAll"] = on(func(context.Context, struct{}) (any, error) { ag.RestartAll(); return nil, nil })
	m["Agents.FindBinary"] = on(func(context.Context, struct{}) (any, error) {
		path, ok := ag.FindBinary()
		return binaryResult{path, ok}, nil
	})
	m["Agents.QueuePrompt"] = on(func(_ context.Context, a promptArg) (any, error) { return ag.QueuePrompt(a.Path, a.Prompt) })
	m["Agents.PromptDelivery"] = on(func(_ context.Context, a pathArg) (any, error) {
		d, ok := ag.PromptDelivery(a.Path)
		return deliveryResult{d, ok}, nil
	})
}

// optionalMethods adds the methods of the other optional Deps the app has.
func (s *Server) optionalMethods(m map[string]handler) {
	d := s.app.Deps
	if d.MCP != nil {
		m["MCP.Server"] = on(func(context.Context, struct{}) (any, error) {
			return mcpResult{d.MCP.Port(), d.MCP.URL(), d.MCP.PortNotice()}, nil
		})
	}
	if d.Gateway != nil {
		m["Gateway.Statuses"] = on(func(context.Context, struct{}) (any, error) { return d.Gateway.Statuses(), nil })
		m["Gateway.ToolChanges"] = on(func(_ context.Context, a serverArg) (any, error) { return d.Gateway.ToolChanges(a.Server), nil })
		m["Gateway.AcceptToolChange"] = on(func(_ context.Context, a toolChangeArg) (any, error) {
			return nil, d.Gateway.AcceptToolChange(a.Server, a.Tool, a.Hash)
		})
	}
	if p := d.Prepare; p != nil {
		m["Prepare.State"] = on(func(_ context.Context, a pathArg) (any, error) {
			st, ok := p.State(a.Path)
			return prepareResult{st.Phase, st.Progress, st.Notes, toWire(st.Err), st.Anyway, ok}, nil
		})
		m["Prepare.Retry"] = on(func(_ context.Context, a pathArg) (any, error) { return nil, p.Retry(a.Path) })
		m["Prepare.StartAnyway"] = on(func(_ context.Context, a pathArg) (any, error) { return nil, p.StartAnyway(a.Path) })
	}
	if d.RotateToken != nil {
		m["RotateToken"] = on(func(context.Context, struct{}) (any, error) { return nil, d.RotateToken() })
	}
	if d.Restart != nil {
		m["Restart"] = on(func(context.Context, struct{}) (any, error) { d.Restart(); return nil, nil })
	}
}

// landingMethods adds the Landing's methods when the app can land.
func (s *Server) landingMethods(m map[string]handler) {
	l := s.app.Deps.Landing
	if l == nil {
		return
	}
	m["Landing.Diff"] = on(func(ctx context.Context, a diffArg) (any, error) {
		return l.Diff(ctx, a.Path, workspace.DiffOptions{File: a.File, Offset: a.Offset, MaxBytes: a.MaxBytes})
	})
	m["Landing.SendReview"] = on(func(_ context.Context, a reviewArg) (any, error) { return l.SendReview(a.Path, a.Review) })
	m["Landing.Reviews"] = on(func(_ context.Context, a pathArg) (any, error) { return l.Reviews(a.Path), nil })
	m["Landing.Preflight"] = on(func(ctx context.Context, a mergeArg) (any, error) { return l.Preflight(ctx, a.Path, a.Options) })
	m["Landing.Merge"] = on(func(ctx context.Context, a mergeArg) (any, error) { return l.Merge(ctx, a.Path, a.Options) })
	m["Landing.UpdateFromBase"] = on(func(ctx context.Context, a updateArg) (any, error) {
		return l.UpdateFromBase(ctx, a.Path, a.Mode)
	})
	m["Landing.CreatePullRequest"] = on(func(ctx context.Context, a pullRequestArg) (any, error) {
		return l.CreatePullRequest(ctx, a.Path, a.Options)
	})
}

// appMethods adds what only the tray process does for its window.
func (s *Server) appMethods(m map[string]handler) {
	a := s.app
	m["App.CopyText"] = on(func(_ context.Context, text string) (any, error) {
		a.CopyText(text)
		return nil, nil
	})
	m["App.Answered"] = on(func(context.Context, struct{}) (any, error) {
		if a.Answered != nil {
			a.Answered()
		}
		return nil, nil
	})
	m["App.Elicited"] = on(func(_ context.Context, ans window.Answer) (any, error) {
		if a.Elicited != nil {
			a.Elicited(ans)
		}
		return nil, nil
	})
	m["App.Closed"] = on(func(context.Context, struct{}) (any, error) {
		if a.Closed != nil {
			a.Closed()
		}
		return nil, nil
	})
	m["App.WaitRaise"] = on(func(context.Context, struct{}) (any, error) {
		select {
		case <-a.Raise:
			return nil, nil
		case <-a.Close:
			return windowSignal{Close: true}, nil
		case <-s.conn.Done():
			return nil, s.conn.Err()
		}
	})
}

func (s *Server) subscribe() subscription {
	events, cancel := s.app.Deps.Workspaces.Subscribe()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.subs[s.next] = &bridgeSub{events, cancel}
	return subscription{s.next}
}

// events waits for the subscription's next events and returns them all;
// none once it was cancelled.
func (s *Server) events(_ context.Context, a subscription) (any, error) {
	s.mu.Lock()
	sub := s.subs[a.ID]
	s.mu.Unlock()
	if sub == nil {
		return []workspace.Event{}, nil
	}
	var batch []workspace.Event
	select {
	case e, ok := <-sub.events:
		if !ok {
			return []workspace.Event{}, nil
		}
		batch = append(batch, e)
	case <-s.conn.Done():
		return nil, s.conn.Err()
	}
	for {
		select {
		case e, ok := <-sub.events:
			if !ok {
				return batch, nil
			}
			batch = append(batch, e)
		default:
			return batch, nil
		}
	}
}

func (s *Server) unsubscribe(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub := s.subs[id]; sub != nil {
		sub.cancel()
		delete(s.subs, id)
	}
}

// replaceSettings saves a.New unless the settings are no longer a.Old.
func (s *Server) replaceSettings(a replaceArg) error {
	var next settings.Settings
	if err := json.Unmarshal(a.New, &next); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	store := s.app.Deps.Settings
	// Checked first so that a refusal does not write the file (Update
	// always saves), and again inside Update, where it is certain.
	if !bytes.Equal(mustJSON(store.Get()), a.Old) {
		return errSettingsChanged
	}
	changed := false
	err := store.Update(func(cur *settings.Settings) {
		if !bytes.Equal(mustJSON(*cur), a.Old) {
			changed = true
			return
		}
		*cur = next
	})
	if changed {
		return errSettingsChanged
	}
	return err
}

// mustJSON is v as JSON; v is one of the bridge's own types, which always
// marshal.
func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// endingConn runs gone once reading from it fails: the other side has
// closed it (or it was closed here).
type endingConn struct {
	io.ReadWriteCloser
	gone func()
}

func (c endingConn) Read(b []byte) (int, error) {
	n, err := c.ReadWriteCloser.Read(b)
	if err != nil {
		c.gone()
	}
	return n, err
}
