package main

// The yardstick of the per-call overhead: a bare go-sdk server with the
// same checks on what comes in as `codehydra serve` (bearer token, Host
// naming this loopback port, cross-origin refusal, the SDK's body limit)
// and one trivial tool, registered through the SDK's low-level AddTool. It runs
// as a child process of this bench (the bench binary re-executed with
// bareEnv set) so that its CPU time is its own, as codehydra's is.

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"codehydra/internal/paths"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bareEnv, set to "1", makes the bench binary run the bare server; set to
// "stateless", the bare server of the 2026-07-28 era: the SDK's stateless
// handler, the only one that speaks it.
const bareEnv = "CODEHYDRA_BENCH_BARE"

// bareTool is the bare server's one tool.
const bareTool = "ping"

// runBareServer serves until SIGTERM. Its first line on stdout is
// "<url> <token>".
func runBareServer(stateless bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		fmt.Fprintf(os.Stderr, "bare server: %v\n", err)
		return 1
	}
	token := hex.EncodeToString(key)
	srv := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "1"}, nil)
	// The low-level AddTool, as the SDK's documentation suggests for a tool
	// that takes no input: the cheapest a go-sdk tool can be.
	srv.AddTool(&sdk.Tool{Name: bareTool, Description: "answers pong", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `"pong"`}}}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "bare server: %v\n", err)
		return 1
	}
	port := ln.Addr().(*net.TCPAddr).Port
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: stateless})
	hs := &http.Server{Handler: bareChecks(port, token, handler),
		ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	fmt.Printf("http://127.0.0.1:%d/mcp %s\n", port, token)
	if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "bare server: %v\n", err)
		return 1
	}
	return 0
}

// bareChecks are codehydra's checks on what comes in, written plainly:
// Host, Origin (every method judged as a POST), then the bearer token
// through the SDK's middleware.
func bareChecks(port int, token string, next http.Handler) http.Handler {
	withToken := auth.RequireBearerToken(func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "user"}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	cop := http.NewCrossOriginProtection()
	suffix := ":" + strconv.Itoa(port)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutSuffix(r.Host, suffix)
		if !ok || name != "127.0.0.1" && name != "localhost" && name != "[::1]" {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		probe := *r
		probe.Method = http.MethodPost
		if cop.Check(&probe) != nil {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		withToken.ServeHTTP(w, r)
	})
}

// bareProc is a running bare server (go-sdk or Node SDK).
type bareProc struct {
	cmd        *exec.Cmd
	url, token string
}

// startBare runs the bench binary again as the bare go-sdk server, with
// Go's default runtime settings (GOMAXPROCS, GOGC and GOMEMLIMIT unset):
// the yardstick is a go-sdk server as its users run it. settings are set
// on top (the same server with serve's GOMAXPROCS, beside it).
func (b *bench) startBare(stateless bool, settings ...string) (*bareProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the bench binary: %w", err)
	}
	mode := "1"
	if stateless {
		mode = "stateless"
	}
	cmd := exec.Command(self)
	cmd.Env = append(append(withoutRuntimeSettings(os.Environ()), bareEnv+"="+mode), settings...)
	return b.startBareCmd(cmd)
}

// startNode runs build/bench/nodeserver.js, the Node SDK's bare server,
// with node and the SDK that build/setup.sh installs.
func (b *bench) startNode() (*bareProc, error) {
	modules := filepath.Join(paths.ToolsDir(), "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		return nil, fmt.Errorf("no Node MCP SDK in %s (make setup installs it): %w", modules, err)
	}
	cmd := exec.Command("node", filepath.Join(b.root, "build", "bench", "nodeserver.js"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	return b.startBareCmd(cmd)
}

// nodeSDKVersion is the version of the Node MCP SDK that startNode runs.
func nodeSDKVersion() string {
	data, err := os.ReadFile(filepath.Join(paths.ToolsDir(), "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	if err != nil {
		return "?"
	}
	var pkg struct{ Version string }
	if json.Unmarshal(data, &pkg) != nil || pkg.Version == "" {
		return "?"
	}
	return pkg.Version
}

// runtimeSettings are the variables of the Go runtime's settings that
// serve sets for itself unless they are set (internal/daemon/gc.go).
func runtimeSettings() []string { return []string{"GOMAXPROCS", "GOGC", "GOMEMLIMIT"} }

// withoutRuntimeSettings is env without runtimeSettings.
func withoutRuntimeSettings(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(runtimeSettings(), k)
	})
}

// startBareCmd starts a bare server and reads where it listens from its
// first line.
func (b *bench) startBareCmd(cmd *exec.Cmd) (*bareProc, error) {
	cmd.Stderr = b.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the bare server %s: %w", cmd.Path, err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	url, token, ok := strings.Cut(strings.TrimSpace(line), " ")
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the bare server did not say where it listens (%q): %v", line, err)
	}
	return &bareProc{cmd: cmd, url: url, token: token}, nil
}

func (p *bareProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// procCPU is the CPU time (user + system) process pid has used so far,
// from /proc/<pid>/stat, whose clock ticks are USER_HZ, 100 per second on
// Linux.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read the CPU time of pid %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; the fields after it
	// start behind its closing parenthesis: state is field 3, utime 14.
	_, rest, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("read the CPU time of pid %d: short stat line", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("read the CPU time of pid %d: %q %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
