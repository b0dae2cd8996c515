package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/rpc"
	"sync"

	"codehydra/app/window"
	"codehydra/internal/settings"
	"codehydra/prepare"
	"codehydra/workspace"
)

// Client is the window process's end of the bridge. A call that cannot
// reach the tray process (it quit) fails with that error; methods without
// an error to return log it and report the zero value.
type Client struct {
	rpc *rpc.Client
	log *slog.Logger
}

// NewClient talks to the tray process on conn; failures that have no
// error to return go to log.
func NewClient(conn io.ReadWriteCloser, log *slog.Logger) *Client {
	return &Client{rpc: rpc.NewClient(conn), log: log}
}

// Close closes the connection: the tray process sees the window process
// go.
func (c *Client) Close() error { return c.rpc.Close() }

// call runs method with args and decodes its result into out (if not nil).
func (c *Client) call(method string, args, out any) error {
	data, err := json.Marshal(args)
	if err != nil {
		return err
	}
	var resp Response
	if err := c.rpc.Call("Bridge.Do", Request{Method: method, Args: data}, &resp); err != nil {
		return fmt.Errorf("the CodeHydra app could not be reached: %w", err)
	}
	if resp.Err != nil {
		return fromWire(resp.Err)
	}
	if out == nil || resp.Result == nil {
		return nil
	}
	return json.Unmarshal(resp.Result, out)
}

// get is call for a method that returns a T.
func get[T any](c *Client, method string, args any) (T, error) {
	var v T
	err := c.call(method, args, &v)
	return v, err
}

// quiet is for the methods whose interface has no error to return: the
// failure is logged and the zero value stands.
func (c *Client) quiet(method string, err error) {
	if err != nil {
		c.log.Warn("bridge call failed", slog.String("method", method), slog.Any("err", err))
	}
}

// Hello asks the tray process which window to open and what it has.
func (c *Client) Hello() (Hello, error) { return get[Hello](c, "Hello", noArgs) }

// Deps are the windows' Deps as the tray process has them, after h: each
// method a call over the bridge.
func (c *Client) Deps(h Hello) window.Deps {
	d := window.Deps{
		Workspaces:          workspacesClient{c},
		Settings:            settingsClient{c},
		Tray:                trayClient{c},
		Logger:              c.log,
		DefaultWorktreeRoot: h.DefaultWorktreeRoot,
	}
	if h.Agents {
		d.Agents = agentsClient{c}
	}
	if h.MCP {
		d.MCP = mcpClient{c}
	}
	if h.Gateway {
		d.Gateway = gatewayClient{c}
	}
	if h.Prepare {
		d.Prepare = prepareClient{c}
	}
	if h.Landing {
		d.Landing = landingClient{c}
	}
	if h.RotateToken {
		d.RotateToken = func() error { return c.call("RotateToken", noArgs, nil) }
	}
	if h.Restart {
		d.Restart = func() { c.quiet("Restart", c.call("Restart", noArgs, nil)) }
	}
	return d
}

// CopyText puts text on the tray process's clipboard.
func (c *Client) CopyText(text string) { c.quiet("App.CopyText", c.call("App.CopyText", text, nil)) }

// Answered tells the tray process that the window's question was
// answered yes.
func (c *Client) Answered() { c.quiet("App.Answered", c.call("App.Answered", noArgs, nil)) }

// Elicited gives the tray process the answer of the window's question
// (window.KindElicit).
func (c *Client) Elicited(a window.Answer) {
	c.quiet("App.Elicited", c.call("App.Elicited", a, nil))
}

// Closed tells the tray process that the window has closed, before this
// process ends: a click that opens it again then starts a new process
// rather than raising this one.
func (c *Client) Closed() { c.quiet("App.Closed", c.call("App.Closed", noArgs, nil)) }

// WaitRaise returns when the window should come forward, or with close
// set when it should close; an error when the tray process has gone.
func (c *Client) WaitRaise() (close bool, err error) {
	var s windowSignal
	err = c.call("App.WaitRaise", noArgs, &s)
	return s.Close, err
}

// windowSignal is App.WaitRaise's answer: null (an older app's too) to
// come forward.
type windowSignal struct{ Close bool }

// workspacesClient is window.Workspaces over the bridge.
type workspacesClient struct{ c *Client }

func (w workspacesClient) Projects() []workspace.Project {
	v, err := get[[]workspace.Project](w.c, "Workspaces.Projects", noArgs)
	w.c.quiet("Workspaces.Projects", err)
	return v
}

func (w workspacesClient) Workspaces(projectPath string) ([]workspace.Workspace, error) {
	return get[[]workspace.Workspace](w.c, "Workspaces.Workspaces", pathArg{projectPath})
}

func (w workspacesClient) AddProject(_ context.Context, path string) (workspace.Project, error) {
	return get[workspace.Project](w.c, "Workspaces.AddProject", pathArg{path})
}

func (w workspacesClient) RemoveProject(_ context.Context, path string) error {
	return w.c.call("Workspaces.RemoveProject", pathArg{path}, nil)
}

func (w workspacesClient) Create(_ context.Context, o workspace.CreateOptions) (workspace.Workspace, error) {
	return get[workspace.Workspace](w.c, "Workspaces.Create", createArg{o})
}

func (w workspacesClient) Delete(_ context.Context, wsPath string, o workspace.DeleteOptions) error {
	return w.c.call("Workspaces.Delete", deleteArg{wsPath, o}, nil)
}

func (w workspacesClient) Status(_ context.Context, wsPath string) (workspace.Status, error) {
	return get[workspace.Status](w.c, "Workspaces.Status", pathArg{wsPath})
}

func (w workspacesClient) Changes(_ context.Context, wsPath string) (workspace.Changes, error) {
	return get[workspace.Changes](w.c, "Workspaces.Changes", pathArg{wsPath})
}

func (w workspacesClient) BranchCreated(_ context.Context, wsPath string) (bool, error) {
	return get[bool](w.c, "Workspaces.BranchCreated", pathArg{wsPath})
}

func (w workspacesClient) Metadata(_ context.Context, wsPath string) (map[string]string, error) {
	return get[map[string]string](w.c, "Workspaces.Metadata", pathArg{wsPath})
}

func (w workspacesClient) SetMetadata(_ context.Context, wsPath, key string, value *string) error {
	return w.c.call("Workspaces.SetMetadata", metadataArg{wsPath, key, value}, nil)
}

func (w workspacesClient) Branches(_ context.Context, projectPath string) ([]string, error) {
	return get[[]string](w.c, "Workspaces.Branches", pathArg{projectPath})
}

func (w workspacesClient) ReusableBranches(_ context.Context, projectPath string) ([]string, error) {
	return get[[]string](w.c, "Workspaces.ReusableBranches", pathArg{projectPath})
}

func (w workspacesClient) DefaultBase(_ context.Context, projectPath string) (string, error) {
	return get[string](w.c, "Workspaces.DefaultBase", pathArg{projectPath})
}

// Subscribe follows the tray process's events; the channel closes when
// cancel is called or the tray process has gone.
func (w workspacesClient) Subscribe() (<-chan workspace.Event, func()) {
	out := make(chan workspace.Event, 64)
	sub, err := get[subscription](w.c, "Workspaces.Subscribe", noArgs)
	if err != nil {
		w.c.quiet("Workspaces.Subscribe", err)
		close(out)
		return out, func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(out)
		for {
			batch, err := get[[]workspace.Event](w.c, "Workspaces.Events", sub)
			if err != nil || len(batch) == 0 {
				return
			}
			for _, e := range batch {
				select {
				case out <- e:
				case <-done:
					return
				}
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			close(done)
			w.c.quiet("Workspaces.Unsubscribe", w.c.call("Workspaces.Unsubscribe", sub, nil))
		})
	}
}

// agentsClient is window.Agents over the bridge.
type agentsClient struct{ c *Client }

func (a agentsClient) AgentStatus(path string) workspace.AgentStatus {
	v, err := get[workspace.AgentStatus](a.c, "Agents.AgentStatus", pathArg{path})
	a.c.quiet("Agents.AgentStatus", err)
	return v
}

func (a agentsClient) OpencodeServer(path string) (int, string, bool) {
	v, err := get[serverResult](a.c, "Agents.OpencodeServer", pathArg{path})
	a.c.quiet("Agents.OpencodeServer", err)
	return v.Port, v.Password, v.OK
}

func (a agentsClient) Restart(path string) error {
	return a.c.call("Agents.Restart", pathArg{path}, nil)
}

func (a agentsClient) RestartAll() {
	a.c.quiet("Agents.RestartAll", a.c.call("Agents.RestartAll", noArgs, nil))
}

func (a agentsClient) FindBinary() (string, bool) {
	v, err := get[binaryResult](a.c, "Agents.FindBinary", noArgs)
	a.c.quiet("Agents.FindBinary", err)
	return v.Path, v.OK
}

func (a agentsClient) QueuePrompt(path string, p workspace.FirstPrompt) (workspace.PromptDelivery, error) {
	return get[workspace.PromptDelivery](a.c, "Agents.QueuePrompt", promptArg{path, p})
}

func (a agentsClient) PromptDelivery(path string) (workspace.PromptDelivery, bool) {
	v, err := get[deliveryResult](a.c, "Agents.PromptDelivery", pathArg{path})
	a.c.quiet("Agents.PromptDelivery", err)
	return v.Delivery, v.OK
}

// settingsClient is window.SettingsStore over the bridge.
type settingsClient struct{ c *Client }

func (s settingsClient) Get() settings.Settings {
	v, _, err := s.read()
	s.c.quiet("Settings.Get", err)
	return v
}

// read reads the settings, and their JSON for Settings.Replace.
func (s settingsClient) read() (settings.Settings, []byte, error) {
	raw, err := get[json.RawMessage](s.c, "Settings.Get", noArgs)
	if err != nil {
		return settings.Settings{}, nil, err
	}
	var v settings.Settings
	err = json.Unmarshal(raw, &v)
	return v, raw, err
}

// Update applies fn to the settings and saves them, as the store's Update
// does; the tray process refuses the save when the settings changed after
// they were read, and fn then runs again on the new ones.
func (s settingsClient) Update(fn func(*settings.Settings)) error {
	for range 5 {
		v, old, err := s.read()
		if err != nil {
			return err
		}
		fn(&v)
		next, err := json.Marshal(v)
		if err != nil {
			return err
		}
		err = s.c.call("Settings.Replace", replaceArg{old, next}, nil)
		if !errors.Is(err, errSettingsChanged) {
			return err
		}
	}
	return errors.New("the settings kept changing while they were saved; try again")
}

// trayClient is window.Tray over the bridge: the app's tray.
type trayClient struct{ c *Client }

func (t trayClient) BusyAgents() []string {
	v, err := get[[]string](t.c, "Tray.BusyAgents", noArgs)
	t.c.quiet("Tray.BusyAgents", err)
	return v
}

func (t trayClient) DeleteProgress(path string) window.DeleteProgress {
	v, err := get[window.DeleteProgress](t.c, "Tray.DeleteProgress", pathArg{path})
	t.c.quiet("Tray.DeleteProgress", err)
	return v
}

// mcpClient is window.MCPServer over the bridge.
type mcpClient struct{ c *Client }

func (m mcpClient) server() mcpResult {
	v, err := get[mcpResult](m.c, "MCP.Server", noArgs)
	m.c.quiet("MCP.Server", err)
	return v
}

func (m mcpClient) Port() int          { return m.server().Port }
func (m mcpClient) URL() string        { return m.server().URL }
func (m mcpClient) PortNotice() string { return m.server().PortNotice }

// gatewayClient is window.MCPGateway over the bridge.
type gatewayClient struct{ c *Client }

func (g gatewayClient) Statuses() []window.MCPServerStatus {
	v, err := get[[]window.MCPServerStatus](g.c, "Gateway.Statuses", noArgs)
	g.c.quiet("Gateway.Statuses", err)
	return v
}

func (g gatewayClient) ToolChanges(server string) []window.MCPToolChange {
	v, err := get[[]window.MCPToolChange](g.c, "Gateway.ToolChanges", serverArg{server})
	g.c.quiet("Gateway.ToolChanges", err)
	return v
}

func (g gatewayClient) AcceptToolChange(server, tool, hash string) error {
	return g.c.call("Gateway.AcceptToolChange", toolChangeArg{server, tool, hash}, nil)
}

// prepareClient is window.Preparation over the bridge.
type prepareClient struct{ c *Client }

func (p prepareClient) State(path string) (prepare.State, bool) {
	v, err := get[prepareResult](p.c, "Prepare.State", pathArg{path})
	p.c.quiet("Prepare.State", err)
	return prepare.State{Phase: v.Phase, Progress: v.Progress, Notes: v.Notes, Err: fromWire(v.Err), Anyway: v.Anyway}, v.OK
}

func (p prepareClient) Retry(path string) error { return p.c.call("Prepare.Retry", pathArg{path}, nil) }

func (p prepareClient) StartAnyway(path string) error {
	return p.c.call("Prepare.StartAnyway", pathArg{path}, nil)
}

// landingClient is window.Landing over the bridge. A diff's Withhold does
// not cross: the app's Landing decides what is withheld.
type landingClient struct{ c *Client }

func (l landingClient) Diff(_ context.Context, wsPath string, o workspace.DiffOptions) (workspace.Diff, error) {
	return get[workspace.Diff](l.c, "Landing.Diff", diffArg{wsPath, o.File, o.Offset, o.MaxBytes})
}

func (l landingClient) SendReview(path string, r workspace.Review) (workspace.ReviewDelivery, error) {
	return get[workspace.ReviewDelivery](l.c, "Landing.SendReview", reviewArg{path, r})
}

func (l landingClient) Reviews(path string) []workspace.ReviewDelivery {
	v, err := get[[]workspace.ReviewDelivery](l.c, "Landing.Reviews", pathArg{path})
	l.c.quiet("Landing.Reviews", err)
	return v
}

func (l landingClient) Preflight(_ context.Context, wsPath string, o workspace.MergeOptions) (workspace.Preflight, error) {
	return get[workspace.Preflight](l.c, "Landing.Preflight", mergeArg{wsPath, o})
}

func (l landingClient) Merge(_ context.Context, wsPath string, o workspace.MergeOptions) (workspace.MergeResult, error) {
	return get[workspace.MergeResult](l.c, "Landing.Merge", mergeArg{wsPath, o})
}

func (l landingClient) UpdateFromBase(_ context.Context, wsPath string, mode workspace.UpdateMode) (workspace.UpdateResult, error) {
	return get[workspace.UpdateResult](l.c, "Landing.UpdateFromBase", updateArg{wsPath, mode})
}

func (l landingClient) CreatePullRequest(_ context.Context, wsPath string, o workspace.PullRequestOptions) (workspace.PullRequest, error) {
	return get[workspace.PullRequest](l.c, "Landing.CreatePullRequest", pullRequestArg{wsPath, o})
}
