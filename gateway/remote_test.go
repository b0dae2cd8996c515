//go:build unix

package gateway

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

// TestARemoteServersHeadersNeverLeaveItsOrigin: the review's remote
// server redirected to another host and got its Authorization header
// added again there. A redirect to another origin is now refused, and
// headers go to the configured origin only.
func TestARemoteServersHeadersNeverLeaveItsOrigin(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Method+" "+r.URL.Path+" Authorization="+r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	t.Cleanup(other.Close)
	configured := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(configured.Close)

	t.Setenv("CODEHYDRA_TEST_TOKEN", "ghp_secret_of_the_user")
	g := newGateway(t, map[string]settings.MCPServer{"remote": {URL: configured.URL + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer {env:CODEHYDRA_TEST_TOKEN}"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if tools := g.Tools(ctx); len(tools) != 0 {
		t.Fatalf("Tools = %v, want none through a redirect", toolNames(tools))
	}
	_, err := g.Call(ctx, "", "remote__echo", args(t, map[string]string{"message": "hi"}))
	if err == nil || !strings.Contains(err.Error(), "redirected to another origin") || strings.Contains(err.Error(), "ghp_") {
		t.Fatalf("Call = %v, want the redirect refused, without the token", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) != 0 {
		t.Fatalf("the other origin was sent %v", elsewhere)
	}
}

// TestALoopbackServerOfAnotherUserGetsNoHeaders: the review's other
// local user listened on the configured loopback port (the user's server
// was down) and received "Authorization: Bearer ghp_…". The dial now
// checks that the listening process runs as the user.
func TestALoopbackServerOfAnotherUserGetsNoHeaders(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.CannotRun(t, testenv.RequireFaultsEnv, "starting a listener as another user needs root")
	}
	// The test binary, where another user may run it.
	dir, err := os.MkdirTemp("", "codehydra-other-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "listener")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil || os.Chmod(dir, 0o755) != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = []string{listenerEnv + "=1", "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var port int
	select {
	case l := <-lines:
		if _, err := fmt.Sscanf(l, "PORT %d", &port); err != nil {
			t.Fatalf("the other user's listener said %q", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the other user's listener did not start")
	}

	t.Setenv("CODEHYDRA_TEST_TOKEN", "ghp_secret_of_the_user")
	g := newGateway(t, map[string]settings.MCPServer{"local": {URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		Headers: map[string]string{"Authorization": "Bearer {env:CODEHYDRA_TEST_TOKEN}"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if tools := g.Tools(ctx); len(tools) != 0 {
		t.Fatalf("Tools = %v, want none from another user's listener", toolNames(tools))
	}
	_, err = g.Call(ctx, "", "local__echo", args(t, map[string]string{"message": "hi"}))
	if err == nil || !strings.Contains(err.Error(), "runs as another user (uid 65534)") {
		t.Fatalf("Call = %v, want refused: another user's listener", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	var got []string
	for l := range lines {
		got = append(got, l)
	}
	if len(got) != 0 {
		t.Fatalf("the other user's listener was sent: %v", got)
	}
}
