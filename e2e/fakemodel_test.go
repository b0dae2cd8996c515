//go:build linux

package e2e

import (
	"encoding/json"
	"maps"
	"testing"

	"codehydra/internal/fakemodel"
)

// opencodeModelEnv is the environment that makes the real opencode's
// agents answer with the OpenAI-compatible model served at baseURL, as
// fake/m: its provider, with the model's own options (tool_call, cost …;
// nil for none) and more of opencode's config (permission …), in
// OPENCODE_CONFIG_CONTENT, and none of opencode's own network use (its
// model list fetch and autoupdate off).
func opencodeModelEnv(t *testing.T, baseURL string, model, more map[string]any) []string {
	t.Helper()
	if model == nil {
		model = map[string]any{}
	}
	conf := map[string]any{
		"provider": map[string]any{"fake": map[string]any{"npm": "@ai-sdk/openai-compatible",
			"options": map[string]any{"baseURL": baseURL, "apiKey": "x"},
			"models":  map[string]any{"m": model}}},
		"model":      "fake/m",
		"autoupdate": false,
	}
	maps.Copy(conf, more)
	content, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"OPENCODE_CONFIG_CONTENT=" + string(content), "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1"}
}

// startFakeModel starts fm, closed when the test ends, and returns
// opencodeModelEnv for it.
func startFakeModel(t *testing.T, fm *fakemodel.Server, model, more map[string]any) []string {
	t.Helper()
	if err := fm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fm.Close() })
	return opencodeModelEnv(t, fm.BaseURL(), model, more)
}
