// Package bridge is how a window process reaches the tray app: the tray
// process serves the windows' Deps (window.Deps) over the window
// process's stdin and stdout with net/rpc, and the window process gets
// them back as a window.Deps whose every method is a call to it.
//
// The wire is one net/rpc method (Bridge.Do) that names the call
// ("Workspaces.Create", "Agents.Restart", "Tray.BusyAgents"…) and carries
// its arguments and result as JSON, the form every value here already has
// (the MCP tools answer with the same types). Errors keep what the windows
// look at: a *workspace.Error's code and message, a failed setup's
// *prepare.SetupError, and prepare.ErrNotFailed.
//
// Every method and field of window.Deps crosses, or is named in the test
// that says why it need not (bridge_test.go); a new one fails that test
// until it is bridged.
package bridge

import (
	"errors"
	"io"

	"codehydra/app/window"
	"codehydra/prepare"
	"codehydra/workspace"
)

// Protocol is the version of the bridge's methods and types: a window
// process refuses an app of another one (a binary replaced under a
// running app, by an upgrade, may not speak its bridge).
const Protocol = 5

// Hello is what a window process learns first: the window to open and
// which of the optional Deps the app has.
type Hello struct {
	Protocol                      int
	Window                        window.Spec
	Agents, MCP, Gateway, Prepare bool
	Landing                       bool
	RotateToken, Restart          bool
	DefaultWorktreeRoot           string
}

// Request is one call: Method names it, Args are its arguments.
// It, Response and WireError are exported only because net/rpc wants
// them so.
type Request struct {
	Method string
	Args   []byte
}

// Response is a call's result, or its error.
type Response struct {
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

// errSettingsChanged is what a settings replacement answers when the
// settings changed since the window read them; the window reads and
// applies its change again.
var errSettingsChanged = errors.New("the settings changed meanwhile")

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
	replaceArg struct{ Old, New []byte }
	// diffArg is DiffOptions without Withhold, a func: the app's
	// Landing sets what it withholds.
	diffArg struct {
		Path, File       string
		Offset, MaxBytes int
	}
	reviewArg struct {
		Path   string
		Review workspace.Review
	}
	mergeArg struct {
		Path    string
		Options workspace.MergeOptions
	}
	updateArg struct {
		Path string
		Mode workspace.UpdateMode
	}
	pullRequestArg struct {
		Path    string
		Options workspace.PullRequestOptions
	}
	subscription struct{ ID int }
	// serverArg names one of the gateway's servers; toolChangeArg one of
	// its changed tools and the definition's hash as shown.
	serverArg     struct{ Server string }
	toolChangeArg struct{ Server, Tool, Hash string }
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
)

// noArgs are the arguments of a method that takes none.
var noArgs = struct{}{}

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
