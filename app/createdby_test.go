package app

import (
	"testing"

	"codehydra/workspace"
)

func TestWorkspaceMadeByAnAgentNamesItsCreatorFirstInItsSubmenu(t *testing.T) {
	a := workspace.Workspace{Name: "featA", Path: "/p/ws/featA"}
	child := workspace.Workspace{Name: "child", Path: "/p/ws/child"}
	orphan := workspace.Workspace{Name: "orphan", Path: "/p/ws/orphan"}
	s := State{Projects: []ProjectState{{
		Project: workspace.Project{Name: "p", Path: "/p"},
		Workspaces: []WorkspaceState{
			{Workspace: a},
			{Workspace: child, CreatedBy: a.Path},
			{Workspace: orphan, CreatedBy: "/p/ws/gone-one"},
		},
	}}}
	menu := BuildMenu(s, Actions{})
	first := map[string]string{}
	for _, it := range menu.Items {
		if it.ChildMenu != nil && len(it.ChildMenu.Items) > 0 {
			first[it.ChildMenu.Label] = it.ChildMenu.Items[0].Label
		}
	}
	for name, want := range map[string]string{"child": "created by featA", "orphan": "created by gone-one", "featA": LabelOpenAgent} {
		if first[name] != want {
			t.Errorf("%s's submenu starts with %q, want %q", name, first[name], want)
		}
	}
}
