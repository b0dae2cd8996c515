package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// TestAgentURLOpensTheRealOpencodeWebUI checks AgentURL against the real
// `opencode serve` with a password, as a browser uses it: the page and the
// script it loads come with the URL's credentials (a browser keeps them
// for the page's requests), and neither without.
func TestAgentURLOpensTheRealOpencodeWebUI(t *testing.T) {
	bin := testenv.RealOpencode(t)
	const password = "0123456789abcdef0123456789abcdef"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--hostname", "127.0.0.1", "--port", "0")
	// Main moved HOME and the XDG folders into a temp dir.
	cmd.Env = append(os.Environ(), "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_SERVER_PASSWORD="+password)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Stopped (cancel) before it is waited for.
	defer func() { cancel(); _ = cmd.Wait() }()
	listening := regexp.MustCompile(`listening on http://127\.0\.0\.1:(\d+)`)
	ports := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				var p int
				fmt.Sscan(m[1], &p)
				ports <- p
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var port int
	select {
	case port = <-ports:
	case <-time.After(60 * time.Second):
		t.Fatal("opencode did not say it listens")
	}

	get := func(u string) (int, string) {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		defer rcancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	page := AgentURL(port, password)
	code, html := get(page)
	if code != http.StatusOK {
		t.Fatalf("GET the agent URL = %d, want 200", code)
	}
	script := regexp.MustCompile(`src="(/assets/[^"]+\.js)"`).FindStringSubmatch(html)
	if script == nil {
		t.Fatalf("the web UI page names no script:\n%s", html)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if code, _ := get(fmt.Sprintf("http://opencode:%s@127.0.0.1:%d%s", password, port, script[1])); code != http.StatusOK {
		t.Errorf("GET %s with the credentials = %d, want 200", script[1], code)
	}
	for _, path := range []string{"/", script[1]} {
		if code, _ := get(base + path); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the credentials = %d, want 401", path, code)
		}
	}
}
