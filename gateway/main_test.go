package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

// crashingAppEnv makes the test binary act as a CodeHydra whose gateway
// runs one stdio server, says "READY", and waits to be killed.
const crashingAppEnv = "CODEHYDRA_TEST_GATEWAY_CRASHING_APP"

type crashingAppSpec struct {
	RecordsDir string
	Server     settings.MCPServer
}

func TestMain(m *testing.M) {
	if os.Getenv(crashingAppEnv) != "" {
		runCrashingApp()
		return
	}
	if os.Getenv(listenerEnv) != "" {
		runListener()
		return
	}
	os.Exit(testenv.Main(m, "gateway-test-home-"))
}

func runCrashingApp() {
	var spec crashingAppSpec
	if err := json.Unmarshal([]byte(os.Getenv(crashingAppEnv)), &spec); err != nil {
		fmt.Println("bad spec:", err)
		os.Exit(2)
	}
	g := New(Options{RecordsDir: spec.RecordsDir, Servers: map[string]settings.MCPServer{"leaky": spec.Server}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if tools := g.Tools(ctx); len(tools) == 0 {
		fmt.Println("server not running:", g.Statuses()[0].LastError)
		os.Exit(2)
	}
	fmt.Println("READY")
	select {}
}

// listenerEnv makes the test binary listen on 127.0.0.1, print "PORT n",
// and print "GOT <Authorization>" for each request it is sent.
const listenerEnv = "CODEHYDRA_TEST_GATEWAY_LISTENER"

func runListener() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(2)
	}
	fmt.Printf("PORT %d\n", ln.Addr().(*net.TCPAddr).Port)
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("GOT %q\n", r.Header.Get("Authorization"))
		http.Error(w, "not yours", http.StatusInternalServerError)
	}))
}
