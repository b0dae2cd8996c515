package paths

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/windows"
)

// With no XDG_* variable set, every folder of CodeHydra's is one
// codehydra folder in the user's local application data (%LOCALAPPDATA%,
// as the system names it: docs/DESIGN.md, "Base folders per system"), and
// a variable that is set wins.
func TestTheFoldersAreUnderLocalAppData(t *testing.T) {
	local, err := windows.KnownFolderPath(windows.FOLDERID_LocalAppData, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	Reload()
	t.Cleanup(Reload)
	dir := filepath.Join(local, "codehydra")
	for name, got := range map[string]string{
		"SettingsFile": SettingsFile(), "TokenFile": TokenFile(), "LogFile": LogFile(),
		"InstanceFile": InstanceFile(), "LockFile": LockFile(), "ToolsDir": ToolsDir(),
	} {
		if filepath.Dir(got) != dir {
			t.Errorf("%s = %s, want it in %s", name, got, dir)
		}
	}
	if got := RuntimeDir(); got != dir {
		t.Errorf("RuntimeDir = %s, want %s", got, dir)
	}

	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	Reload()
	if got, want := TokenFile(), filepath.Join(state, "codehydra", "token"); got != want {
		t.Errorf("TokenFile with XDG_STATE_HOME set = %s, want %s", got, want)
	}
}
