package mcp

// The tools that let an agent follow the work it handed out
// (workspace_list) and manage its own agent (workspace_get_agent_session,
// workspace_restart_agent). A workspace's token reads its project's
// workspaces, and its own children's conversations; the only tools that
// act on another workspace than the caller's act on its children (the
// review and landing tools, tools_review.go and tools_land.go).

import (
	"context"
	"log/slog"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// AgentSessions follows and restarts the agents of workspaces for the
// orchestration tools; the opencode supervisor implements it.
type AgentSessions interface {
	// PromptDelivery is what became of the workspace's first prompt;
	// false when it had none.
	PromptDelivery(path string) (workspace.PromptDelivery, bool)
	// CurrentSession is the ID of the agent's current session, "" when
	// it has none.
	CurrentSession(ctx context.Context, path string) (string, error)
	// LastReply is the text of the agent's last reply ("" for none),
	// capped; truncated says it was cut.
	LastReply(ctx context.Context, path string) (text string, truncated bool, err error)
	// Restart stops the workspace's agent and starts it again; it does
	// not wait.
	Restart(path string) error
}

type (
	// ListEntry is one workspace of workspace_list's answer.
	ListEntry struct {
		Name        string                `json:"name" jsonschema:"workspace name (its branch)"`
		Branch      string                `json:"branch,omitempty" jsonschema:"checked-out branch; absent on a detached HEAD"`
		Path        string                `json:"path" jsonschema:"absolute path of the workspace"`
		ProjectPath string                `json:"projectPath" jsonschema:"absolute path of the project"`
		IsDirty     bool                  `json:"isDirty" jsonschema:"true when the worktree has uncommitted changes"`
		Base        string                `json:"base,omitempty" jsonschema:"branch the workspace is compared with"`
		Ahead       int                   `json:"ahead" jsonschema:"commits on the workspace branch that base lacks"`
		Behind      int                   `json:"behind" jsonschema:"commits on base that the workspace branch lacks"`
		Agent       workspace.AgentStatus `json:"agent" jsonschema:"the agent: state (starting, ready, failed…), type none|idle|busy|mixed, needsInput (sessions waiting for an answer) and, for workspaces you created, requests (what it waits on: id, kind permission|question, tool, summary, a question's options; answer with workspace_answer)"`
		CreatedBy   string                `json:"createdBy,omitempty" jsonschema:"path of the workspace whose agent created this one"`
		// ChangedFiles and MergesCleanly are given for the caller's
		// children only (all workspaces for the user).
		ChangedFiles  *int   `json:"changedFiles,omitempty" jsonschema:"how many files the workspace changed against its base (committed, uncommitted, untracked); only for workspaces you created"`
		MergesCleanly *bool  `json:"mergesCleanly,omitempty" jsonschema:"whether its commits merge into its base without conflicts; absent when that cannot be told; only for workspaces you created"`
		PR            string `json:"pr,omitempty" jsonschema:"the address of its pull request (workspace_create_pr); only for workspaces you created"`
		// Prompt, LastReply and Review are given for the caller's
		// children only (all workspaces for the user).
		Prompt    *workspace.PromptDelivery `json:"prompt,omitempty" jsonschema:"what became of the first prompt (pending, delivered, failed with error); only for workspaces you created"`
		LastReply *LastReply                `json:"lastReply,omitempty" jsonschema:"the agent's last reply in its current session; only for workspaces you created"`
		Review    *workspace.ReviewDelivery `json:"review,omitempty" jsonschema:"what became of the last review sent to its agent (workspace_send_review); only for workspaces you created"`
		// Error says what could not be read of this workspace.
		Error string `json:"error,omitempty" jsonschema:"what could not be read of this workspace"`
	}

	// LastReply is the text of an agent's last reply.
	LastReply struct {
		Text      string `json:"text" jsonschema:"text of the agent's last message"`
		Truncated bool   `json:"truncated,omitempty" jsonschema:"true: text is the first 4 KiB of a longer reply"`
	}

	// WorkspaceList is workspace_list's answer.
	WorkspaceList struct {
		Workspaces []ListEntry `json:"workspaces" jsonschema:"the workspaces, by project then name"`
	}

	agentSessionOutput struct {
		Port      *int    `json:"port" jsonschema:"port of your agent's OpenCode server on 127.0.0.1; null when none runs"`
		SessionID *string `json:"sessionId" jsonschema:"ID of your agent's current session (the one updated last); null when it has none"`
	}

	restartOutput struct {
		Restarting bool `json:"restarting" jsonschema:"true: the agent restarts once this answer is sent"`
	}
)

// listParallel bounds how many workspaces workspace_list reads at once
// (each read runs git, and may ask an agent's server).
const listParallel = 4

func workspaceListTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolList,
			Title: "List workspaces",
			Description: "Lists the workspaces of your project (the user: of the project of the workspace X-Workspace-Path " +
				"names, or of every project without it): name, branch, path, isDirty, ahead/behind its base, the agent's " +
				"state (agent.state, agent.type idle|busy, agent.needsInput), what it cost so far (agent.usage) and createdBy (the workspace whose agent created " +
				"it). For the workspaces you created with workspace_create it also gives the first prompt's delivery " +
				"(prompt.state pending|delivered|failed, prompt.error), the agent's last reply (lastReply.text, cut at " +
				"4 KiB with truncated true), the delivery of the last review you sent it (review), its pull request (pr), changedFiles and mergesCleanly " +
				"(into its base, without conflicts). Use it to follow the agents you handed work to; see their changes with " +
				"workspace_get_diff, review them with workspace_send_review and land them with workspace_merge.",
			Annotations: readOnly(),
		},
		handler: typed((*Server).workspaceList),
	}
}

func (s *Server) workspaceList(ctx context.Context, req *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, WorkspaceList, error) {
	who := callerFrom(ctx)
	projects, err := s.listedProjects(who, req)
	if err != nil {
		return nil, WorkspaceList{}, fail(err)
	}
	var all []workspace.Workspace
	for _, p := range projects {
		wss, err := s.opts.Workspaces.Workspaces(p)
		if workspace.CodeOf(err) == workspace.CodeProjectNotFound {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, WorkspaceList{}, fail(err)
		}
		all = append(all, wss...)
	}
	out := WorkspaceList{Workspaces: make([]ListEntry, len(all))}
	sem := make(chan struct{}, listParallel)
	var wg sync.WaitGroup
	for i, ws := range all {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out.Workspaces[i] = s.listEntry(ctx, who, ws)
		})
	}
	wg.Wait()
	return nil, out, nil
}

// listedProjects are the projects workspace_list shows: a workspace
// token's own; for the user, the project of the workspace X-Workspace-Path
// names, or every project without that header.
func (s *Server) listedProjects(who caller, req *sdk.CallToolRequest) ([]string, error) {
	if !who.isUser() {
		return []string{who.ws.ProjectPath}, nil
	}
	h := requestHeader(req)
	if vals := h.Values(WorkspaceHeader); len(vals) > 0 && (len(vals) > 1 || vals[0] != "") {
		ws, err := s.resolve(h)
		if err != nil {
			return nil, err
		}
		return []string{ws.ProjectPath}, nil
	}
	var paths []string
	for _, p := range s.opts.Workspaces.Projects() {
		paths = append(paths, p.Path)
	}
	return paths, nil
}

// landState fills in what landing a listed workspace would take: its
// changed files, and whether it merges into its base cleanly (from a
// preflight, which touches no working tree). What cannot be told is left
// out, not an error of the entry.
func (s *Server) landState(ctx context.Context, ws workspace.Workspace, e *ListEntry) {
	if n, err := s.opts.Workspaces.ChangedFiles(ctx, ws.Path); err == nil {
		e.ChangedFiles = &n
	} else {
		s.log.Debug("count a workspace's changed files", slog.String("workspace", ws.Path), slog.Any("error", err))
	}
	if pf, err := s.opts.Workspaces.Preflight(ctx, ws.Path, workspace.MergeOptions{}); err == nil {
		clean := len(pf.Conflicts) == 0
		e.MergesCleanly = &clean
	} else {
		s.log.Debug("preflight a workspace's merge", slog.String("workspace", ws.Path), slog.Any("error", err))
	}
}

// listEntry reads one workspace for workspace_list; what it cannot read
// goes into the entry's error, so that one broken worktree does not hide
// the others.
func (s *Server) listEntry(ctx context.Context, who caller, ws workspace.Workspace) ListEntry {
	e := ListEntry{Name: ws.Name, Branch: ws.Branch, Path: ws.Path, ProjectPath: ws.ProjectPath}
	st, err := s.opts.Workspaces.Status(ctx, ws.Path)
	if err != nil {
		e.Error = err.Error()
	}
	e.IsDirty, e.Base, e.Ahead, e.Behind, e.Agent = st.IsDirty, st.Base, st.Ahead, st.Behind, st.Agent
	md, err := s.opts.Workspaces.Metadata(ctx, ws.Path)
	if err != nil && e.Error == "" {
		e.Error = err.Error()
	}
	e.CreatedBy = md[workspace.MetadataCreatedBy]
	if !who.isUser() && (e.CreatedBy == "" || !samePath(e.CreatedBy, who.ws.Path)) {
		// What another agent is asked (a command, a question) is its
		// parent's and the user's business; the count says enough.
		e.Agent.Requests = nil
		return e
	}
	e.PR = md[workspace.MetadataPR]
	s.landState(ctx, ws, &e)
	if s.opts.Reviews != nil {
		if all := s.opts.Reviews.Reviews(ws.Path); len(all) > 0 {
			e.Review = &all[len(all)-1]
		}
	}
	ag := s.opts.Sessions
	if ag == nil {
		return e
	}
	if d, ok := ag.PromptDelivery(ws.Path); ok {
		e.Prompt = &d
	}
	if e.Agent.State != workspace.AgentStateReady {
		return e
	}
	text, cut, err := ag.LastReply(ctx, ws.Path)
	switch {
	case err != nil:
		s.log.Debug("read an agent's last reply", slog.String("workspace", ws.Path), slog.Any("error", err))
		if e.Error == "" {
			e.Error = "cannot read the agent's last reply: " + err.Error()
		}
	case text != "":
		e.LastReply = &LastReply{Text: text, Truncated: cut}
	}
	return e
}

func agentSessionTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolAgentSession,
			Title: "Get your agent's session",
			Description: "Returns the port of your own agent's OpenCode server on 127.0.0.1 and the ID of its current " +
				"session (the one updated last): {\"port\":n,\"sessionId\":\"ses_…\"}, each null when there is none; a hibernated " +
				"agent is woken first.",
			Annotations: readOnly(),
		},
		handler:        typed((*Server).getAgentSession),
		needsWorkspace: true,
	}
}

func (s *Server) getAgentSession(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, agentSessionOutput, error) {
	ws := callerWorkspace(ctx)
	var out agentSessionOutput
	if err := s.wakeIfHibernated(ctx, ws.Path); err != nil {
		return nil, agentSessionOutput{}, fail(err)
	}
	if s.opts.Agents != nil {
		if port, ok := s.opts.Agents.OpencodePort(ws.Path); ok && port > 0 {
			out.Port = &port
		}
	}
	if out.Port == nil || s.opts.Sessions == nil {
		return nil, out, nil
	}
	id, err := s.opts.Sessions.CurrentSession(ctx, ws.Path)
	if err != nil {
		return nil, agentSessionOutput{}, fail(workspace.Errorf(workspace.CodeInternal, "read your agent's sessions: %v", err))
	}
	if id != "" {
		out.SessionID = &id
	}
	return nil, out, nil
}

func restartAgentTool() toolDef {
	return toolDef{
		tool: &sdk.Tool{
			Name:  ToolRestartAgent,
			Title: "Restart your agent",
			Description: "Restarts your own agent (the OpenCode server you run in), e.g. to pick up a changed opencode " +
				"config. It answers {\"restarting\":true} first; the restart then ends this turn, and the conversation " +
				"continues in the restarted server. A hibernated agent is woken instead, and the answer waits until it is ready. Only call it when the user asked for it or a config change needs it.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)},
		},
		handler:        typed((*Server).restartAgent),
		needsWorkspace: true,
	}
}

// restartAgent answers first and restarts after: the agent restarted is
// the caller itself, whose connection the restart ends, so the restart
// waits until the HTTP response carrying this answer is flushed
// (afterResponse).
func (s *Server) restartAgent(ctx context.Context, req *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, restartOutput, error) {
	ws := callerWorkspace(ctx)
	if s.opts.Sessions == nil {
		return nil, restartOutput{}, fail(workspace.Errorf(workspace.CodeConflict, "CodeHydra runs no agents here, so there is none to restart"))
	}
	st, err := s.opts.Workspaces.Status(ctx, ws.Path)
	if err != nil {
		return nil, restartOutput{}, fail(err)
	}
	if st.Agent.State == workspace.AgentStateNone {
		return nil, restartOutput{}, fail(workspace.Errorf(workspace.CodeConflict, "the workspace %s has no agent to restart", ws.Path))
	}
	if st.Agent.State == workspace.AgentStateHibernated {
		// No connection of the caller runs on a hibernated agent: waking
		// it is the restart, and the answer waits for it.
		if err := s.wakeIfHibernated(ctx, ws.Path); err != nil {
			return nil, restartOutput{}, fail(err)
		}
		return nil, restartOutput{Restarting: true}, nil
	}
	s.afterResponse(requestHeader(req), func() {
		if err := s.opts.Sessions.Restart(ws.Path); err != nil {
			s.log.Warn("restart an agent on its own request", slog.String("workspace", ws.Path), slog.Any("error", err))
			return
		}
		s.log.Info("agent restarts on its own request", slog.String("workspace", ws.Path))
	})
	return nil, restartOutput{Restarting: true}, nil
}
