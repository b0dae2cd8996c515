// Package otlp exports the OpenTelemetry SDK's spans and metrics over
// OTLP/HTTP with protobuf, configured by the standard
// OTEL_EXPORTER_OTLP_* variables.
//
// It stands in for the SDK's otlptracehttp and otlpmetrichttp exporters,
// which link gRPC and the protobuf runtime to send a few messages over
// HTTP: about 7 MB of the core's 31, nearly all of them resident in every
// serve (docs/BENCHMARKS.md). Here the messages are written by hand
// (wire.go); what is sent is what those exporters send, which the tests
// check field by field against them.
package otlp

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// config is what the environment says about one signal's export. Each
// OTEL_EXPORTER_OTLP_<SIGNAL>_X variable, when set, wins over the common
// OTEL_EXPORTER_OTLP_X:
//
//   - ENDPOINT: the collector's base URL, to which /v1/traces or
//     /v1/metrics is added; <SIGNAL>_ENDPOINT is the full URL, used as it
//     is. http or https.
//   - HEADERS: "key=value,…", values URL-encoded, sent with each request.
//   - TIMEOUT: milliseconds one export may take, retries included
//     (default 10000).
//   - COMPRESSION: gzip or none (the default).
//   - CERTIFICATE: a PEM file of the CAs to trust instead of the
//     system's; CLIENT_CERTIFICATE and CLIENT_KEY: PEM files of a client
//     certificate for mutual TLS.
type config struct {
	URL     string
	Header  http.Header
	Timeout time.Duration
	Gzip    bool
	TLS     *tls.Config // nil: the system's roots and no client certificate
}

// configFromEnv reads signal's config (TRACES or METRICS, whose base path
// is path) from getenv. A variable set to something unusable is an error
// naming the variable; a header's value, which may be a secret, is never
// repeated in it.
func configFromEnv(getenv func(string) string, signal, path string) (config, error) {
	var errs []error
	get := func(name string) (value, used string) {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_" + name)); v != "" {
			return v, "OTEL_EXPORTER_OTLP_" + signal + "_" + name
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name)), "OTEL_EXPORTER_OTLP_" + name
	}
	cfg := config{Header: http.Header{}, Timeout: 10 * time.Second}

	endpoint, name := get("ENDPOINT")
	u, err := url.Parse(endpoint)
	switch {
	case endpoint == "":
		errs = append(errs, fmt.Errorf("neither OTEL_EXPORTER_OTLP_%s_ENDPOINT nor OTEL_EXPORTER_OTLP_ENDPOINT is set", signal))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("%s is not an http:// or https:// URL", name))
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		// Not sent, as the SDK's exporters did not send them either, and
		// not repeated in an error: they may be credentials.
		errs = append(errs, fmt.Errorf("%s has a user name, password, query or fragment: give the collector's credentials in OTEL_EXPORTER_OTLP_HEADERS instead", name))
	case name == "OTEL_EXPORTER_OTLP_ENDPOINT":
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + path
		cfg.URL = u.String()
	default:
		if u.Path == "" {
			u.Path = "/"
		}
		cfg.URL = u.String()
	}

	if v, name := get("HEADERS"); v != "" {
		for i, pair := range strings.Split(v, ",") {
			if strings.TrimSpace(pair) == "" {
				continue // "a=1," or "a=1,,b=2"
			}
			key, value, ok := strings.Cut(pair, "=")
			key = strings.TrimSpace(key)
			value, err := url.PathUnescape(value)
			switch {
			case !ok || !validHeaderKey(key):
				// Not even the key is repeated: it may be a secret
				// that lost its "=".
				errs = append(errs, fmt.Errorf("%s: item %d is not key=value", name, i+1))
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: the value of %s is not URL-encoded", name, key))
			case strings.ContainsFunc(value, isCTL):
				errs = append(errs, fmt.Errorf("%s: the value of %s holds a control character (a line break?), which no HTTP header may", name, key))
			default:
				cfg.Header.Set(key, strings.TrimSpace(value))
			}
		}
	}

	if v, name := get("TIMEOUT"); v != "" {
		ms, err := strconv.ParseUint(v, 10, 31)
		if err != nil || ms == 0 {
			errs = append(errs, fmt.Errorf("%s=%s is not a number of milliseconds", name, v))
		} else {
			cfg.Timeout = time.Duration(ms) * time.Millisecond
		}
	}

	switch v, name := get("PROTOCOL"); v {
	case "", "http/protobuf":
	default:
		errs = append(errs, fmt.Errorf("%s=%s: only http/protobuf is supported (not grpc or http/json)", name, v))
	}

	switch v, name := get("COMPRESSION"); strings.ToLower(v) {
	case "", "none":
	case "gzip":
		cfg.Gzip = true
	default:
		errs = append(errs, fmt.Errorf("%s=%s: only gzip and none are supported", name, v))
	}

	ca, caName := get("CERTIFICATE")
	certFile, certName := get("CLIENT_CERTIFICATE")
	keyFile, keyName := get("CLIENT_KEY")
	if ca != "" || certFile != "" || keyFile != "" {
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		pool := x509.NewCertPool()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", caName, err))
		case !pool.AppendCertsFromPEM(pem):
			errs = append(errs, fmt.Errorf("%s: %s holds no PEM certificate", caName, ca))
		default:
			cfg.TLS.RootCAs = pool
		}
	}
	if (certFile == "") != (keyFile == "") {
		errs = append(errs, fmt.Errorf("%s and %s go together: set both or neither", certName, keyName))
	} else if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s and %s: %w", certName, keyName, err))
		} else {
			cfg.TLS.Certificates = []tls.Certificate{cert}
		}
	}

	if len(errs) > 0 {
		return config{}, fmt.Errorf("set up the export of %s over OTLP: %w", strings.ToLower(signal), errList(errs))
	}
	return cfg, nil
}

// errList is several errors on one line, each still reachable with
// errors.Is and errors.As.
type errList []error

func (e errList) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e errList) Unwrap() []error { return e }

// isCTL says whether c is a control character, which no header value may
// hold.
func isCTL(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }

// validHeaderKey says whether key is an HTTP token (RFC 9110).
func validHeaderKey(key string) bool {
	if key == "" {
		return false
	}
	for _, c := range key {
		if c > 0x7e || c <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return true
}

// client posts one signal's requests to the collector.
type client struct {
	cfg  config
	http *http.Client
	// stopped ends when the exporter is shut down, and with it any
	// export still under way.
	stopped context.Context
	stop    context.CancelFunc
	// backoff is the first wait before a retry; it doubles after each.
	backoff time.Duration
}

func newClient(getenv func(string) string, signal, path string) (*client, error) {
	cfg, err := configFromEnv(getenv, signal, path)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.TLS != nil {
		tr.TLSClientConfig = cfg.TLS
	}
	c := &client{cfg: cfg, http: &http.Client{Transport: tr}, backoff: time.Second}
	c.stopped, c.stop = context.WithCancel(context.Background())
	context.AfterFunc(c.stopped, c.http.CloseIdleConnections)
	return c, nil
}

// send posts body, an Export…ServiceRequest, and tries again while the
// collector says it is busy or down for a moment (429, 502, 503, 504),
// within the export's timeout. items names what body carries, for the
// collector's partial-success reply.
func (c *client) send(ctx context.Context, body []byte, items string) error {
	if c.stopped.Err() != nil {
		return errShutDown
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	defer context.AfterFunc(c.stopped, cancel)()
	if c.cfg.Gzip {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		_, err := w.Write(body)
		if err = cmp.Or(err, w.Close()); err != nil {
			return fmt.Errorf("compress the telemetry: %w", err)
		}
		body = z.Bytes()
	}
	wait := c.backoff
	for {
		retryAfter, err := c.post(ctx, body, items)
		if retryAfter < 0 {
			return err
		}
		// At least as long as the collector asks, and up to a fifth
		// more, so that the two exporters do not come back in step.
		wait = time.Duration(float64(max(wait, retryAfter)) * (1 + 0.2*rand.Float64()))
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return fmt.Errorf("%w (not tried again: the export's time is up first)", err)
		}
		select {
		case <-ctx.Done():
			if c.stopped.Err() != nil {
				return fmt.Errorf("%w (not tried again: %w)", err, errShutDown)
			}
			return fmt.Errorf("%w (gave up trying again: %w)", err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

var errShutDown = errors.New("the OTLP exporter is shut down")

// post posts body once. retryAfter is negative when err is final (nil on
// success), else how long the collector asked to wait (0 if it did not
// say).
func (c *client) post(ctx context.Context, body []byte, items string) (retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	for k, v := range c.cfg.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "CodeHydra OTLP over HTTP/protobuf exporter")
	if c.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// The request is in the error, and its URL; its headers are not.
		return -1, fmt.Errorf("send telemetry: %w", err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		if resp.Header.Get("Content-Type") == "application/x-protobuf" {
			return -1, partialSuccess(reply, items)
		}
		return -1, nil
	case code == http.StatusTooManyRequests, code == http.StatusBadGateway,
		code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout:
		err := fmt.Errorf("the collector at %s answered %s: %s", c.cfg.URL, resp.Status, reason(resp, reply))
		if s, e := strconv.Atoi(resp.Header.Get("Retry-After")); e == nil && s > 0 {
			return time.Duration(min(s, 3600)) * time.Second, err
		}
		return 0, err
	default:
		return -1, fmt.Errorf("the collector at %s refused the telemetry: %s: %s", c.cfg.URL, resp.Status, reason(resp, reply))
	}
}

// partialSuccess is the error an Export…ServiceResponse reports, if any:
// its partial_success (1) with the items rejected (1) and why (2).
func partialSuccess(reply []byte, items string) error {
	top, ok := fields(reply)
	if !ok {
		return nil
	}
	for _, f := range top {
		if f.num != 1 || f.wire != wireBytes {
			continue
		}
		inner, ok := fields(f.bytes)
		if !ok {
			return nil
		}
		var rejected uint64
		var why string
		for _, g := range inner {
			switch {
			case g.num == 1 && g.wire == wireVarint:
				rejected = g.v
			case g.num == 2 && g.wire == wireBytes:
				why = string(g.bytes)
			}
		}
		if rejected != 0 || why != "" {
			return fmt.Errorf("the collector rejected %d %s: %s", int64(rejected), items, why)
		}
	}
	return nil
}

// reason is why a collector's reply says it failed: the message of a
// google.rpc.Status (2), which OTLP/HTTP replies with, or the reply's
// text; trimmed, and short.
func reason(resp *http.Response, reply []byte) string {
	s := string(reply)
	if resp.Header.Get("Content-Type") == "application/x-protobuf" {
		fs, _ := fields(reply)
		s = ""
		for _, f := range fs {
			if f.num == 2 && f.wire == wireBytes {
				s = string(f.bytes)
			}
		}
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "(no reason given)"
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
