package mcp

// Typed tools on the SDK's low-level API. sdk.AddTool's handler costs, on
// every call, three JSON decodes beyond the request's own (the arguments
// into a map to validate them, then into the input type; the output back
// into a map to validate it against the output schema) and a second
// marshal of each. Each decode allocates the SDK's 32 KiB decoder buffer,
// and the garbage made collection the largest cost of a cheap call
// (issue 16). toolHandler keeps the check of what comes in, the
// arguments against the input schema, but skips the decode when the
// arguments are empty and empty is valid, and it marshals the output once
// without validating it: the output is ours, and TestToolOutputsMatchSchemas
// checks it against the schema instead.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// inputCheck validates a tool's arguments against its input schema.
type inputCheck struct {
	resolved *jsonschema.Resolved
	// emptyOK: no arguments (or {}) are valid and the schema's defaults
	// add nothing to them, so they decode to the zero input.
	emptyOK bool
}

func newInputCheck(schema any) (inputCheck, error) {
	s, ok := schema.(*jsonschema.Schema)
	if !ok || s == nil || s.Type != "object" {
		return inputCheck{}, fmt.Errorf("not an object *jsonschema.Schema: %T", schema)
	}
	resolved, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return inputCheck{}, fmt.Errorf("resolve: %w", err)
	}
	var empty any = map[string]any{}
	err = resolved.ApplyDefaults(&empty)
	emptyOK := err == nil && len(empty.(map[string]any)) == 0 && resolved.Validate(&empty) == nil
	return inputCheck{resolved: resolved, emptyOK: emptyOK}, nil
}

// decode validates raw against the input schema, applying its defaults,
// and decodes the result into in, as sdk.AddTool's handler does. A failed
// validation is told as sdk.AddTool tells it (TestTypedToolsAnswerAsSDKAddToolDoes).
func (c inputCheck) decode(raw json.RawMessage, in any) error {
	if c.emptyOK && isEmptyArgs(raw) {
		return nil
	}
	m := map[string]any{}
	if len(raw) > 0 {
		if err := unmarshal(raw, &m); err != nil {
			return fmt.Errorf("validating \"arguments\": unmarshaling arguments: %w", err)
		}
	}
	var v any = m
	if err := c.resolved.ApplyDefaults(&v); err != nil {
		return fmt.Errorf("validating \"arguments\": applying schema defaults:\n%w", err)
	}
	if err := c.resolved.Validate(&v); err != nil {
		return fmt.Errorf("validating \"arguments\": %w", err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("validating \"arguments\": %w", err)
	}
	return unmarshal(data, in)
}

// unmarshal decodes data into v as the SDK decodes arguments (its
// internal/json): with segmentio's parser, whose errors it tells, struct
// fields matched case-sensitively. The SDK's limit on nesting applies to
// the whole request before a tool sees it. segjson.Parse is what the
// SDK's Decoder.Decode runs once it has read the value, without the
// 32 KiB read buffer that each Decoder allocates: data is already whole
// (and valid JSON: the SDK decoded the request, or json.Marshal made it).
func unmarshal(data []byte, v any) error {
	_, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	return err
}

// isEmptyArgs reports whether raw is no arguments at all: absent or {}.
func isEmptyArgs(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return true
	}
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return false
	}
	return len(bytes.TrimSpace(t[1:len(t)-1])) == 0
}

// toolHandler adapts a typed handler to the SDK's low-level API: the
// arguments checked and decoded, the output marshalled once into
// structuredContent and, when the handler set no content, into a text
// block as well (what sdk.AddTool answers).
func toolHandler[In, Out any](check inputCheck, h sdk.ToolHandlerFor[In, Out]) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in In
		if err := check.decode(req.Params.Arguments, &in); err != nil {
			res := &sdk.CallToolResult{}
			res.SetError(err)
			return res, nil
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			if wire, ok := err.(*jsonrpc.Error); ok {
				return nil, wire
			}
			res = &sdk.CallToolResult{}
			res.SetError(err)
			return res, nil
		}
		if res == nil {
			res = &sdk.CallToolResult{}
		}
		if outval := any(out); outval != nil {
			data, err := json.Marshal(outval)
			if err != nil {
				return nil, fmt.Errorf("marshaling output: %w", err)
			}
			res.StructuredContent = json.RawMessage(data)
			if res.Content == nil {
				res.Content = []sdk.Content{&sdk.TextContent{Text: string(data)}}
			}
		}
		return res, nil
	}
}
