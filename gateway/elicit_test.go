//go:build unix

package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// Questions (elicitation/create) from the real server-everything reach the
// user through CodeHydra's real MCP server: the calling client when it can
// ask, else the Elicitor (the tray's window, here a fake), else a decline.

const askTool = "every__trigger-elicitation-request"

// fakeElicitor answers every question with answer (or, when answer is
// nil, waits for ctx to end) and records the questions.
type fakeElicitor struct {
	answer *sdk.ElicitResult
	mu     sync.Mutex
	asked  []mcp.Question
	ended  bool // a question's ctx ended while it waited
}

func (f *fakeElicitor) Elicit(ctx context.Context, q mcp.Question) (*sdk.ElicitResult, error) {
	f.mu.Lock()
	f.asked = append(f.asked, q)
	f.mu.Unlock()
	if f.answer != nil {
		return f.answer, nil
	}
	<-ctx.Done()
	f.mu.Lock()
	f.ended = true
	f.mu.Unlock()
	return nil, ctx.Err()
}

func (f *fakeElicitor) questions() []mcp.Question {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// askingClient serves a gateway of server-everything through CodeHydra's
// real MCP server with o's Elicitor and ElicitTimeout, and returns a real
// go-sdk client session (options copts) once the server's question tool
// is listed.
func askingClient(t *testing.T, o mcp.Options, copts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := New(Options{Servers: map[string]settings.MCPServer{"every": {Command: every}}, PinsFile: filepath.Join(t.TempDir(), "pins.json"),
		StartTimeout: 20 * time.Second, StopTimeout: time.Second})
	t.Cleanup(func() { _ = g.Close() })
	o.Gateway = g
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cs := serveMCP(t, o).connect(t, sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts), "", questionsProtocol)
	testenv.WaitFor(t, askTool+" listed", 30*time.Second, func() bool { return slices.Contains(listed(t, cs), askTool) })
	return cs
}

// ask calls the question tool and returns its result's text.
func ask(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: askTool, Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", askTool, err, res)
	}
	return text(t, res)
}

var adaAnswer = &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true, "integer": 7}}

func TestAClientThatCanAskGetsTheServersQuestionAndItsAnswerReachesTheServer(t *testing.T) {
	tray := &fakeElicitor{answer: &sdk.ElicitResult{Action: "decline"}}
	var got []*sdk.ElicitParams
	var mu sync.Mutex
	cs := askingClient(t, mcp.Options{Elicitor: tray}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
			return adaAnswer, nil
		}})
	out := ask(t, cs)
	if !strings.Contains(out, "Name: Ada Lovelace") || !strings.Contains(out, "Favorite Integer: 7") {
		t.Fatalf("the tool's result does not show the client's answer:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !strings.Contains(got[0].Message, "Please provide inputs") {
		t.Fatalf("the client was asked %+v, want the server's one question", got)
	}
	if q := tray.questions(); len(q) != 0 {
		t.Fatalf("the tray was asked too: %+v", q)
	}
}

func TestAClientThatCannotAskHasTheUserAnswerThroughTheTray(t *testing.T) {
	for _, tc := range []struct {
		answer *sdk.ElicitResult
		want   string
	}{
		{adaAnswer, "Name: Ada Lovelace"},
		{&sdk.ElicitResult{Action: "decline"}, "User declined"},
		{&sdk.ElicitResult{Action: "cancel"}, "User cancelled"},
	} {
		t.Run(tc.answer.Action, func(t *testing.T) {
			tray := &fakeElicitor{answer: tc.answer}
			cs := askingClient(t, mcp.Options{Elicitor: tray}, nil)
			if out := ask(t, cs); !strings.Contains(out, tc.want) {
				t.Fatalf("the tool's result does not show %q:\n%s", tc.want, out)
			}
			q := tray.questions()
			if len(q) != 1 || q[0].Server != "every" || q[0].Workspace != "" || q[0].Params == nil || q[0].Params.RequestedSchema == nil {
				t.Fatalf("the tray was asked %+v, want one question of server every, with its schema, for the user's token", q)
			}
		})
	}
}

func TestAQuestionNotAnsweredInTimeIsAnsweredCancel(t *testing.T) {
	tray := &fakeElicitor{}
	cs := askingClient(t, mcp.Options{Elicitor: tray, ElicitTimeout: 500 * time.Millisecond}, nil)
	if out := ask(t, cs); !strings.Contains(out, "User cancelled") {
		t.Fatalf("the tool's result does not show a cancel:\n%s", out)
	}
	tray.mu.Lock()
	defer tray.mu.Unlock()
	if !tray.ended {
		t.Fatal("the tray's question was not ended at the timeout")
	}
}

// The question's timeout defaults to the call's: the question ends early
// enough that the server's answer to the call, after the cancel, still
// reaches the client instead of the call's own timeout.
func TestAQuestionLeftUntilTheCallTimeoutIsAnsweredCancelWithinTheCall(t *testing.T) {
	tray := &fakeElicitor{}
	cs := askingClient(t, mcp.Options{Elicitor: tray, CallTimeout: 3 * time.Second}, nil)
	if out := ask(t, cs); !strings.Contains(out, "User cancelled") {
		t.Fatalf("the tool's result does not show a cancel:\n%s", out)
	}
}

func TestWithoutATrayAQuestionIsDeclined(t *testing.T) {
	cs := askingClient(t, mcp.Options{}, nil)
	if out := ask(t, cs); !strings.Contains(out, "User declined") {
		t.Fatalf("the tool's result does not show a decline:\n%s", out)
	}
}

func TestAServersSamplingRequestIsRefusedAndSamplingIsNotDeclared(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := New(Options{Servers: map[string]settings.MCPServer{
		"s":     {Command: exe, Env: map[string]string{samplerServerEnv: "1"}},
		"every": {Command: every},
	}, PinsFile: filepath.Join(t.TempDir(), "pins.json"), StartTimeout: 20 * time.Second, StopTimeout: time.Second})
	t.Cleanup(func() { _ = g.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var names []string
	testenv.WaitFor(t, "the servers' tools", 30*time.Second, func() bool {
		names = names[:0]
		for _, tl := range g.Tools(ctx) {
			names = append(names, tl.Tool.Name)
		}
		return slices.Contains(names, "s__sample") && slices.Contains(names, askTool)
	})
	if slices.Contains(names, "every__trigger-sampling-request") {
		t.Fatalf("server-everything offers its sampling tool: the gateway declared sampling (%v)", names)
	}
	res, err := g.Call(ctx, "", "s__sample", nil)
	if err == nil || !strings.Contains(err.Error(), "does not pass sampling requests") {
		t.Fatalf("the sampling request was not refused with CodeHydra's reason: %+v %v", res, err)
	}
}

func TestASamplingRequestOnTheOlderProtocolsIsRefusedWithCodeHydrasReason(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "sampler", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "sample"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		//lint:ignore SA1019 sampling is what must be refused
		_, err := req.Session.CreateMessage(ctx, samplingParams())
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(err)}}}, nil, nil
	})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	client := sdk.NewClient(&sdk.Implementation{Name: "codehydra", Version: "1"}, nil)
	client.AddReceivingMiddleware(refuseSampling("s", slog.New(slog.DiscardHandler)))
	cs, err := client.Connect(t.Context(), ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "sample"})
	if err != nil || !strings.Contains(text(t, res), "does not pass sampling requests") {
		t.Fatalf("the server was not told CodeHydra's reason: %v %s", err, text(t, res))
	}
}

// blockingElicitor holds each question until release is closed, then
// accepts it; asked gets a value as each question arrives.
type blockingElicitor struct {
	asked   chan struct{}
	release chan struct{}
}

func (b *blockingElicitor) Elicit(ctx context.Context, _ mcp.Question) (*sdk.ElicitResult, error) {
	b.asked <- struct{}{}
	select {
	case <-b.release:
		return adaAnswer, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestAQuestionDuringTwoCallsOfOneInstanceIsDeclinedNotAskedForTheWrongCall(t *testing.T) {
	tray := &blockingElicitor{asked: make(chan struct{}, 4), release: make(chan struct{})}
	cs := askingClient(t, mcp.Options{Elicitor: tray}, nil)
	type result struct {
		res *sdk.CallToolResult
		err error
	}
	first := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: askTool, Arguments: map[string]any{}})
		first <- result{res, err}
	}()
	select {
	case <-tray.asked:
	case <-time.After(20 * time.Second):
		t.Fatal("the first call's question never reached the tray")
	}
	// The first call is under way, its question open: a second call's
	// question cannot be told from a second one of the first call's.
	if out := ask(t, cs); !strings.Contains(out, "User declined") {
		t.Fatalf("the second call's question was not declined:\n%s", out)
	}
	close(tray.release)
	if r := <-first; r.err != nil || !strings.Contains(text(t, r.res), "Name: Ada Lovelace") {
		t.Fatalf("the first call's answer did not reach the server: %v %+v", r.err, r.res)
	}
	if n := len(tray.asked); n != 0 {
		t.Fatalf("the tray was asked %d more questions, want none", n)
	}
}
