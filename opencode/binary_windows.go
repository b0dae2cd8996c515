package opencode

import "path/filepath"

// On Windows npm puts opencode.cmd into node_modules/.bin (and, for
// `npm install -g`, into %APPDATA%\npm, on PATH): a batch file that runs
// the package's bin/opencode.exe. Go's os/exec runs a .cmd, but through
// cmd.exe, which parses the command line by its own rules that Go does not
// quote for (a path with & or ^ in it would break), and as one more
// process. So CodeHydra runs the opencode.exe the shim names when it is
// where npm's layout puts it, and the .cmd itself only otherwise; the
// arguments it passes (serve --hostname 127.0.0.1 --port N) hold nothing
// cmd.exe would treat specially.

// toolsBinary is where npm (`make run`) puts opencode under toolsDir.
func toolsBinary(toolsDir string) string {
	return nativeBinary(filepath.Join(toolsDir, "node_modules", ".bin", "opencode.cmd"))
}

// nativeBinary is npmShimTarget(path).
func nativeBinary(path string) string { return npmShimTarget(path) }
