package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// agentAPI is the HTTP API of one agent server as the supervisor uses it:
// the readiness probes (health, the MCP connection) and the reads of the
// event watcher's resync. One client for both keeps the timeouts and the
// size limits of every request to an agent in one place, and its
// credentials: every request carries the server's basic auth.
type agentAPI struct {
	base     string // http://127.0.0.1:<port>
	client   *http.Client
	password string // the server's; a secret, never logged
}

func newAgentAPI(client *http.Client, port int, password string) agentAPI {
	return agentAPI{base: "http://127.0.0.1:" + strconv.Itoa(port), client: client, password: password}
}

// request is a request to the agent's server with its credentials.
func (c agentAPI) request(ctx context.Context, method, path string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(serverUser, c.password)
	return req, nil
}

// maxAnswer bounds an answer of the agent's API; the lists a resync reads
// can be long, but not unboundedly so.
const maxAnswer = 16 << 20

// getJSON decodes the answer to GET path into v, within timeout.
func (c agentAPI) getJSON(ctx context.Context, path string, timeout time.Duration, v any) error {
	return c.do(ctx, http.MethodGet, path, timeout, func(body io.Reader) error {
		return json.NewDecoder(body).Decode(v)
	})
}

// post sends POST path without a body.
func (c agentAPI) post(ctx context.Context, path string, timeout time.Duration) error {
	return c.do(ctx, http.MethodPost, path, timeout, func(body io.Reader) error {
		// Drained so that the connection can be reused.
		_, err := io.Copy(io.Discard, body)
		return err
	})
}

// do sends a request without a body, within timeout, and hands the
// answer's body to read; an answer other than 2xx is an error.
func (c agentAPI) do(ctx context.Context, method, path string, timeout time.Duration, read func(io.Reader) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := c.request(ctx, method, path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if err := read(io.LimitReader(resp.Body, maxAnswer)); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// probeTimeout bounds one readiness probe; a probe that takes longer is
// retried at the next poll.
const probeTimeout = 5 * time.Second

// healthy reports whether GET /global/health says healthy.
func (c agentAPI) healthy(ctx context.Context) bool {
	var h struct {
		Healthy bool `json:"healthy"`
	}
	return c.getJSON(ctx, "/global/health", probeTimeout, &h) == nil && h.Healthy
}

// mcpStatus returns the status of the codehydra MCP server as the agent
// reports it ("connected", "failed", …; "missing" if it has none; "" if
// the agent did not answer) and the error it gave.
func (c agentAPI) mcpStatus(ctx context.Context) (status, errText string) {
	var m map[string]struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if c.getJSON(ctx, "/mcp", probeTimeout, &m) != nil {
		return "", ""
	}
	st, ok := m["codehydra"]
	if !ok {
		return "missing", "opencode has no codehydra MCP server configured (is OPENCODE_CONFIG right?)"
	}
	return st.Status, st.Error
}

// connectMCP asks the agent to connect to the codehydra MCP server again;
// opencode answers once it tried.
func (c agentAPI) connectMCP(ctx context.Context) error {
	if err := c.post(ctx, "/mcp/codehydra/connect", 10*time.Second); err != nil {
		return fmt.Errorf("ask the agent to connect to the MCP server: %w", err)
	}
	return nil
}
