package window

import (
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"codehydra/app/internal/uitest"
	"codehydra/internal/settings"
)

// openMCPServers opens the Settings window on a store holding servers.
func openMCPServers(t *testing.T, gw MCPGateway, servers map[string]settings.MCPServer) (*harness, *settings.Store, *mcpServersEditor) {
	t.Helper()
	store, _ := newStore(t)
	if err := store.Update(func(s *settings.Settings) { s.MCPServers = servers }); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces(), Settings: store, Gateway: gw})
	w := h.u.openSettings()
	return h, store, w.servers
}

// rowTexts is every label's text in the server's row.
func rowTexts(r *mcpServerRow) string {
	var b strings.Builder
	for _, o := range test.LaidOutObjects(r.contents) {
		if l, ok := o.(*widget.Label); ok && l.Visible() {
			b.WriteString(l.Text + "\n")
		}
	}
	return b.String()
}

func TestMCPServersTabAddsAServerToTheSettings(t *testing.T) {
	h, store, e := openMCPServers(t, &fakeGateway{}, nil)
	if !e.empty.Visible() {
		t.Error("with no server, the tab does not say so")
	}
	test.Tap(e.add)
	f := e.form
	if !f.content.Visible() || e.list.Visible() {
		t.Fatal("Add server… does not show the form")
	}
	test.Type(f.name, "everything")
	test.Type(f.command, "npx")
	f.args.SetText("-y\n@modelcontextprotocol/server-everything\n")
	f.env.SetText("API_TOKEN={env:MY_TOKEN}\nMODE = fast")
	f.scope.SetSelected(scopeWorkspace)
	f.confine.SetChecked(true)
	test.Tap(f.save)

	if f.content.Visible() || !strings.HasPrefix(e.status.Text, "Saved everything") {
		t.Fatalf("after Save: form visible %v, status %q (form says %q)", f.content.Visible(), e.status.Text, f.status.Text)
	}
	got := store.Get().MCPServers["everything"]
	want := settings.MCPServer{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"},
		Env: map[string]string{"API_TOKEN": "{env:MY_TOKEN}", "MODE": "fast"}, Scope: settings.ScopeWorkspace, Confine: true}
	if !got.Equal(want) {
		t.Errorf("saved %+v, want %+v", got, want)
	}
	r := e.byName["everything"]
	if r == nil {
		t.Fatal("the saved server is not listed")
	}
	if txt := rowTexts(r); !strings.Contains(txt, "program: npx") || !strings.Contains(txt, "stopped") || e.empty.Visible() {
		t.Errorf("row shows %q", txt)
	}

	// Editing it shows what was saved, and a rename replaces the entry.
	test.Tap(r.edit)
	if f.env.Text != "API_TOKEN={env:MY_TOKEN}\nMODE=fast" || f.scope.Selected != scopeWorkspace || !f.confine.Checked {
		t.Errorf("edit form: env %q scope %q confine %v", f.env.Text, f.scope.Selected, f.confine.Checked)
	}
	f.name.SetText("every")
	test.Tap(f.save)
	if _, ok := store.Get().MCPServers["everything"]; ok || !store.Get().MCPServers["every"].Equal(want) {
		t.Errorf("after a rename: %v", store.Get().MCPServers)
	}
	h.drain()
}

func TestMCPServersTabShowsWhyAFieldIsWrongAndDoesNotSave(t *testing.T) {
	_, store, e := openMCPServers(t, nil, map[string]settings.MCPServer{"github": {URL: "https://api.example.com/mcp"}})
	test.Tap(e.add)
	f := e.form
	for _, c := range []struct {
		field *field
		text  string
		want  string
	}{
		{f.name, "a__b", `"__"`},
		{f.name, "github", "exists already"},
		{f.command, "./server", "relative path"},
		{f.env, "NO_EQUALS_SIGN", "line 1: write NAME=VALUE"},
		{f.env, "1BAD=x", "not a variable name"},
		{f.args, "{env:not a name}", "does not name an environment variable"},
	} {
		c.field.SetText("")
		test.Type(c.field, c.text)
		if !c.field.reason.Visible() || !strings.Contains(c.field.reason.Text, c.want) {
			t.Errorf("%q: reason %q (visible %v), want it to say %q", c.text, c.field.reason.Text, c.field.reason.Visible(), c.want)
		}
		if strings.Contains(c.field.reason.Text, "mcpServers[") {
			t.Errorf("%q: reason %q names the settings key instead of speaking of the field", c.text, c.field.reason.Text)
		}
	}
	test.Tap(f.save)
	if !strings.HasPrefix(f.status.Text, "Not saved.") || len(store.Get().MCPServers) != 1 {
		t.Errorf("Save with bad fields: status %q, servers %v", f.status.Text, store.Get().MCPServers)
	}

	// Confine on a shared server cannot hold: not saved, and why.
	f.name.SetText("fs")
	f.command.SetText("npx")
	f.args.SetText("")
	f.env.SetText("")
	f.confine.SetChecked(true)
	test.Tap(f.save)
	if !strings.Contains(f.status.Text, `"confine" needs "scope": "workspace"`) || len(store.Get().MCPServers) != 1 {
		t.Errorf("Save of a confined shared server: status %q, servers %v", f.status.Text, store.Get().MCPServers)
	}
	f.confine.SetChecked(false)

	// A remote server's URL is checked; the program's fields are not used.
	f.kind.SetSelected(kindRemote)
	test.Type(f.url, "http://example.com/mcp")
	if !strings.Contains(f.url.reason.Text, "use https") || f.command.reason.Visible() || f.stdio.Visible() {
		t.Errorf("remote: url reason %q, command reason shown %v, program fields shown %v", f.url.reason.Text, f.command.reason.Visible(), f.stdio.Visible())
	}
}

func TestMCPServersTabAsksBeforeRemovingAServer(t *testing.T) {
	h, store, e := openMCPServers(t, &fakeGateway{}, map[string]settings.MCPServer{"fs": {Command: "mcp-server-filesystem"}})
	test.Tap(e.byName["fs"].remove)
	q := h.app.AskedQuestion("Remove MCP server fs?")
	if q == nil {
		t.Fatal("Remove… did not ask")
	}
	if _, ok := store.Get().MCPServers["fs"]; !ok {
		t.Fatal("the server was removed before the answer")
	}
	test.Tap(q.Cancel)
	if _, ok := store.Get().MCPServers["fs"]; !ok {
		t.Fatal("Cancel removed the server")
	}
	test.Tap(e.byName["fs"].remove)
	test.Tap(h.app.AskedQuestion("Remove MCP server fs?").OK)
	if len(store.Get().MCPServers) != 0 || len(e.byName) != 0 || !e.empty.Visible() {
		t.Errorf("after Remove: servers %v, rows %d", store.Get().MCPServers, len(e.byName))
	}
}

func TestMCPServersTabShowsAFailedServersErrorAndRefreshes(t *testing.T) {
	gw := &fakeGateway{}
	gw.set(MCPServerStatus{Name: "gh", State: "failed", LastError: "start gh: exec: \"gh-mcp\": not found", Restarts: 2})
	servers := map[string]settings.MCPServer{
		"gh":     {Command: "gh-mcp", Args: []string{"--token", "argsecret"}, Env: map[string]string{"GITHUB_TOKEN": "envsecret"}},
		"remote": {URL: "https://mcp.example.com/v1?key=urlsecret", Headers: map[string]string{"Authorization": "Bearer headersecret"}},
	}
	h, _, e := openMCPServers(t, gw, servers)
	r := e.byName["gh"]
	if !r.lastErr.Visible() || !strings.Contains(r.lastErr.Text, "not found") || !strings.Contains(r.state.Text, "failed") || !strings.Contains(r.state.Text, "2 restarts") {
		t.Errorf("failed server: state %q, error %q (visible %v)", r.state.Text, r.lastErr.Text, r.lastErr.Visible())
	}
	for name, row := range e.byName {
		txt := rowTexts(row)
		for _, secret := range []string{"argsecret", "envsecret", "urlsecret", "headersecret"} {
			if strings.Contains(txt, secret) {
				t.Errorf("row %s shows a secret: %q", name, txt)
			}
		}
	}

	gw.set(MCPServerStatus{Name: "gh", State: "running", Tools: 12, Calls: 3, Restarts: 2, Instances: 1})
	h.waitFor("the row to show the server running", func() bool {
		return strings.HasPrefix(r.state.Text, "running · 12 tools · 3 calls") && !r.lastErr.Visible()
	})

	// Closing the window stops the refresh: a change after it is not
	// shown even when a refresh would have come.
	for _, w := range slices.Clone(h.app.Driver().AllWindows()) {
		w.Close()
	}
	gw.set(MCPServerStatus{Name: "gh", State: "stopped"})
	time.Sleep(mcpStatusEvery * 3 / 2)
	h.drain()
	if !strings.HasPrefix(r.state.Text, "running") {
		t.Errorf("after the window closed, the row still refreshed: %q", r.state.Text)
	}
}

func TestServerSummarySaysWhenConfineCannotHold(t *testing.T) {
	if got := serverSummary(settings.MCPServer{Command: "npx", Confine: true, Scope: settings.ScopeWorkspace}); !strings.Contains(got, "confined to the caller's workspace") {
		t.Errorf("a confined workspace server: %q", got)
	}
	if got := serverSummary(settings.MCPServer{Command: "npx", Confine: true}); !strings.Contains(got, "confine cannot hold here") || strings.Contains(got, "confined to") {
		t.Errorf("a confined shared server: %q, want it to say confine cannot hold", got)
	}
}

func TestMCPServersTabSwitchesAServerOffAndOnAndEditingKeepsItsPolicies(t *testing.T) {
	gw := &fakeGateway{}
	gw.set(MCPServerStatus{Name: "fs", State: "running", Tools: 4, Instances: 1})
	m := settings.MCPServer{Command: "mcp-server-filesystem", Scope: settings.ScopeWorkspace, Confine: true,
		Tools: settings.ToolRules{Deny: []string{"write_*"}}, Paths: settings.PathRules{Deny: []string{"secrets/"}},
		RateLimit: settings.ServerRateLimit{PerMinute: 30}}
	h, store, e := openMCPServers(t, gw, map[string]settings.MCPServer{"fs": m})
	r := e.byName["fs"]
	if !r.on.Checked {
		t.Fatal("a server without enabled shows switched off")
	}
	if txt := rowTexts(r); !strings.Contains(txt, "some tools hidden") || !strings.Contains(txt, "paths narrowed") || !strings.Contains(txt, "at most 30 calls a minute") {
		t.Errorf("row shows %q, want its policies named", txt)
	}

	test.Tap(r.on)
	if got := store.Get().MCPServers["fs"]; got.On() || !got.Equal(func() settings.MCPServer { o := m.Clone(); o.Enabled = new(false); return o }()) {
		t.Fatalf("after switching off: saved %+v, want the same server with enabled false", got)
	}
	if r.on.Checked || !strings.Contains(r.state.Text, "Switched off") || !strings.Contains(e.status.Text, "Switched fs off") {
		t.Errorf("after switching off: check %v, state %q, status %q", r.on.Checked, r.state.Text, e.status.Text)
	}

	// Editing it in the form keeps what the form does not show.
	test.Tap(r.edit)
	f := e.form
	f.args.SetText("{workspace}")
	f.env.SetText("DB_NAME=db_{workspace.name}")
	test.Tap(f.save)
	got := store.Get().MCPServers["fs"]
	if f.content.Visible() || got.On() || got.Tools.Deny[0] != "write_*" || got.Paths.Deny[0] != "secrets/" || got.RateLimit.PerMinute != 30 || got.Env["DB_NAME"] != "db_{workspace.name}" {
		t.Fatalf("after editing: saved %+v (form says %q), want enabled, tools, paths and rateLimit kept and the new env", got, f.status.Text)
	}

	// A workspace variable needs scope workspace: said on save.
	test.Tap(r.edit)
	f.scope.SetSelected(scopeShared)
	f.confine.SetChecked(false)
	test.Tap(f.save)
	if !strings.Contains(f.status.Text, "only a server of scope") || store.Get().MCPServers["fs"].Scope != settings.ScopeWorkspace {
		t.Errorf("a shared server with workspace variables: status %q, saved scope %q", f.status.Text, store.Get().MCPServers["fs"].Scope)
	}
	test.Tap(f.cancel)

	test.Tap(r.on)
	if got := store.Get().MCPServers["fs"]; !got.On() || got.Enabled != nil {
		t.Fatalf("after switching on: enabled %v, want it back to the default", got.Enabled)
	}
	h.waitFor("the row to show the server running again", func() bool { return strings.HasPrefix(r.state.Text, "running") })
	h.drain()
}
