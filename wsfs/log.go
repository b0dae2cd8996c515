package wsfs

import (
	"context"
	"strconv"
	"strings"
)

// Commit is one commit of the workspace's history.
type Commit struct {
	Hash    string `json:"hash" jsonschema:"abbreviated commit hash"`
	Author  string `json:"author" jsonschema:"author name"`
	Date    string `json:"date" jsonschema:"author date, RFC 3339"`
	Subject string `json:"subject" jsonschema:"first line of the message"`
}

// Log returns the last n commits of HEAD, newest first.
func (f *FS) Log(ctx context.Context, n int) ([]Commit, error) {
	out, err := f.git(ctx, "log", "-n", strconv.Itoa(n), "--no-color", "--format=%h%x00%an%x00%aI%x00%s%x00")
	if err != nil {
		return nil, err
	}
	var commits []Commit
	fields := strings.Split(out, "\x00")
	for i := 0; i+3 < len(fields); i += 4 {
		commits = append(commits, Commit{
			Hash: strings.TrimSpace(fields[i]), Author: fields[i+1], Date: fields[i+2], Subject: fields[i+3],
		})
	}
	return commits, nil
}
