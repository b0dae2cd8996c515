package workspace

// Endpoint is a TCP port that one of a workspace's processes listens on,
// reachable at 127.0.0.1: a dev server to open in the browser.
type Endpoint struct {
	Port int `json:"port" jsonschema:"the TCP port"`
	// URL is http://127.0.0.1:<port>.
	URL string `json:"url" jsonschema:"http://127.0.0.1:<port>, to open in a browser"`
	Pid int    `json:"pid" jsonschema:"the process that listens on it"`
	// Command is the process's command line, cut to 200 bytes; "" when it
	// cannot be read.
	Command string `json:"command" jsonschema:"the listening process's command line (cut to 200 bytes)"`
	// Source says whose process it is: "agent" (a child of the workspace's
	// agent) or "task:<name>" (a background run of that task).
	Source string `json:"source" jsonschema:"agent (a process the workspace's agent started) or task:<name> (a background run of that task)"`
}

// SourceAgent is the Source of an endpoint of the agent's children.
const SourceAgent = "agent"
