package window

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"codehydra/app/internal/uitest"
	"codehydra/internal/settings"
)

func TestProjectsTabSavesTheRemoteAndRefusesOneGitCannotTake(t *testing.T) {
	store, _ := newStore(t)
	f := uitest.NewWorkspaces()
	f.AddWorkspace("proj", "feat")
	h := newHarness(t, Deps{Workspaces: f, Settings: store})
	e := h.u.newProjectSetupEditor()

	test.Type(e.remote, "--upload-pack=evil")
	test.Tap(e.save)
	if !strings.Contains(e.status.Text, "starts with -") {
		t.Errorf("status = %q, want the remote refused", e.status.Text)
	}
	if _, ok := store.Get().ProjectSetup["/src/proj"]; ok {
		t.Fatal("a remote git cannot take was saved")
	}

	e.remote.SetText("upstream")
	test.Tap(e.save)
	if got := store.Get().RemoteFor("/src/proj"); got != "upstream" {
		t.Fatalf("remote saved as %q, want upstream (status %q)", got, e.status.Text)
	}
	// Only a remote readies nothing, and a reopened tab shows it.
	if _, ok := store.Get().SetupFor("/src/proj"); ok {
		t.Error("a project with only a remote has a setup")
	}
	if e2 := h.u.newProjectSetupEditor(); e2.remote.Text != "upstream" {
		t.Errorf("reopened tab shows remote %q", e2.remote.Text)
	}

	// Cleared, the entry goes and the default applies.
	e.remote.SetText("")
	test.Tap(e.save)
	if _, ok := store.Get().ProjectSetup["/src/proj"]; ok || store.Get().RemoteFor("/src/proj") != settings.DefaultRemote {
		t.Errorf("after clearing: %+v", store.Get().ProjectSetup)
	}
}

func TestProjectsTabSavesTheDevServerAndTeardownAndKeepsTheProjectsServers(t *testing.T) {
	store, _ := newStore(t)
	if err := store.Update(func(s *settings.Settings) {
		s.ProjectSetup = map[string]settings.ProjectSetup{"/src/proj": {MCPServers: []string{"fs"}}}
	}); err != nil {
		t.Fatal(err)
	}
	f := uitest.NewWorkspaces()
	f.AddWorkspace("proj", "feat")
	h := newHarness(t, Deps{Workspaces: f, Settings: store})
	e := h.u.newProjectSetupEditor()

	test.Type(e.teardown, "./down.sh")
	test.Tap(e.save)
	if !strings.Contains(e.status.Text, "relative path") || store.Get().ProjectOf("/src/proj").Teardown != "" {
		t.Fatalf("a relative teardown program was saved (status %q)", e.status.Text)
	}
	e.teardown.SetText(`sh -c "docker compose down"`)
	e.run.SetText("python3 -m http.server")
	e.tdTime.SetText("90")
	test.Tap(e.save)
	ps := store.Get().ProjectOf("/src/proj")
	if ps.Run != "python3 -m http.server" || ps.Teardown != `sh -c "docker compose down"` || ps.TeardownTimeout().Seconds() != 90 {
		t.Fatalf("saved %+v (status %q)", ps, e.status.Text)
	}
	if len(ps.MCPServers) != 1 || ps.MCPServers[0] != "fs" {
		t.Errorf("the project's mcpServers became %v, want [fs] kept", ps.MCPServers)
	}
	if e2 := h.u.newProjectSetupEditor(); e2.run.Text != ps.Run || e2.teardown.Text != ps.Teardown || e2.tdTime.Text != "90" {
		t.Errorf("reopened tab shows run %q teardown %q timeout %q", e2.run.Text, e2.teardown.Text, e2.tdTime.Text)
	}
}
