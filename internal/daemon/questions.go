package daemon

import (
	"context"
	"log/slog"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/mcp"
)

// questions is the MCP server's Elicitor: it passes the questions of the
// gateway's servers that the calling client cannot ask to the tray while
// one listens (app.Questions), and declines them, with a log line, while
// none does (headless, or before the tray runs).
type questions struct {
	log *slog.Logger

	mu  sync.Mutex
	ask func(ctx context.Context, q mcp.Question) (*sdk.ElicitResult, error)
}

var _ mcp.Elicitor = (*questions)(nil)

// Elicit asks the tray, or declines.
func (q *questions) Elicit(ctx context.Context, qu mcp.Question) (*sdk.ElicitResult, error) {
	q.mu.Lock()
	ask := q.ask
	q.mu.Unlock()
	if ask == nil {
		q.log.Info("a gateway server's question was declined: no tray runs to ask the user", slog.String("server", qu.Server), slog.String("workspace", qu.Workspace))
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	return ask(ctx, qu)
}

// Listen has ask answer the questions until stop.
func (q *questions) Listen(ask func(ctx context.Context, q mcp.Question) (*sdk.ElicitResult, error)) (stop func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ask = ask
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.ask = nil
	}
}
