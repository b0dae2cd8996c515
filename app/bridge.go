package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"sync"
	"sync/atomic"

	"codehydra/internal/settings"
	"codehydra/prepare"
	"codehydra/workspace"
)

// The bridge is how a window process (windowproc.go) reaches the app: the
// tray process serves its Deps over the window process's stdin and stdout
// with net/rpc, one method (Bridge.Do) that names the call and carries its
// arguments and result as JSON, the form every value here already has
// (the MCP tools answer with the same types). Errors keep what the windows
// look at: a *workspace.Error's code and message, a failed setup's
// *prepare.SetupError, and prepare.ErrNotFailed.

// BridgeRequest is one call: Method names it, Args are its arguments.
// It, BridgeResponse and WireError are exported only because net/rpc
// wants them so.
type BridgeRequest struct {
	Method string
	Args   []byte
}

// BridgeResponse is a call's result, or its error.
type BridgeResponse struct {
	Result []byte
	Err    *WireError
}

// WireError is an error as it crosses the bridge.
type WireError struct {
	Text string
	// Code, Message and Cause are a *workspace.Error's (Cause its Err's
	// text, "" when it has none).
	Code           workspace.Code
	Message, Cause string
	// Setup is a *prepare.SetupError.
	Setup *prepare.SetupError
	// NotFailed is prepare.ErrNotFailed; SettingsChanged is
	// errSettingsChanged.
	NotFailed, SettingsChanged bool
}

func toWire(err error) *WireError {
	if err == nil {
		return nil
	}
	w := &WireError{
		Text:            err.Error(),
		NotFailed:       errors.Is(err, prepare.ErrNotFailed),
		SettingsChanged: errors.Is(err, errSettingsChanged),
	}
	// Only an error that is the *workspace.Error itself crosses as one: a
	// wrapped one keeps its whole text.
	if we, ok := err.(*workspace.Error); ok {
		w.Code, w.Message = we.Code, we.Message
		if we.Err != nil {
			w.Cause = we.Err.Error()
		}
	}
	var se *prepare.SetupError
	if errors.As(err, &se) {
		w.Setup = se
	}
	return w
}

// fromWire is the error w stands for.
func fromWire(w *WireError) error {
	switch {
	case w == nil:
		return nil
	case w.NotFailed:
		return prepare.ErrNotFailed
	case w.SettingsChanged:
		return errSettingsChanged
	case w.Setup != nil:
		return w.Setup
	case w.Code != "":
		e := &workspace.Error{Code: w.Code, Message: w.Message}
		if w.Cause != "" {
			e.Err = errors.New(w.Cause)
		}
		return e
	}
	return errors.New(w.Text)
}

// bridgeProtocol is the version of the bridge's methods and types: a
// window process refuses an app of another one.
const bridgeProtocol = 1

// errSettingsChanged is what a settings replacement answers when the
// settings changed since the window read them; the window reads and
// applies its change again.
var errSettingsChanged = errors.New("the settings changed meanwhile")

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

// Arguments of the bridge's methods.
type (
	pathArg   struct{ Path string }
	createArg struct{ Options workspace.CreateOptions }
	deleteArg struct {
		Path    string
		Options workspace.DeleteOptions
	}
	metadataArg struct {
		Path, Key string
		Value     *string
	}
	promptArg struct {
		Path   string
		Prompt workspace.FirstPrompt
	}
	configArg    struct{ Client, Path string }
	replaceArg   struct{ Old, New []byte }
	subscription struct{ ID int }
)

// Results of the bridge's methods that are more than one value.
type (
	serverResult struct {
		Port     int
		Password string
		OK       bool
	}
	binaryResult struct {
		Path string
		OK   bool
	}
	deliveryResult struct {
		Delivery workspace.PromptDelivery
		OK       bool
	}
	mcpResult struct {
		Port            int
		URL, PortNotice string
	}
	prepareResult struct {
		Phase    prepare.Phase
		Progress string
		Notes    []string
		Err      *WireError
		Anyway   bool
		OK       bool
	}
	// bridgeHello is what a window process learns first: the window to
	// open and which of the optional Deps the app has.
	bridgeHello struct {
		Protocol                        int
		Window                          windowSpec
		Agents, MCP, Gateway, Prepare   bool
		RotateToken, MCPConfig, Restart bool
		DefaultWorktreeRoot             string
	}
)

// bridgeServer serves the tray process's Deps to one window process.
type bridgeServer struct {
	u        *ui
	hello    bridgeHello
	handlers map[string]handler
	// raise is signalled when the window should come forward.
	raise chan struct{}
	// answered runs when the window's question is answered yes.
	answered func()
	// closed runs when the window process's window has closed.
	closed func()
	// conn is done when the window process has gone: what waits for it
	// (events, a raise) ends then. Calls run in the UI's context, so that
	// a create or delete goes on when its window closes, as it does when
	// the window is in this process.
	conn context.Context

	// greeted is set once the window process asked for its window.
	greeted atomic.Bool

	mu   sync.Mutex
	subs map[int]*bridgeSub
	next int
}

func (s *bridgeServer) wasGreeted() bool { return s.greeted.Load() }

// bridgeSub is a window process's subscription to the manager's events.
type bridgeSub struct {
	events <-chan workspace.Event
	cancel func()
}

// Bridge is the net/rpc receiver; net/rpc wants an exported type.
type Bridge struct{ s *bridgeServer }

// Do runs one call.
func (b *Bridge) Do(req BridgeRequest, resp *BridgeResponse) error {
	h, ok := b.s.handlers[req.Method]
	if !ok {
		resp.Err = toWire(fmt.Errorf("bridge: no method %q", req.Method))
		return nil
	}
	v, err := h(b.s.u.ctx, req.Args)
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

// serve answers the window process on conn until it closes it or ctx
// ends, then drops its subscriptions.
func (s *bridgeServer) serve(ctx context.Context, conn io.ReadWriteCloser) {
	connCtx, gone := context.WithCancel(ctx)
	defer gone()
	s.conn = connCtx
	s.subs = map[int]*bridgeSub{}
	s.handlers = s.methods()
	srv := rpc.NewServer()
	if err := srv.RegisterName("Bridge", &Bridge{s}); err != nil {
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

// methods is the table of what a window process may call: the Deps, plus
// the few things only the tray process can do (answer its question, hold
// the clipboard, restart the app).
func (s *bridgeServer) methods() map[string]handler {
	d := s.u.deps
	ws := d.Workspaces
	m := map[string]handler{
		"Hello": on(func(context.Context, struct{}) (any, error) {
			s.greeted.Store(true)
			return s.hello, nil
		}),
		"Projects": on(func(context.Context, struct{}) (any, error) { return ws.Projects(), nil }),
		"Workspaces": on(func(_ context.Context, a pathArg) (any, error) {
			return ws.Workspaces(a.Path)
		}),
		"AddProject": on(func(ctx context.Context, a pathArg) (any, error) { return ws.AddProject(ctx, a.Path) }),
		"RemoveProject": on(func(ctx context.Context, a pathArg) (any, error) {
			return nil, ws.RemoveProject(ctx, a.Path)
		}),
		"Create": on(func(ctx context.Context, a createArg) (any, error) { return ws.Create(ctx, a.Options) }),
		"Delete": on(func(ctx context.Context, a deleteArg) (any, error) {
			return nil, ws.Delete(ctx, a.Path, a.Options)
		}),
		"Status":        on(func(ctx context.Context, a pathArg) (any, error) { return ws.Status(ctx, a.Path) }),
		"Changes":       on(func(ctx context.Context, a pathArg) (any, error) { return ws.Changes(ctx, a.Path) }),
		"BranchCreated": on(func(ctx context.Context, a pathArg) (any, error) { return ws.BranchCreated(ctx, a.Path) }),
		"Metadata":      on(func(ctx context.Context, a pathArg) (any, error) { return ws.Metadata(ctx, a.Path) }),
		"SetMetadata": on(func(ctx context.Context, a metadataArg) (any, error) {
			return nil, ws.SetMetadata(ctx, a.Path, a.Key, a.Value)
		}),
		"Branches":         on(func(ctx context.Context, a pathArg) (any, error) { return ws.Branches(ctx, a.Path) }),
		"ReusableBranches": on(func(ctx context.Context, a pathArg) (any, error) { return ws.ReusableBranches(ctx, a.Path) }),
		"DefaultBase":      on(func(ctx context.Context, a pathArg) (any, error) { return ws.DefaultBase(ctx, a.Path) }),
		"Subscribe":        on(func(context.Context, struct{}) (any, error) { return s.subscribe(), nil }),
		"Events":           on(s.events),
		"Unsubscribe":      on(func(_ context.Context, a subscription) (any, error) { s.unsubscribe(a.ID); return nil, nil }),
		"Settings": on(func(context.Context, struct{}) (any, error) {
			return json.RawMessage(mustJSON(d.Settings.Get())), nil
		}),
		"ReplaceSettings": on(func(_ context.Context, a replaceArg) (any, error) { return nil, s.replaceSettings(a) }),
		"Answered": on(func(context.Context, struct{}) (any, error) {
			if s.answered != nil {
				s.u.do(s.answered)
			}
			return nil, nil
		}),
		"TrayState": on(func(context.Context, struct{}) (any, error) { return s.u.tray.State(), nil }),
		"Closed": on(func(context.Context, struct{}) (any, error) {
			if s.closed != nil {
				s.closed()
			}
			return nil, nil
		}),
		"CopyText": on(func(_ context.Context, text string) (any, error) {
			s.u.do(func() { s.u.copyText(text) })
			return nil, nil
		}),
		"WaitRaise": on(func(context.Context, struct{}) (any, error) {
			select {
			case <-s.raise:
				return nil, nil
			case <-s.conn.Done():
				return nil, s.conn.Err()
			}
		}),
	}
	s.agentMethods(m)
	s.optionalMethods(m)
	return m
}

// agentMethods adds the Agents' methods when the app has agents.
func (s *bridgeServer) agentMethods(m map[string]handler) {
	ag := s.u.deps.Agents
	if ag == nil {
		return
	}
	m["AgentStatus"] = on(func(_ context.Context, a pathArg) (any, error) { return ag.AgentStatus(a.Path), nil })
	m["OpencodeServer"] = on(func(_ context.Context, a pathArg) (any, error) {
		port, password, ok := ag.OpencodeServer(a.Path)
		return serverResult{port, password, ok}, nil
	})
	m["Restart"] = on(func(_ context.Context, a pathArg) (any, error) { return nil, ag.Restart(a.Path) })
	m["RestartAll"] = on(func(context.Context, struct{}) (any, error) { ag.RestartAll(); return nil, nil })
	m["FindBinary"] = on(func(context.Context, struct{}) (any, error) {
		path, ok := ag.FindBinary()
		return binaryResult{path, ok}, nil
	})
	m["QueuePrompt"] = on(func(_ context.Context, a promptArg) (any, error) { return ag.QueuePrompt(a.Path, a.Prompt) })
	m["PromptDelivery"] = on(func(_ context.Context, a pathArg) (any, error) {
		d, ok := ag.PromptDelivery(a.Path)
		return deliveryResult{d, ok}, nil
	})
}

// optionalMethods adds the methods of the other optional Deps the app has.
func (s *bridgeServer) optionalMethods(m map[string]handler) {
	d := s.u.deps
	if d.MCP != nil {
		m["MCP"] = on(func(context.Context, struct{}) (any, error) {
			return mcpResult{d.MCP.Port(), d.MCP.URL(), d.MCP.PortNotice()}, nil
		})
	}
	if d.Gateway != nil {
		m["Statuses"] = on(func(context.Context, struct{}) (any, error) { return d.Gateway.Statuses(), nil })
	}
	if p := d.Prepare; p != nil {
		m["PrepareState"] = on(func(_ context.Context, a pathArg) (any, error) {
			st, ok := p.State(a.Path)
			return prepareResult{st.Phase, st.Progress, st.Notes, toWire(st.Err), st.Anyway, ok}, nil
		})
		m["RetrySetup"] = on(func(_ context.Context, a pathArg) (any, error) { return nil, p.Retry(a.Path) })
		m["StartAnyway"] = on(func(_ context.Context, a pathArg) (any, error) { return nil, p.StartAnyway(a.Path) })
	}
	if d.RotateToken != nil {
		m["RotateToken"] = on(func(context.Context, struct{}) (any, error) { return nil, d.RotateToken() })
	}
	if d.MCPConfig != nil {
		m["MCPConfig"] = on(func(_ context.Context, a configArg) (any, error) { return d.MCPConfig(a.Client, a.Path) })
	}
	if d.Restart != nil {
		// The window asked for a restart: the app (this process) quits and
		// main starts it again.
		m["RestartApp"] = on(func(context.Context, struct{}) (any, error) {
			s.u.do(func() {
				d.Restart()
				s.u.app.Quit()
			})
			return nil, nil
		})
	}
}

func (s *bridgeServer) subscribe() subscription {
	events, cancel := s.u.deps.Workspaces.Subscribe()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.subs[s.next] = &bridgeSub{events, cancel}
	return subscription{s.next}
}

// events waits for the subscription's next events and returns them all;
// none once it was cancelled.
func (s *bridgeServer) events(_ context.Context, a subscription) (any, error) {
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

func (s *bridgeServer) unsubscribe(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub := s.subs[id]; sub != nil {
		sub.cancel()
		delete(s.subs, id)
	}
}

// replaceSettings saves a.New unless the settings are no longer a.Old.
func (s *bridgeServer) replaceSettings(a replaceArg) error {
	var next settings.Settings
	if err := json.Unmarshal(a.New, &next); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	// Checked first so that a refusal does not write the file (Update
	// always saves), and again inside Update, where it is certain.
	if !bytes.Equal(mustJSON(s.u.deps.Settings.Get()), a.Old) {
		return errSettingsChanged
	}
	changed := false
	err := s.u.deps.Settings.Update(func(cur *settings.Settings) {
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
