package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/app/window"
	"codehydra/mcp"
)

// Questions brings the tray the questions of the gateway's MCP servers
// that the calling client cannot ask its user (mcp.Options.Elicitor's
// other end).
type Questions interface {
	// Listen has ask answer each question, until stop is called; with
	// no listener the questions are declined.
	Listen(ask func(ctx context.Context, q mcp.Question) (*sdk.ElicitResult, error)) (stop func())
}

// elicit asks the user q in a window of its own and returns the answer;
// when ctx ends first (the question's timeout) the window closes itself
// at the same deadline and ctx's error is returned, which is answered
// cancel.
func (t *Tray) elicit(ctx context.Context, q mcp.Question) (*sdk.ElicitResult, error) {
	schema, err := json.Marshal(q.Params.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("read the question's schema: %w", err)
	}
	deadline, _ := ctx.Deadline()
	answers := make(chan window.Answer, 1)
	t.mu.Lock()
	t.questions++
	seq := t.questions
	t.mu.Unlock()
	spec := window.Spec{Kind: window.KindElicit, Seq: seq,
		Question: &window.Question{Server: q.Server, Workspace: q.Workspace, Message: q.Params.Message, Schema: schema, Deadline: deadline},
		Elicited: func(a window.Answer) {
			select {
			case answers <- a:
			default:
			}
		}}
	t.do(func() { t.win.Open(spec) })
	select {
	case a := <-answers:
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			// The window's own close at the deadline can come a moment
			// before ctx's timer has ended ctx, which has that deadline.
			<-ctx.Done()
		}
		if err := ctx.Err(); err != nil {
			// Past the deadline: the window closed itself at it (or the
			// answer came too late), and the deadline is the answer.
			return nil, err
		}
		return &sdk.ElicitResult{Action: a.Action, Content: a.Content}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.ctx.Done():
		return &sdk.ElicitResult{Action: "cancel"}, nil
	}
}
