//go:build unix

package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// The eras of MCP meet in the gateway: a client of either era calls,
// through CodeHydra's real server, the tool of a small go-sdk server of
// either era (over real HTTP) that asks its client for a name. A server of
// 2026-07-28 asks in its result (input_required), one before in a request
// of its own; a client of 2026-07-28 is asked in the call's result, one
// before in a request.

const (
	eraOld = "2025-11-25"
	eraNew = "2026-07-28"
)

// askServer is a go-sdk server of one era whose tool "ask" asks its client
// for a name and answers with what it got.
type askServer struct {
	url string

	mu      sync.Mutex
	answers []string // "accept Ada", "decline", "cancel"
	eras    []string // the era each call was made in
	// work is how long the server works on an answer before it answers
	// the call (or its call's context ends).
	work time.Duration
}

// upstreamState is the new-era server's own requestState.
const upstreamState = "the server's own state"

func nameQuestion() *sdk.ElicitParams {
	return &sdk.ElicitParams{Message: "What is your name?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}}
}

// newAskServer serves an askServer of era: on 2026-07-28 a stateless
// handler (the only one go-sdk serves that era on), before a session
// handler, whose clients must fall back from server/discover. Its prompt
// "greet" and resource "ask://name" ask the same question.
func newAskServer(t *testing.T, era string) *askServer {
	t.Helper()
	a := &askServer{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		got, err := a.ask(ctx, req.Session, req.Params.RequestState, req.Params.InputResponses)
		if err != nil || got == "" {
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"name": nameQuestion()}, RequestState: upstreamState}, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "got: " + got}}}, nil
	})
	srv.AddPrompt(&sdk.Prompt{Name: "greet"}, func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		got, err := a.ask(ctx, req.Session, req.Params.RequestState, req.Params.InputResponses)
		if err != nil || got == "" {
			return &sdk.GetPromptResult{InputRequests: sdk.InputRequestMap{"name": nameQuestion()}, RequestState: upstreamState}, err
		}
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "got: " + got}}}}, nil
	})
	srv.AddResource(&sdk.Resource{URI: "ask://name", Name: "name"}, func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		got, err := a.ask(ctx, req.Session, req.Params.RequestState, req.Params.InputResponses)
		if err != nil || got == "" {
			return &sdk.ReadResourceResult{InputRequests: sdk.InputRequestMap{"name": nameQuestion()}, RequestState: upstreamState}, err
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "ask://name", Text: "got: " + got}}}, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: era == eraNew}))
	t.Cleanup(hs.Close)
	a.url = hs.URL
	return a
}

// ask asks the client of ss for a name, in the era ss speaks: on
// 2026-07-28 it returns "" (ask in the result) until a retry brings the
// answer in responses with the server's own state. It records the answer.
func (a *askServer) ask(ctx context.Context, ss *sdk.ServerSession, state string, responses sdk.InputResponseMap) (string, error) {
	era := eraOld
	if p := ss.InitializeParams(); p == nil || p.ProtocolVersion >= eraNew {
		era = eraNew
	}
	var res *sdk.ElicitResult
	if era == eraNew {
		if state == "" {
			return "", nil
		}
		if state != upstreamState {
			return "", fmt.Errorf("requestState %q is not the server's", state)
		}
		res, _ = responses["name"].(*sdk.ElicitResult)
	} else {
		var err error
		if res, err = ss.Elicit(ctx, nameQuestion()); err != nil {
			return "", err
		}
	}
	if res == nil {
		return "", fmt.Errorf("no answer")
	}
	got := res.Action
	if res.Action == "accept" {
		got += fmt.Sprintf(" %v", res.Content["name"])
	}
	a.mu.Lock()
	a.answers = append(a.answers, got)
	a.eras = append(a.eras, era)
	work := a.work
	a.mu.Unlock()
	select {
	case <-time.After(work):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return got, nil
}

func (a *askServer) got() (answers, eras []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.answers), slices.Clone(a.eras)
}

// eraClient serves a gateway of up through CodeHydra's real MCP server
// with o, and returns a real go-sdk client session (options copts, on
// protocol) once up's tool is listed.
func eraClient(t *testing.T, up *askServer, o mcp.Options, copts *sdk.ClientOptions, protocol string) *sdk.ClientSession {
	t.Helper()
	g := New(Options{Servers: map[string]settings.MCPServer{"up": {URL: up.url}}, PinsFile: filepath.Join(t.TempDir(), "pins.json"),
		StartTimeout: 20 * time.Second, StopTimeout: time.Second})
	t.Cleanup(func() { _ = g.Close() })
	o.Gateway = g
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cs := serveMCP(t, o).connect(t, sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts), "", protocol)
	if got := cs.InitializeResult().ProtocolVersion; got != protocol {
		t.Fatalf("the client speaks %s to CodeHydra, want %s", got, protocol)
	}
	testenv.WaitFor(t, "up__ask listed", 30*time.Second, func() bool { return slices.Contains(listed(t, cs), "up__ask") })
	return cs
}

// answering is a client whose user answers every question with answer,
// and records the questions.
func answering(answer *sdk.ElicitResult, asked *[]string, mu *sync.Mutex) *sdk.ClientOptions {
	return &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		mu.Lock()
		*asked = append(*asked, req.Params.Message)
		mu.Unlock()
		return answer, nil
	}}
}

func callAsk(t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "up__ask", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("up__ask: %v %+v", err, res)
	}
	return text(t, res)
}

var adaName = &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}

func TestAServersQuestionReachesTheClientInItsOwnEraAndItsAnswerTheServer(t *testing.T) {
	for _, client := range []string{eraOld, eraNew} {
		for _, server := range []string{eraOld, eraNew} {
			for _, answer := range []*sdk.ElicitResult{adaName, {Action: "decline"}} {
				want := "accept Ada"
				if answer.Action != "accept" {
					want = answer.Action
				}
				t.Run("client "+client+", server "+server+", "+answer.Action, func(t *testing.T) {
					up := newAskServer(t, server)
					tray := &fakeElicitor{answer: &sdk.ElicitResult{Action: "cancel"}}
					var asked []string
					var mu sync.Mutex
					cs := eraClient(t, up, mcp.Options{Elicitor: tray}, answering(answer, &asked, &mu), client)
					if out := callAsk(t, cs); out != "got: "+want {
						t.Fatalf("the call's result is %q, want the server's %q", out, "got: "+want)
					}
					answers, eras := up.got()
					if !slices.Equal(answers, []string{want}) || !slices.Equal(eras, []string{server}) {
						t.Fatalf("the server got %v in eras %v, want %q once, in %s", answers, eras, want, server)
					}
					mu.Lock()
					defer mu.Unlock()
					if len(asked) != 1 || asked[0] != "What is your name?" {
						t.Fatalf("the client was asked %q, want the server's question once", asked)
					}
					if q := tray.questions(); len(q) != 0 {
						t.Fatalf("the tray was asked too: %+v", q)
					}
				})
			}
		}
	}
}

// A client that cannot be asked has the user answer in the tray, whatever
// the server's era.
func TestAServersQuestionOfEitherEraGoesToTheTrayForAClientThatCannotAsk(t *testing.T) {
	for _, server := range []string{eraOld, eraNew} {
		t.Run(server, func(t *testing.T) {
			up := newAskServer(t, server)
			tray := &fakeElicitor{answer: adaName}
			cs := eraClient(t, up, mcp.Options{Elicitor: tray}, nil, eraOld)
			if out := callAsk(t, cs); out != "got: accept Ada" {
				t.Fatalf("the call's result is %q, want the tray's answer", out)
			}
			if q := tray.questions(); len(q) != 1 || q[0].Server != "up" {
				t.Fatalf("the tray was asked %+v, want the server's one question", q)
			}
		})
	}
}

// A question nobody answers is answered cancel after ElicitTimeout, and
// the server's answer to the call reaches the client.
func TestAServersQuestionOfEitherEraNotAnsweredInTimeIsAnsweredCancel(t *testing.T) {
	for _, server := range []string{eraOld, eraNew} {
		t.Run(server, func(t *testing.T) {
			up := newAskServer(t, server)
			cs := eraClient(t, up, mcp.Options{Elicitor: &fakeElicitor{}, ElicitTimeout: 300 * time.Millisecond}, nil, eraOld)
			if out := callAsk(t, cs); out != "got: cancel" {
				t.Fatalf("the call's result is %q, want the server's answer to a cancel", out)
			}
		})
	}
}

// A prompt or a resource that asks is answered the same way.
func TestAServersQuestionDuringAPromptOrAReadReachesTheClient(t *testing.T) {
	for _, tc := range [][2]string{{eraOld, eraOld}, {eraOld, eraNew}, {eraNew, eraOld}, {eraNew, eraNew}} {
		client, server := tc[0], tc[1]
		t.Run("client "+client+", server "+server, func(t *testing.T) {
			up := newAskServer(t, server)
			var asked []string
			var mu sync.Mutex
			cs := eraClient(t, up, mcp.Options{}, answering(adaName, &asked, &mu), client)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			testenv.WaitFor(t, "the server's prompt listed", 20*time.Second, func() bool {
				res, err := cs.ListPrompts(ctx, nil)
				return err == nil && len(res.Prompts) == 1
			})
			p, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "up__greet"})
			if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.(*sdk.TextContent).Text != "got: accept Ada" {
				t.Fatalf("prompts/get = %+v, %v; want the server's answer to Ada", p, err)
			}
			r, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: mcp.GatewayResourceURI("up", "ask://name")})
			if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "got: accept Ada" {
				t.Fatalf("resources/read = %+v, %v; want the server's answer to Ada", r, err)
			}
			if answers, eras := up.got(); !slices.Equal(answers, []string{"accept Ada", "accept Ada"}) || !slices.Equal(eras, []string{server, server}) {
				t.Fatalf("the server got %v in eras %v", answers, eras)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 2 {
				t.Fatalf("the client was asked %q, want the server's question twice", asked)
			}
		})
	}
}

// rawNewClient is a client on 2026-07-28 that declared elicitation but
// answers input_required results itself (the SDK's loop is off).
func rawNewClient(t *testing.T, up *askServer, o mcp.Options) *sdk.ClientSession {
	t.Helper()
	return eraClient(t, up, o, &sdk.ClientOptions{MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, fmt.Errorf("asked in a request, not in a result")
		}}, eraNew)
}

// firstQuestion calls up__ask with arguments and returns its question's
// id and the requestState, failing unless the result is input_required.
func firstQuestion(t *testing.T, cs *sdk.ClientSession, arguments map[string]any) (string, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "up__ask", Arguments: arguments})
	if err != nil || !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("up__ask = %+v, %v; want one question, input_required", res, err)
	}
	for id, q := range res.InputRequests {
		if p, ok := q.(*sdk.ElicitParams); !ok || p.Message != "What is your name?" {
			t.Fatalf("the question is %+v, want the server's", q)
		}
		if strings.Contains(res.RequestState, upstreamState) {
			t.Fatalf("the requestState %q shows the server's own", res.RequestState)
		}
		return id, res.RequestState
	}
	return "", ""
}

// retry calls up__ask again with answer to question id and state, and
// returns its result's text, or its error message.
func retry(t *testing.T, cs *sdk.ClientSession, arguments map[string]any, id, state string, answer *sdk.ElicitResult) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "up__ask", Arguments: arguments,
		InputResponses: sdk.InputResponseMap{id: answer}, RequestState: state})
	if err != nil {
		t.Fatalf("up__ask again: %v", err)
	}
	if res.NeedsInput() {
		t.Fatalf("up__ask again asked again: %+v", res)
	}
	return text(t, res)
}

// A requestState holds for its own call, once: a made-up or altered one,
// one sent with other arguments, and one answered already are refused,
// and the server gets the one rightful answer.
func TestARequestStateIsRefusedForgedForAnotherCallOrReplayed(t *testing.T) {
	for _, server := range []string{eraOld, eraNew} {
		t.Run(server, func(t *testing.T) {
			up := newAskServer(t, server)
			cs := rawNewClient(t, up, mcp.Options{})
			args := map[string]any{"k": "v"}
			id, state := firstQuestion(t, cs, args)
			for _, tc := range []struct {
				name, state string
				args        map[string]any
			}{
				{"made up", "aGVsZDEuMS45OTk5OTk5OTk5.AAAA", args},
				{"altered", "A" + state[1:], args},
				{"for other arguments", state, map[string]any{"k": "w"}},
			} {
				if out := retry(t, cs, tc.args, id, tc.state, adaName); !strings.Contains(out, "invalid-input") || !strings.Contains(out, "requestState") {
					t.Errorf("%s: the retry answered %q, want invalid-input naming the requestState", tc.name, out)
				}
			}
			if out := retry(t, cs, args, id, state, adaName); out != "got: accept Ada" {
				t.Fatalf("the rightful answer got %q, want the server's answer to Ada", out)
			}
			if out := retry(t, cs, args, id, state, &sdk.ElicitResult{Action: "decline"}); !strings.Contains(out, "answered already") {
				t.Fatalf("the replayed state got %q, want it refused", out)
			}
			if answers, _ := up.got(); !slices.Equal(answers, []string{"accept Ada"}) {
				t.Fatalf("the server got %v, want the one rightful answer", answers)
			}
		})
	}
}

// A held call whose client does not come back ends: its question is
// answered cancel at ElicitTimeout, and a late answer is refused.
func TestAHeldCallWhoseClientNeverAnswersEndsAtTheQuestionsTimeout(t *testing.T) {
	for _, server := range []string{eraOld, eraNew} {
		t.Run(server, func(t *testing.T) {
			up := newAskServer(t, server)
			cs := rawNewClient(t, up, mcp.Options{ElicitTimeout: 300 * time.Millisecond})
			id, state := firstQuestion(t, cs, map[string]any{})
			testenv.WaitFor(t, "the server answered cancel", 10*time.Second, func() bool {
				answers, _ := up.got()
				return slices.Equal(answers, []string{"cancel"})
			})
			if out := retry(t, cs, map[string]any{}, id, state, adaName); !strings.Contains(out, "invalid-input") {
				t.Fatalf("the late answer got %q, want it refused", out)
			}
		})
	}
}

// A held call keeps its first request's deadline (CallTimeout): when the
// server, once answered, works past it, the retry that brought the answer
// is told the call timed out, not that the server failed.
func TestAHeldCallsDeadlinePassedAfterItsAnswerIsATimeout(t *testing.T) {
	for _, server := range []string{eraOld, eraNew} {
		t.Run(server, func(t *testing.T) {
			up := newAskServer(t, server)
			up.mu.Lock()
			up.work = 8 * time.Second
			up.mu.Unlock()
			cs := rawNewClient(t, up, mcp.Options{CallTimeout: 3 * time.Second})
			id, state := firstQuestion(t, cs, map[string]any{})
			out := retry(t, cs, map[string]any{}, id, state, adaName)
			if !strings.Contains(out, "did not answer within 3s") {
				t.Fatalf("the retry got %q, want the call's timeout", out)
			}
			if answers, _ := up.got(); !slices.Equal(answers, []string{"accept Ada"}) {
				t.Fatalf("the server got %v, want the answer once", answers)
			}
		})
	}
}

// Past maxHeldPerCaller held calls of one token, a question goes to the
// tray; a client on 2026-07-28 that did not declare elicitation has the
// tray asked at once.
func TestPastTheHeldBoundAndForAClientThatCannotAskTheTrayIsAsked(t *testing.T) {
	up := newAskServer(t, eraNew)
	tray := &fakeElicitor{answer: adaName}
	cs := rawNewClient(t, up, mcp.Options{Elicitor: tray})
	for range 8 {
		firstQuestion(t, cs, map[string]any{})
	}
	if out := callAsk(t, cs); out != "got: accept Ada" || len(tray.questions()) != 1 {
		t.Fatalf("the ninth call got %q with %d tray questions, want the tray's answer", out, len(tray.questions()))
	}

	plain := eraClient(t, up, mcp.Options{Elicitor: tray}, nil, eraNew)
	if out := callAsk(t, plain); out != "got: accept Ada" || len(tray.questions()) != 2 {
		t.Fatalf("a client that cannot ask got %q with %d tray questions, want the tray's answer", out, len(tray.questions()))
	}
}

// A prompt's or a resource's question reaches a client on 2026-07-28 as
// an input_required result, as the protocol marks it.
func TestAPromptsOrAReadsQuestionIsAnInputRequiredResult(t *testing.T) {
	up := newAskServer(t, eraNew)
	cs := rawNewClient(t, up, mcp.Options{})
	testenv.WaitFor(t, "the server's prompt listed", 20*time.Second, func() bool {
		res, err := cs.ListPrompts(t.Context(), nil)
		return err == nil && len(res.Prompts) == 1
	})
	p, err := cs.GetPrompt(t.Context(), &sdk.GetPromptParams{Name: "up__greet"})
	if err != nil || !p.NeedsInput() || len(p.InputRequests) != 1 || p.RequestState == "" {
		t.Fatalf("prompts/get = %+v, %v; want input_required with one question", p, err)
	}
	r, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: mcp.GatewayResourceURI("up", "ask://name")})
	if err != nil || !r.NeedsInput() || len(r.InputRequests) != 1 || r.RequestState == "" {
		t.Fatalf("resources/read = %+v, %v; want input_required with one question", r, err)
	}
	// A prompt's state does not answer the read's question.
	_, err = cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: mcp.GatewayResourceURI("up", "ask://name"),
		InputResponses: sdk.InputResponseMap{"q1": adaName}, RequestState: p.RequestState})
	if err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Fatalf("a read answered with the prompt's state: %v", err)
	}
	r, err = cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: mcp.GatewayResourceURI("up", "ask://name"),
		InputResponses: sdk.InputResponseMap{"q1": adaName}, RequestState: r.RequestState})
	if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "got: accept Ada" {
		t.Fatalf("the read's answer got %+v, %v; want the server's answer to Ada", r, err)
	}
}
