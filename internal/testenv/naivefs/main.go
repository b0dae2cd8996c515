// Command naivefs is an MCP server on stdio for tests that reads and
// writes whatever path it is given, relative to its working folder,
// with no check of its own: a server with the bug that a kernel sandbox
// must contain. Its tools are read_file {path} and write_file {path,
// content}; a refused access is the tool's error, with the system's
// words ("permission denied").
package main

import (
	"context"
	"log"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type readIn struct {
	Path string `json:"path"`
}

type writeIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type textOut struct {
	Text string `json:"text"`
}

func main() {
	s := sdk.NewServer(&sdk.Implementation{Name: "naivefs", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "read_file", Description: "read a file"},
		func(_ context.Context, _ *sdk.CallToolRequest, in readIn) (*sdk.CallToolResult, textOut, error) {
			b, err := os.ReadFile(in.Path)
			if err != nil {
				return nil, textOut{}, err
			}
			return nil, textOut{Text: string(b)}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "write_file", Description: "write a file"},
		func(_ context.Context, _ *sdk.CallToolRequest, in writeIn) (*sdk.CallToolResult, textOut, error) {
			if err := os.WriteFile(in.Path, []byte(in.Content), 0o644); err != nil {
				return nil, textOut{}, err
			}
			return nil, textOut{Text: "written"}, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
