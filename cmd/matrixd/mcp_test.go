package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPOverStdio starts matrixd mcp as an agent would, talks to it with
// the SDK's client over its stdin and stdout, and hangs up: the command
// then ends without an error.
func TestMCPOverStdio(t *testing.T) {
	db := seededDB(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	var stderr syncBuffer
	go func() {
		err := run(context.Background(), []string{"mcp", "--db", db}, env(nil), inR, outW, &stderr)
		outW.Close()
		done <- err
	}()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "planCapacity") {
		t.Errorf("tools %v lack planCapacity", names)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "getLeaderboard", Arguments: map[string]any{"context_tokens": 16384, "concurrency": 8}})
	if err != nil {
		t.Fatal(err)
	}
	var board struct {
		Items []struct {
			Cell struct {
				TotalTokS float64 `json:"total_tok_s"`
			} `json:"cell"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(res.Content[1].(*mcp.TextContent).Text), &board); err != nil || res.IsError {
		t.Fatalf("getLeaderboard: %v %v", err, res.Content)
	}
	if len(board.Items) != 2 || board.Items[0].Cell.TotalTokS != 427.5 {
		t.Errorf("leaderboard at 16K × 8: %+v, want the RTX 3090 run first at 427.5 tok/s", board.Items)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "getRun", Arguments: map[string]any{"run_id": "nosuchrun0000000"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "404") || !strings.Contains(text, "nosuchrun0000000") {
		t.Errorf("getRun of no run: error %v, %q", res.IsError, text)
	}

	cs.Close()
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("matrixd mcp after the agent hung up: %v\n%s", err, stderr.String())
	}
}
