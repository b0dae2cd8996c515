package testenv

import (
	"path/filepath"
	"testing"
)

// BareRemote makes a bare repository in a new temp folder, adds it to the
// repository at repo as the remote name, pushes repo's main there and
// fetches it back (so that <name>/main exists), and returns the bare
// repository's path: a remote that pushes can reach without a network.
func BareRemote(t testing.TB, repo, name string) string {
	t.Helper()
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(parent, name+".git")
	Git(t, "", "init", "-q", "--bare", "-b", "main", bare)
	Git(t, repo, "remote", "add", name, bare)
	Git(t, repo, "push", "-q", name, "main")
	Git(t, repo, "fetch", "-q", name)
	return bare
}
