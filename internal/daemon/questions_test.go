package daemon

import (
	"context"
	"log/slog"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/mcp"
)

func TestAQuestionGoesToTheTrayWhileItListensAndIsDeclinedOtherwise(t *testing.T) {
	q := &questions{log: slog.New(slog.DiscardHandler)}
	ask := func(context.Context) string {
		res, err := q.Elicit(context.Background(), mcp.Question{Server: "every", Params: &sdk.ElicitParams{Message: "?"}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Action
	}
	if got := ask(t.Context()); got != "decline" {
		t.Fatalf("with no tray: %s, want decline", got)
	}
	var asked []mcp.Question
	stop := q.Listen(func(_ context.Context, qu mcp.Question) (*sdk.ElicitResult, error) {
		asked = append(asked, qu)
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"a": "b"}}, nil
	})
	if got := ask(t.Context()); got != "accept" || len(asked) != 1 || asked[0].Server != "every" {
		t.Fatalf("with the tray: %s, asked %+v; want the tray's accept", got, asked)
	}
	stop()
	if got := ask(t.Context()); got != "decline" {
		t.Fatalf("after the tray stopped: %s, want decline", got)
	}
}
