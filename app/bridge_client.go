package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/rpc"
	"sync"

	"codehydra/internal/settings"
	"codehydra/prepare"
	"codehydra/workspace"
)

// bridgeClient is the app's Deps as a window process sees them: each
// method a call over the bridge to the tray process. It implements
// Workspaces, Agents, SettingsStore, MCPServer, MCPGateway and
// Preparation. A call that cannot reach the tray process (it quit) fails
// with that error; methods without an error to return report nothing.
type bridgeClient struct {
	rpc *rpc.Client
	log *slog.Logger
}

func newBridgeClient(conn io.ReadWriteCloser, log *slog.Logger) *bridgeClient {
	return &bridgeClient{rpc: rpc.NewClient(conn), log: log}
}

// call runs method with args and decodes its result into out (if not nil).
func (c *bridgeClient) call(method string, args, out any) error {
	data, err := json.Marshal(args)
	if err != nil {
		return err
	}
	var resp BridgeResponse
	if err := c.rpc.Call("Bridge.Do", BridgeRequest{Method: method, Args: data}, &resp); err != nil {
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
func get[T any](c *bridgeClient, method string, args any) (T, error) {
	var v T
	err := c.call(method, args, &v)
	return v, err
}

// quiet is for the methods whose interface has no error to return: the
// failure is logged and the zero value stands.
func (c *bridgeClient) quiet(method string, err error) {
	if err != nil {
		c.log.Warn("bridge call failed", slog.String("method", method), slog.Any("err", err))
	}
}

// noArgs are the arguments of a method that takes none.
var noArgs = struct{}{}

func (c *bridgeClient) hello() (bridgeHello, error) { return get[bridgeHello](c, "Hello", noArgs) }

// Workspaces

func (c *bridgeClient) Projects() []workspace.Project {
	v, err := get[[]workspace.Project](c, "Projects", noArgs)
	c.quiet("Projects", err)
	return v
}

func (c *bridgeClient) Workspaces(projectPath string) ([]workspace.Workspace, error) {
	return get[[]workspace.Workspace](c, "Workspaces", pathArg{projectPath})
}

func (c *bridgeClient) AddProject(_ context.Context, path string) (workspace.Project, error) {
	return get[workspace.Project](c, "AddProject", pathArg{path})
}

func (c *bridgeClient) RemoveProject(_ context.Context, path string) error {
	return c.call("RemoveProject", pathArg{path}, nil)
}

func (c *bridgeClient) Create(_ context.Context, o workspace.CreateOptions) (workspace.Workspace, error) {
	return get[workspace.Workspace](c, "Create", createArg{o})
}

func (c *bridgeClient) Delete(_ context.Context, wsPath string, o workspace.DeleteOptions) error {
	return c.call("Delete", deleteArg{wsPath, o}, nil)
}

func (c *bridgeClient) Status(_ context.Context, wsPath string) (workspace.Status, error) {
	return get[workspace.Status](c, "Status", pathArg{wsPath})
}

func (c *bridgeClient) Changes(_ context.Context, wsPath string) (workspace.Changes, error) {
	return get[workspace.Changes](c, "Changes", pathArg{wsPath})
}

func (c *bridgeClient) BranchCreated(_ context.Context, wsPath string) (bool, error) {
	return get[bool](c, "BranchCreated", pathArg{wsPath})
}

func (c *bridgeClient) Metadata(_ context.Context, wsPath string) (map[string]string, error) {
	return get[map[string]string](c, "Metadata", pathArg{wsPath})
}

func (c *bridgeClient) SetMetadata(_ context.Context, wsPath, key string, value *string) error {
	return c.call("SetMetadata", metadataArg{wsPath, key, value}, nil)
}

func (c *bridgeClient) Branches(_ context.Context, projectPath string) ([]string, error) {
	return get[[]string](c, "Branches", pathArg{projectPath})
}

func (c *bridgeClient) ReusableBranches(_ context.Context, projectPath string) ([]string, error) {
	return get[[]string](c, "ReusableBranches", pathArg{projectPath})
}

func (c *bridgeClient) DefaultBase(_ context.Context, projectPath string) (string, error) {
	return get[string](c, "DefaultBase", pathArg{projectPath})
}

// Subscribe follows the tray process's events; the channel closes when
// cancel is called or the tray process has gone.
func (c *bridgeClient) Subscribe() (<-chan workspace.Event, func()) {
	out := make(chan workspace.Event, 64)
	sub, err := get[subscription](c, "Subscribe", noArgs)
	if err != nil {
		c.quiet("Subscribe", err)
		close(out)
		return out, func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(out)
		for {
			batch, err := get[[]workspace.Event](c, "Events", sub)
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
			c.quiet("Unsubscribe", c.call("Unsubscribe", sub, nil))
		})
	}
}

// Agents

func (c *bridgeClient) AgentStatus(path string) workspace.AgentStatus {
	v, err := get[workspace.AgentStatus](c, "AgentStatus", pathArg{path})
	c.quiet("AgentStatus", err)
	return v
}

func (c *bridgeClient) OpencodeServer(path string) (int, string, bool) {
	v, err := get[serverResult](c, "OpencodeServer", pathArg{path})
	c.quiet("OpencodeServer", err)
	return v.Port, v.Password, v.OK
}

func (c *bridgeClient) Restart(path string) error { return c.call("Restart", pathArg{path}, nil) }

func (c *bridgeClient) RestartAll() { c.quiet("RestartAll", c.call("RestartAll", noArgs, nil)) }

func (c *bridgeClient) FindBinary() (string, bool) {
	v, err := get[binaryResult](c, "FindBinary", noArgs)
	c.quiet("FindBinary", err)
	return v.Path, v.OK
}

func (c *bridgeClient) QueuePrompt(path string, p workspace.FirstPrompt) (workspace.PromptDelivery, error) {
	return get[workspace.PromptDelivery](c, "QueuePrompt", promptArg{path, p})
}

func (c *bridgeClient) PromptDelivery(path string) (workspace.PromptDelivery, bool) {
	v, err := get[deliveryResult](c, "PromptDelivery", pathArg{path})
	c.quiet("PromptDelivery", err)
	return v.Delivery, v.OK
}

// SettingsStore

func (c *bridgeClient) Get() settings.Settings {
	s, _, err := c.settings()
	c.quiet("Settings", err)
	return s
}

// settings reads the settings, and their JSON for ReplaceSettings.
func (c *bridgeClient) settings() (settings.Settings, []byte, error) {
	raw, err := get[json.RawMessage](c, "Settings", noArgs)
	if err != nil {
		return settings.Settings{}, nil, err
	}
	var s settings.Settings
	err = json.Unmarshal(raw, &s)
	return s, raw, err
}

// Update applies fn to the settings and saves them, as the store's Update
// does; the tray process refuses the save when the settings changed after
// they were read, and fn then runs again on the new ones.
func (c *bridgeClient) Update(fn func(*settings.Settings)) error {
	for range 5 {
		s, old, err := c.settings()
		if err != nil {
			return err
		}
		fn(&s)
		next, err := json.Marshal(s)
		if err != nil {
			return err
		}
		err = c.call("ReplaceSettings", replaceArg{old, next}, nil)
		if !errors.Is(err, errSettingsChanged) {
			return err
		}
	}
	return errors.New("the settings kept changing while they were saved; try again")
}

// MCPServer

func (c *bridgeClient) mcp() mcpResult {
	v, err := get[mcpResult](c, "MCP", noArgs)
	c.quiet("MCP", err)
	return v
}

func (c *bridgeClient) Port() int          { return c.mcp().Port }
func (c *bridgeClient) URL() string        { return c.mcp().URL }
func (c *bridgeClient) PortNotice() string { return c.mcp().PortNotice }

// MCPGateway

func (c *bridgeClient) Statuses() []MCPServerStatus {
	v, err := get[[]MCPServerStatus](c, "Statuses", noArgs)
	c.quiet("Statuses", err)
	return v
}

// Preparation

func (c *bridgeClient) State(path string) (prepare.State, bool) {
	v, err := get[prepareResult](c, "PrepareState", pathArg{path})
	c.quiet("PrepareState", err)
	return prepare.State{Phase: v.Phase, Progress: v.Progress, Notes: v.Notes, Err: fromWire(v.Err), Anyway: v.Anyway}, v.OK
}

func (c *bridgeClient) Retry(path string) error { return c.call("RetrySetup", pathArg{path}, nil) }

func (c *bridgeClient) StartAnyway(path string) error {
	return c.call("StartAnyway", pathArg{path}, nil)
}

// deps are the Deps of a window process: what hello says the app has,
// reached over the bridge.
func (c *bridgeClient) deps(h bridgeHello) Deps {
	d := Deps{Workspaces: c, Settings: c, Logger: c.log, DefaultWorktreeRoot: h.DefaultWorktreeRoot}
	if h.Agents {
		d.Agents = c
	}
	if h.MCP {
		d.MCP = c
	}
	if h.Gateway {
		d.Gateway = c
	}
	if h.Prepare {
		d.Prepare = c
	}
	if h.RotateToken {
		d.RotateToken = func() error { return c.call("RotateToken", noArgs, nil) }
	}
	if h.MCPConfig {
		d.MCPConfig = func(client, path string) (string, error) {
			return get[string](c, "MCPConfig", configArg{client, path})
		}
	}
	if h.Restart {
		d.Restart = func() { c.quiet("RestartApp", c.call("RestartApp", noArgs, nil)) }
	}
	return d
}
