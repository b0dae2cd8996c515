package app

import (
	"strings"
	"testing"

	"codehydra/app/internal/uitest"
	"codehydra/workspace"
)

func TestPreviewItemsAreLeftOutWhenThereIsNothingToOffer(t *testing.T) {
	var calls []string
	a := allActions(&calls)
	a.PreviewActions = PreviewActions{OpenEndpoint: func(string) {}, StartDevServer: func(string) {}, StopDevServer: func(string) {}}
	plain := wsState("plain", uitest.AgentIdle)
	deleting := wsState("gone", uitest.AgentIdle)
	deleting.Deleting = true
	deleting.Endpoints = []workspace.Endpoint{{Port: 8000, URL: "http://127.0.0.1:8000"}}
	deleting.DevServer = DevServerState{Configured: true, Running: true}
	m := BuildMenu(oneProject(plain, deleting), a)
	for _, l := range labels(m) {
		if strings.Contains(l, "http://") || strings.Contains(l, "dev server") {
			t.Errorf("offered %q in\n%s", l, strings.Join(labels(m), "\n"))
		}
	}
}
