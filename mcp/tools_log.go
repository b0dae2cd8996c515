package mcp

// The log tool: an agent writes a line into CodeHydra's log, attributed to
// the caller its token proves (never to what the line says of itself).

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// Limits of a logged line: one line of the log file, readable, and
// bounded so that a chatty agent cannot flood the file with one call.
const (
	maxLogMessage    = 1000 // bytes of message
	maxLogContext    = 20   // keys of context
	maxLogKey        = 64   // bytes of a context key
	maxLogValue      = 256  // bytes of a context string value
	logContextPrefix = "ctx."
)

var logKeyPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)

func logTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolLog,
			Title: "Write to CodeHydra's log",
			Description: "Writes one line into CodeHydra's log, attributed to you: level (debug, info, warn, error), a " +
				"one-line message (cut at 1000 bytes) and an optional flat context map of string, number or boolean " +
				"values. Use it to leave a trace the user can find later (e.g. a step of a long task); never log secrets.",
			InputSchema: logSchema(),
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
		},
		handler: typed((*Server).logLine),
	}
}

type logInput struct {
	Level   string                     `json:"level" jsonschema:"debug, info, warn or error"`
	Message string                     `json:"message" jsonschema:"the line to log (one line; longer than 1000 bytes is cut)"`
	Context map[string]json.RawMessage `json:"context,omitempty" jsonschema:"flat map of extra fields: string, number or boolean values only (up to 20 keys)"`
}

// logSchema is log's input schema, with the level's enumeration and the
// context's value types that struct tags cannot express.
func logSchema() *jsonschema.Schema {
	in, err := jsonschema.For[logInput](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %s: %v", ToolLog, err))
	}
	in.Properties["level"].Enum = []any{"debug", "info", "warn", "error"}
	ctx := in.Properties["context"]
	ctx.Types, ctx.Type = nil, "object"
	ctx.AdditionalProperties = &jsonschema.Schema{Types: []string{"string", "number", "boolean"}}
	ctx.MaxProperties = new(maxLogContext)
	return in
}

var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

func (s *Server) logLine(ctx context.Context, _ *sdk.CallToolRequest, in logInput) (*sdk.CallToolResult, any, error) {
	level, ok := logLevels[in.Level]
	if !ok {
		return nil, nil, fail(workspace.Errorf(workspace.CodeInvalidInput, "level %q is not one of debug, info, warn, error", in.Level))
	}
	attrs, err := logContext(in.Context)
	if err != nil {
		return nil, nil, fail(err)
	}
	who := callerFrom(ctx)
	attrs = append([]slog.Attr{slog.String("source", "agent"), slog.String("caller", who.name())}, attrs...)
	s.log.LogAttrs(ctx, level, oneLine(in.Message, maxLogMessage), attrs...)
	return textResult("null"), nil, nil
}

// logContext turns a log call's context into attributes, each key
// prefixed so that it cannot pose as the line's own caller; a nested or
// null value is invalid input.
func logContext(in map[string]json.RawMessage) ([]slog.Attr, error) {
	if len(in) > maxLogContext {
		return nil, workspace.Errorf(workspace.CodeInvalidInput, "context has %d keys; at most %d", len(in), maxLogContext)
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(in))
	for _, k := range keys {
		if len(k) > maxLogKey || !logKeyPattern.MatchString(k) {
			return nil, workspace.Errorf(workspace.CodeInvalidInput, "context key %q: start with a letter, then letters, digits, '_', '.' or '-' (at most %d)", oneLine(k, maxLogKey), maxLogKey)
		}
		var v any
		if err := json.Unmarshal(in[k], &v); err != nil {
			return nil, workspace.Errorf(workspace.CodeInvalidInput, "context %s: %v", k, err)
		}
		switch v := v.(type) {
		case string:
			attrs = append(attrs, slog.String(logContextPrefix+k, oneLine(v, maxLogValue)))
		case float64:
			attrs = append(attrs, slog.Float64(logContextPrefix+k, v))
		case bool:
			attrs = append(attrs, slog.Bool(logContextPrefix+k, v))
		default:
			return nil, workspace.Errorf(workspace.CodeInvalidInput, "context %s: values must be a string, a number or a boolean, not an object, a list or null (context is a flat map)", k)
		}
	}
	return attrs, nil
}

// oneLine is s with its line breaks and other control characters turned
// into spaces, cut to at most n bytes (ending in "…" when cut).
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
