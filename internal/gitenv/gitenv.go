// Package gitenv is the environment of every git that CodeHydra runs:
// one in which git runs none of the repository's own code and is not
// pointed at another repository than its working folder's. The workspace
// manager's git and the copy of a new worktree's untracked files both
// start from it.
package gitenv

import (
	"os"
	"strings"
)

// safeConfig keeps a git that CodeHydra runs from running code of the
// repository's: no fsmonitor daemon or hook (a hook or core.hooksPath an
// agent committed or wrote, e.g. a relative core.hooksPath such as
// husky's, would otherwise run outside any sandbox the next time
// CodeHydra runs git); no repository found as a bare one in a folder (an
// agent that took its workspace's .git away could otherwise make the
// workspace itself a git folder of its making); no look into the work
// trees of submodules, whose .git files are in the workspace and could
// lead git to a config with filters of the agent's (their commits still
// count). Given in the environment (GIT_CONFIG_COUNT, as -c would give
// them), they win over every config file and reach the git processes git
// itself starts.
var safeConfig = []string{
	"GIT_CONFIG_COUNT=4",
	"GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=false",
	"GIT_CONFIG_KEY_1=core.hooksPath", "GIT_CONFIG_VALUE_1=" + os.DevNull,
	"GIT_CONFIG_KEY_2=safe.bareRepository", "GIT_CONFIG_VALUE_2=explicit",
	"GIT_CONFIG_KEY_3=diff.ignoreSubmodules", "GIT_CONFIG_VALUE_3=dirty",
}

// dropped reports variables not passed to git: those that would point git
// at another repository than the one named by the working folder (a
// CodeHydra started from a git hook inherits them) and those Env sets.
func dropped(name string) bool {
	switch name {
	case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
		"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
		"GIT_PREFIX", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
		"LC_ALL", "LANGUAGE", "GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS",
		"GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS":
		return true
	}
	return strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_")
}

// Env is base without the variables that would steer git elsewhere, plus
// the C locale (git's messages are parsed: lock files, "no such
// section"), no prompt for credentials, and the settings that keep the
// repository's code from running (safeConfig), then extra.
func Env(base []string, extra ...string) []string {
	env := make([]string, 0, len(base)+len(safeConfig)+len(extra)+2)
	for _, kv := range base {
		if name, _, _ := strings.Cut(kv, "="); !dropped(name) {
			env = append(env, kv)
		}
	}
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
	env = append(env, safeConfig...)
	return append(env, extra...)
}
