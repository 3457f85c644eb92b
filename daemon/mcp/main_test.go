package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// testServerEnv makes the test binary act as a small MCP server (see
// runTestServer) instead of running the tests.
const testServerEnv = "TACKLE_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if kind := os.Getenv(testServerEnv); kind != "" {
		if err := runTestServer(kind); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runTestServer serves one kind of test server over stdio:
//
//	good    an "echo" tool and a "broken" tool whose input schema is invalid
//	junk    like good, but prints junk lines to stdout, before serving and in every call
//	silent  reads stdin and never answers
//	once    serves while $TACKLE_MCP_TEST_GATE contains "ok" or does not exist
//	        yet (then it creates it with "crash"); otherwise exits 3 at once
func runTestServer(kind string) error {
	switch kind {
	case "silent":
		fmt.Fprintln(os.Stderr, "silent server: never answering")
		_, err := io.Copy(io.Discard, os.Stdin)
		if err != nil {
			return err
		}
		select {} // stdin closed: still never answer, wait to be killed
	case "once":
		gate := os.Getenv("TACKLE_MCP_TEST_GATE")
		b, err := os.ReadFile(gate)
		switch {
		case os.IsNotExist(err):
			if err := os.WriteFile(gate, []byte("crash"), 0o600); err != nil {
				return err
			}
		case err != nil:
			return err
		case strings.TrimSpace(string(b)) != "ok":
			fmt.Fprintln(os.Stderr, "once server: refusing to start again")
			os.Exit(3)
		}
	}
	junk := kind == "junk"
	if junk {
		fmt.Println("Welcome to the junk server! (this is not JSON)")
		fmt.Println("{not json either")
	}
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "testserver-" + kind, Version: "1.0"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "echo", Description: "Echoes text."},
		func(ctx context.Context, req *mcpsdk.CallToolRequest, in echoIn) (*mcpsdk.CallToolResult, any, error) {
			if junk {
				fmt.Println("junk during a call")
			}
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	s.AddTool(&mcpsdk.Tool{
		Name:        "broken",
		Description: "A tool whose input schema is not a valid JSON Schema.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":12,"minimum":"nope"}},"required":"x"}`),
	}, func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "broken called"}}}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return s.Run(ctx, &mcpsdk.StdioTransport{})
}
