package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"codehydra/internal/testenv"
)

func TestTheEnvironmentSaysWhereAndHowToSend(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want config
	}{
		{"base URL gets the signal's path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			config{URL: "http://collector:4318/v1/traces", Timeout: 10 * time.Second}},
		{"base URL with a path and a slash", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector/otlp/"},
			config{URL: "https://collector/otlp/v1/traces", Timeout: 10 * time.Second}},
		{"the signal's URL is used as it is, and wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:1/x/traces"},
			config{URL: "http://b:1/x/traces", Timeout: 10 * time.Second}},
		{"the signal's URL without a path gets /", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:1"},
			config{URL: "http://b:1/", Timeout: 10 * time.Second}},
		{"headers, timeout and compression", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%20e%3Dcret, x-team = core ",
			"OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
			config{URL: "http://c/v1/traces", Header: http.Header{"Api-Key": {"s e=cret"}, "X-Team": {"core"}}, Timeout: 2500 * time.Millisecond, Gzip: true}},
		{"empty header items are skipped; the protocol may be named", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "a=1,, b=2,", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			config{URL: "http://c/v1/traces", Header: http.Header{"A": {"1"}, "B": {"2"}}, Timeout: 10 * time.Second}},
		{"the signal's own win over the common ones", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2",
			"OTEL_EXPORTER_OTLP_TIMEOUT": "1", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none"},
			config{URL: "http://c/v1/traces", Header: http.Header{"B": {"2"}}, Timeout: 2 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := configFromEnv(envOf(tc.env), "TRACES", "v1/traces")
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.Header == nil {
				tc.want.Header = http.Header{}
			}
			if got.URL != tc.want.URL || got.Timeout != tc.want.Timeout || got.Gzip != tc.want.Gzip || got.TLS != nil || !sameHeader(got.Header, tc.want.Header) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func sameHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a.Get(k) != b.Get(k) {
			return false
		}
	}
	return true
}

func TestAnUnusableVariableIsAnErrorThatNamesItAndNotASecret(t *testing.T) {
	_, err := NewTraceExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/no/such/ca.pem", "OTEL_EXPORTER_OTLP_TIMEOUT": "x"}))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_TIMEOUT=x is not a number of milliseconds; OTEL_EXPORTER_OTLP_CERTIFICATE") {
		t.Errorf("two unusable variables: %v, want both on one line, the missing file still an fs.ErrNotExist", err)
	}

	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "neither OTEL_EXPORTER_OTLP_METRICS_ENDPOINT nor OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT is not an http:// or https:// URL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "grpc://c:4317"}, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is not"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "a=1,token%zzsecret"}, "OTEL_EXPORTER_OTLP_METRICS_HEADERS: item 2 is not key=value"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "token=%zzsecret"}, "OTEL_EXPORTER_OTLP_HEADERS: the value of token is not URL-encoded"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "bad key=secret"}, "OTEL_EXPORTER_OTLP_HEADERS: item 1 is not key=value"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:secret@c:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT has a user name, password, query or fragment"},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "https://c/v1/metrics?api_key=secret"}, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT has a user name, password, query or fragment"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%0Asecret"}, "OTEL_EXPORTER_OTLP_HEADERS: the value of authorization holds a control character"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: only http/protobuf is supported"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, "OTEL_EXPORTER_OTLP_TIMEOUT=10s is not a number of milliseconds"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION=zstd: only gzip and none"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/no/such/ca.pem"}, "OTEL_EXPORTER_OTLP_CERTIFICATE: open /no/such/ca.pem"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_CLIENT_KEY": "/k.pem"}, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together"},
	} {
		_, err := NewMetricExporter(envOf(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one with %q", tc.env, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%v: the error repeats a header's value: %v", tc.env, err)
		}
	}
}

// exportOne exports one span with a trace exporter made from env, which
// waits wait before its first retry.
func exportOne(t *testing.T, env map[string]string, wait time.Duration) error {
	t.Helper()
	e, err := NewTraceExporter(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	e.c.backoff = wait
	return e.ExportSpans(context.Background(), tracetest.SpanStubs{{Name: "one", Resource: resource.Empty()}}.Snapshots())
}

func TestABusyCollectorIsTriedAgainAndAFailingOneIsNot(t *testing.T) {
	var calls atomic.Int32
	col := newCollector(t, func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case 2:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "restarting", http.StatusServiceUnavailable)
		}
	})
	start := time.Now()
	if err := exportOne(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL}, 10*time.Millisecond); err != nil {
		t.Fatalf("export: %v", err)
	}
	if n := len(col.take("/v1/traces")); n != 3 {
		t.Errorf("%d posts, want 3 (two refused, one taken)", n)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("took %v: the collector's Retry-After (1 s) was not waited", d)
	}

	calls.Store(0)
	refusing := newCollector(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "unknown tenant", http.StatusBadRequest)
	})
	err := exportOne(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": refusing.srv.URL}, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request: unknown tenant") {
		t.Errorf("a 400: error %v", err)
	}
	if calls.Load() != 1 {
		t.Errorf("a 400 was tried %d times", calls.Load())
	}
}

func TestACollectorThatStaysDownIsGivenUpAtTheTimeout(t *testing.T) {
	col := newCollector(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	})
	start := time.Now()
	err := exportOne(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL, "OTEL_EXPORTER_OTLP_TIMEOUT": "300"}, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "502 Bad Gateway: down") || !strings.Contains(err.Error(), "the export's time is up") {
		t.Errorf("error %v, want the collector's answer and that the time was up", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v, with a 300 ms timeout", d)
	}
	if n := len(col.take("/v1/traces")); n < 2 {
		t.Errorf("%d posts: not tried again", n)
	}
}

func TestHeadersAndGzipAreSent(t *testing.T) {
	col := newCollector(t, nil)
	if err := exportOne(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20abc", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, time.Second); err != nil {
		t.Fatal(err)
	}
	r := col.reqs[0]
	if r.Header.Get("Authorization") != "Bearer abc" || r.Header.Get("User-Agent") != "CodeHydra OTLP over HTTP/protobuf exporter" || r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("headers %v", r.Header)
	}
	z, err := gzip.NewReader(bytes.NewReader(col.take("/v1/traces")[0]))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(z)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil || req.ResourceSpans[0].ScopeSpans[0].Spans[0].Name != "one" {
		t.Errorf("gunzipped body %v, %v", &req, err)
	}
}

func TestTheCollectorsCertificateAuthorityIsTrusted(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}
	if err := exportOne(t, env, time.Second); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an unknown authority: error %v", err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	testenv.WriteFile(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	env["OTEL_EXPORTER_OTLP_CERTIFICATE"] = ca
	if err := exportOne(t, env, time.Second); err != nil {
		t.Errorf("with the authority: %v", err)
	}
}

func TestACollectorsPartialSuccessIsReported(t *testing.T) {
	reply, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 1, ErrorMessage: "span too old"}})
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(reply)
	})
	err = exportOne(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL}, time.Second)
	if err == nil || err.Error() != "the collector rejected 1 spans: span too old" {
		t.Errorf("error %v", err)
	}
}

func TestAShutDownExporterSendsNothing(t *testing.T) {
	col := newCollector(t, nil)
	e, err := NewTraceExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.ExportSpans(context.Background(), tracetest.SpanStubs{{Name: "late"}}.Snapshots()); err == nil {
		t.Error("exported after shutdown")
	}
	if n := len(col.take("/v1/traces")); n != 0 {
		t.Errorf("%d posts after shutdown", n)
	}
}

func TestShutdownEndsAnExportThatIsWaitingToTryAgain(t *testing.T) {
	var posts atomic.Int32
	col := newCollector(t, func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	e, err := NewTraceExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL, "OTEL_EXPORTER_OTLP_TIMEOUT": "60000"}))
	if err != nil {
		t.Fatal(err)
	}
	e.c.backoff = 5 * time.Second
	done := make(chan error, 1)
	go func() {
		done <- e.ExportSpans(context.Background(), tracetest.SpanStubs{{Name: "one", Resource: resource.Empty()}}.Snapshots())
	}()
	testenv.WaitFor(t, "the first post", 10*time.Second, func() bool { return posts.Load() == 1 })
	start := time.Now()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, errShutDown) || !strings.Contains(err.Error(), "503") {
			t.Errorf("the export ended with %v, want the collector's answer and the shutdown", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the export ended %v after the shutdown", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the export still waits to try again 10 s after the shutdown")
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d posts, want the one before the shutdown", n)
	}
}

func TestARefusalsStatusMessageIsTheReasonGiven(t *testing.T) {
	// google.rpc.Status{code: 3, message: "bad span"}, as a collector
	// answers a refused export.
	status := []byte{0x08, 0x03, 0x12, 0x08, 'b', 'a', 'd', ' ', 's', 'p', 'a', 'n'}
	col := newCollector(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(status)
	})
	err := exportOne(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL}, time.Second)
	if err == nil || !strings.HasSuffix(err.Error(), "400 Bad Request: bad span") {
		t.Errorf("error %v, want the status's message", err)
	}
}

func TestAClientCertificateIsPresentedAndTheSignalsOwnAuthorityWins(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client certificate", http.StatusUnauthorized)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	testenv.WriteFile(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	// The client's certificate: any key pair will do for a server that
	// only asks for one.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "codehydra"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	testenv.WriteFile(t, cert, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	testenv.WriteFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	wrongCA := filepath.Join(dir, "wrong-ca.pem")
	testenv.WriteFile(t, wrongCA, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))

	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_CERTIFICATE": wrongCA, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": ca}
	if err := exportOne(t, env, time.Second); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without a client certificate: %v, want the collector's 401", err)
	}
	env["OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"], env["OTEL_EXPORTER_OTLP_CLIENT_KEY"] = cert, keyFile
	if err := exportOne(t, env, time.Second); err != nil {
		t.Errorf("with the client certificate and the signal's own authority: %v", err)
	}
	delete(env, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE")
	if err := exportOne(t, env, time.Second); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("with the common, wrong authority: %v, want a certificate error", err)
	}
}
