package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/app"
	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
)

// elicitTool is server-everything's tool that asks the user, behind the
// gateway as the server "every".
const elicitTool = "every__trigger-elicitation-request"

// elicitWindow is the title of the tray's window for every's questions.
const elicitWindow = "CodeHydra: every asks"

// TestGUIAServersQuestionIsAnsweredInTheTraysWindowWhenItsClientCannotAsk
// runs the real binary under the real xfce4-panel with the real
// server-everything behind the gateway, and calls its
// trigger-elicitation-request with a client that declares no elicitation:
// the server's question opens the tray's window, built from its schema.
// The test fills it from the keyboard (text, number, check box, enum and
// multiple choice) and accepts, and the tool's result carries the values;
// then Decline; then a question left alone closes at its deadline and is
// answered cancel. Screenshots of each step are for a person to look at.
func TestGUIAServersQuestionIsAnsweredInTheTraysWindowWhenItsClientCannotAsk(t *testing.T) {
	bin, repo := guiSetup(t)
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	d := startGUIDesktop(t)
	conn := startGUIPanel(t, d)
	shots := guiShotDir(t)
	// A question's deadline comes from the call's timeout: a long one
	// while the test fills the form, even on a loaded machine.
	const timeout = 120 * time.Second
	a, tray, cs := startAskingApp(t, bin, repo, every, d, conn, timeout)

	// Accept, with the form filled from the keyboard.
	answer := callAsync(t, cs, elicitTool)
	win := d.waitWindow(t, elicitWindow, a.exited)
	open := guiShot(t, d, filepath.Join(shots, "elicit-open.png"), win, a.exited)
	d.xdotool(t, "windowfocus", "--sync", win.id)
	// Tab goes from input to input in the form's order: name (required)
	// first, then the others by their keys (the order the server wrote
	// them in is lost in the SDK's map on the way); each check box of a
	// multiple choice is a stop of its own.
	d.xdotool(t, "key", "Tab")
	d.xdotool(t, "type", "--delay", "10", "Ada Lovelace")
	d.xdotool(t, "key", "Tab") // birthdate
	d.xdotool(t, "type", "--delay", "10", "1815-12-10")
	d.xdotool(t, "key", "Tab", "space", "Tab") // check: ticked; email
	d.xdotool(t, "type", "--delay", "10", "ada@example.com")
	d.xdotool(t, "key", "Tab", "Tab", "Tab", "ctrl+a") // firstLine and homepage as they are; integer
	d.xdotool(t, "type", "--delay", "10", "7")
	d.xdotool(t, "key", "Tab", "Right", "Tab", "ctrl+a") // legacyTitledEnum: the next choice; number
	d.xdotool(t, "type", "--delay", "10", "2.5")
	d.xdotool(t, "key", "Tab", "Tab", "space", "Tab", "Tab", "Right", // titledMultiple…: Salmon too; titledSingle…: the next
		"Tab", "Tab", "Tab", "Tab", "Tab", "Tab", "Right") // untitledSingle…: the next
	// The focus, on the last list, brought the end of the form into sight.
	end := guiShotChanged(t, d, filepath.Join(shots, "elicit-filled-end.png"), win, a.exited, open)
	d.xdotool(t, "mousemove", "--sync", fmt.Sprint(win.rect.Min.X+win.rect.Dx()/2), fmt.Sprint(win.rect.Min.Y+win.rect.Dy()/2),
		"click", "--repeat", "40", "4")
	guiShotChanged(t, d, filepath.Join(shots, "elicit-filled-scrolled.png"), win, a.exited, end)
	d.click(t, win, win.rect.Dx()-36, win.rect.Dy()-23) // Accept
	got := elicitAnswer(t, answer, timeout, a.exited)
	want := map[string]any{"action": "accept", "content": map[string]any{
		"name": "Ada Lovelace", "birthdate": "1815-12-10", "check": true, "email": "ada@example.com",
		"firstLine": "It was a dark and stormy night.", "integer": 7.0, "legacyTitledEnum": "pet-2", "number": 2.5,
		"titledMultipleSelectEnum": []any{"fish-1", "fish-2"}, "titledSingleSelectEnum": "hero-2",
		"untitledMultipleSelectEnum": []any{"Guitar"}, "untitledSingleSelectEnum": "Rachel",
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the server got the answer\n%v\nwant\n%v", got, want)
	}
	guiWaitUntil(t, 10*time.Second, "Accept to close the window", a.exited, func() (bool, string) {
		return !d.hasWindow(elicitWindow), ""
	})

	// Decline.
	answer = callAsync(t, cs, elicitTool)
	win = d.waitWindow(t, elicitWindow, a.exited)
	open = guiShot(t, d, filepath.Join(shots, "elicit-decline.png"), win, a.exited)
	// Accept first: the required name is missing, and the window says so.
	d.click(t, win, win.rect.Dx()-36, win.rect.Dy()-23)
	guiShotChanged(t, d, filepath.Join(shots, "elicit-required.png"), win, a.exited, open)
	if !d.hasWindow(elicitWindow) {
		t.Fatal("Accept without the required name closed the window")
	}
	d.click(t, win, win.rect.Dx()-106, win.rect.Dy()-23) // Decline
	if got := elicitAnswer(t, answer, timeout, a.exited); !reflect.DeepEqual(got, map[string]any{"action": "decline"}) {
		t.Errorf("Decline gave the server %v", got)
	}

	tray.click(t, app.LabelQuit)
	guiWaitExit(t, a.exited, "Quit")

	// Left alone, with a short timeout: the window closes at the
	// question's deadline, nine tenths of the call's timeout, which leaves
	// the server time to answer the call, and the answer is cancel.
	const short = 12 * time.Second
	a, tray, cs = startAskingApp(t, bin, repo, every, d, conn, short)
	asked := time.Now()
	answer = callAsync(t, cs, elicitTool)
	win = d.waitWindow(t, elicitWindow, a.exited)
	guiShot(t, d, filepath.Join(shots, "elicit-waiting.png"), win, a.exited)
	guiWaitUntil(t, short+10*time.Second, "the window to close at the question's deadline", a.exited, func() (bool, string) {
		return !d.hasWindow(elicitWindow), ""
	})
	if got := elicitAnswer(t, answer, short, a.exited); !reflect.DeepEqual(got, map[string]any{"action": "cancel"}) {
		t.Errorf("a question left alone gave the server %v, want cancel", got)
	}
	// (A cancel after the call's own timeout would have been a timeout
	// error, which elicitAnswer fails on.)
	if waited := time.Since(asked); waited < short*9/10 {
		t.Errorf("the question ended %v after the call, before nine tenths of the call's timeout of %v", waited.Round(time.Millisecond), short)
	}
	tray.click(t, app.LabelQuit)
	guiWaitExit(t, a.exited, "Quit")
}

// startAskingApp runs the app on d with server-everything as the gateway
// server "every" and the call timeout timeout, and returns it, its tray
// and a client with the user's token once every's question tool is
// listed.
func startAskingApp(t *testing.T, bin, repo, every string, d *guiDesktop, conn *dbus.Conn, timeout time.Duration) (*guiApp, *trayMenu, *sdk.ClientSession) {
	t.Helper()
	set, err := json.Marshal(map[string]any{
		"opencodeBin":        "/nonexistent/opencode",
		"toolTimeoutSeconds": timeout / time.Second,
		"mcpServers":         map[string]any{"every": map[string]any{"command": every, "startAtLaunch": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSettings(t, string(set))
	a := startGUIApp(t, bin, d, "--project", repo)
	tray := a.tray(conn)
	guiWaitUntil(t, 60*time.Second, "the tray menu", a.exited, func() (bool, string) {
		menu, err := tray.layout()
		if err != nil {
			return false, err.Error()
		}
		return menu.find(app.LabelQuit) != nil, menu.String()
	})
	cs := userClient(t, a)
	guiWaitUntil(t, 60*time.Second, elicitTool+" listed", a.exited, func() (bool, string) {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return slices.Contains(names, elicitTool), strings.Join(names, " ")
	})
	return a, tray, cs
}

// elicitAnswer waits for the result of trigger-elicitation-request and
// returns the answer the server got, from the raw result it shows.
func elicitAnswer(t *testing.T, answer <-chan callResult, timeout time.Duration, exited chan error) map[string]any {
	t.Helper()
	var r callResult
	guiWaitUntil(t, timeout+10*time.Second, "the tool's result", exited, func() (bool, string) {
		select {
		case r = <-answer:
			return true, ""
		default:
			return false, "the call is under way"
		}
	})
	if r.err != nil || r.isError {
		t.Fatalf("%s failed: %v %s", elicitTool, r.err, r.text)
	}
	_, raw, ok := strings.Cut(r.text, "Raw result: ")
	var got map[string]any
	if !ok || json.Unmarshal([]byte(raw), &got) != nil {
		t.Fatalf("%s's result shows no raw result:\n%s", elicitTool, r.text)
	}
	return got
}

// userClient connects a go-sdk client to the app's MCP server with the
// user's token; it declares no capability, elicitation included.
func userClient(t *testing.T, a *guiApp) *sdk.ClientSession {
	t.Helper()
	var info instance.Info
	guiWaitUntil(t, 30*time.Second, "the instance file", a.exited, func() (bool, string) {
		var err error
		info, err = instance.Read(paths.InstanceFile())
		return err == nil && info.PID == a.pid, fmt.Sprintf("instance file: %+v %v", info, err)
	})
	hc := &http.Client{Transport: bearer{token: info.Token}}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e-no-elicitation", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: info.MCPURL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", info.MCPURL, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// bearer adds the Authorization header of token to each request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// callResult is a tool call's outcome: all its text, or its error.
type callResult struct {
	text    string
	isError bool
	err     error
}

// callAsync calls tool without arguments in the background; its result
// comes on the channel.
func callAsync(t *testing.T, cs *sdk.ClientSession, tool string) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil {
			out <- callResult{err: err}
			return
		}
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		out <- callResult{text: strings.Join(texts, "\n"), isError: res.IsError}
	}()
	return out
}
