package app

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/app/internal/uitest"
	"codehydra/app/window"
	"codehydra/mcp"
)

// fakeQuestions is the daemon's end of Questions: it keeps what the tray
// listens with.
type fakeQuestions struct {
	mu  sync.Mutex
	ask func(ctx context.Context, q mcp.Question) (*sdk.ElicitResult, error)
}

func (f *fakeQuestions) Listen(ask func(ctx context.Context, q mcp.Question) (*sdk.ElicitResult, error)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ask = ask
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.ask = nil
	}
}

func (f *fakeQuestions) listener() func(ctx context.Context, q mcp.Question) (*sdk.ElicitResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ask
}

var askName = mcp.Question{Server: "every", Workspace: "/w/feat", Params: &sdk.ElicitParams{Message: "Your name?",
	RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}

func TestAServersQuestionOpensATrayWindowAndItsAnswerGoesBack(t *testing.T) {
	qs := &fakeQuestions{}
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Questions: qs})
	h.startTray()
	ask := qs.listener()
	if ask == nil {
		t.Fatal("the tray does not listen for questions")
	}
	type result struct {
		res *sdk.ElicitResult
		err error
	}
	got := make(chan result, 1)
	go func() {
		res, err := ask(context.Background(), askName)
		got <- result{res, err}
	}()
	const title = "CodeHydra: every asks"
	h.waitFor("the question's window", func() bool { return h.windowOpen(title) })
	texts := h.app.Texts(title)
	for _, want := range []string{`"every"`, "/w/feat", "Your name?"} {
		if !strings.Contains(texts, want) {
			t.Errorf("the window does not show %q:\n%s", want, texts)
		}
	}
	uitest.FindButton(h.app.Window(title).Content(), "Decline").OnTapped()
	var r result
	h.waitFor("the answer", func() bool {
		select {
		case r = <-got:
			return true
		default:
			return false
		}
	})
	if r.err != nil || r.res.Action != "decline" {
		t.Fatalf("answer %+v, %v; want decline", r.res, r.err)
	}
}

func TestAQuestionNotAnsweredByItsDeadlineClosesItsWindow(t *testing.T) {
	qs := &fakeQuestions{}
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Questions: qs})
	h.startTray()
	// Long enough for the window to be seen open under a loaded -race
	// run (with 300 ms it could open and close between two looks, or the
	// deadline pass before it opened), short enough to wait out.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := qs.listener()(ctx, askName)
		errc <- err
	}()
	const title = "CodeHydra: every asks"
	h.waitFor("the question's window", func() bool { return h.windowOpen(title) })
	h.waitFor("the window to close at the deadline", func() bool { return !h.windowOpen(title) })
	if err := <-errc; err == nil {
		t.Fatal("a question past its deadline got an answer, want its context's error (answered cancel)")
	}
}

func TestAWindowProcessesAnswerReachesTheAppsThread(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()}, "codehydra-window")
	h.startTray()
	var got []window.Answer
	spec := window.Spec{Kind: window.KindElicit, Seq: 1, Question: &window.Question{Server: "every"},
		Elicited: func(a window.Answer) { got = append(got, a) }}
	c := serve(t, h.tray.ctx, h.tray.procs.served(spec, &windowSignals{raise: make(chan struct{}), close: make(chan struct{})}, func() {}))
	hello, err := c.Hello()
	if err != nil || hello.Window.Question == nil || hello.Window.Question.Server != "every" {
		t.Fatalf("hello %+v, %v; want the question", hello, err)
	}
	c.Elicited(window.Answer{Action: "accept", Content: map[string]any{"name": "Ada"}})
	h.waitFor("the answer on the app's thread", func() bool {
		return len(got) == 1 && got[0].Action == "accept" && got[0].Content["name"] == "Ada"
	})
}
