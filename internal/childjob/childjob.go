// Package childjob makes the processes CodeHydra starts (agents, the
// gateway's stdio servers) end with it on systems where nothing else does.
// On Linux the kernel's parent-death signal does that (see opencode's and
// the gateway's spawners), so Contain does nothing there; on Windows it puts
// the process in a job object that is ended when CodeHydra exits, however it
// exits.
package childjob
