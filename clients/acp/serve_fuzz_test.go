package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"google.golang.org/grpc"

	"github.com/tackle-agent/tackle/clients/acp"
	"github.com/tackle-agent/tackle/clients/client"
	"github.com/tackle-agent/tackle/daemon/socket"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// stubDaemon implements no RPC (Unimplemented): a fuzzed session/new,
// load or prompt reaches the client and fails there, doing nothing.
type stubDaemon struct {
	tacklev1.UnimplementedTackleServiceServer
}

// notifyingBuffer is stdout: it wakes a waiter at every write.
type notifyingBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func (n *notifyingBuffer) Write(p []byte) (int, error) {
	n.mu.Lock()
	n.b.Write(p)
	n.mu.Unlock()
	select {
	case n.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (n *notifyingBuffer) Bytes() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return bytes.Clone(n.b.Bytes())
}

// inbound is how acp-go-sdk reads a line (its anyMessage).
type inbound struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      *json.RawMessage  `json:"id,omitempty"`
	Method  string            `json:"method,omitempty"`
	Params  json.RawMessage   `json:"params,omitempty"`
	Result  json.RawMessage   `json:"result,omitempty"`
	Error   *sdk.RequestError `json:"error,omitempty"`
}

// FuzzServe runs the ACP agent over the input as the editor's stdin,
// against a daemon that implements nothing. Each line that is not JSON is
// answered by one parse error (id null); each request the protocol
// library reads (an id and a method) by exactly one answer with its id, a
// result or an error; nothing else is written but JSON-RPC 2.0 lines;
// the agent ends once stdin ends.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[{"name":"s","command":"srv","args":["a"],"env":[{"name":"K","value":"V"}]},{"type":"http","name":"h","url":"https://x/mcp","headers":[]}]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"s1","cwd":"/tmp","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":6,"method":"session/set_mode","params":{"sessionId":"s1","modeId":"plan"}}`,
		`{"jsonrpc":"2.0","id":"x","method":"session/list","params":{}}`, `{"jsonrpc":"2.0","id":9,"method":"session/close","params":{"sessionId":"s1"}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":7,"method":"no/such_method","params":{}}`, `{"jsonrpc":"2.0","id":10,"method":"_tackle/ext","params":{}}`,
		`{"jsonrpc":"2.0","id":11,"result":{}}`, `{"jsonrpc":"2.0","id":12,"method":"session/resume","params":{"sessionId":"s1","cwd":"/"}}`,
		"{this is not json", `[1,2]`, `5`, `{"id":{"a":1},"method":"initialize"}`, `{"id":1,"method":5}`, ``,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n\r\n",
	} {
		f.Add([]byte(s))
	}
	dir, err := os.MkdirTemp("", "tkfz")
	if err != nil {
		f.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := socket.Listen(sock)
	if err != nil {
		f.Fatal(err)
	}
	srv := grpc.NewServer()
	tacklev1.RegisterTackleServiceServer(srv, stubDaemon{})
	go srv.Serve(ln)
	c, err := client.Dial(context.Background(), &client.Options{Socket: sock, NoAutostart: true, ClientName: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		c.Close()
		srv.Stop()
		os.RemoveAll(dir)
	})
	stateDir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		// What the editor asked for, as the line filter and the protocol
		// library read the lines.
		wantIDs := map[string]int{}
		want, parseErrors := 0, 0
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			tl := bytes.TrimSpace(line)
			if len(tl) == 0 {
				continue
			}
			if !json.Valid(tl) {
				parseErrors++
				continue
			}
			var m inbound
			if json.Unmarshal(tl, &m) != nil || m.ID == nil || m.Method == "" {
				continue
			}
			wantIDs[canonicalID(t, *m.ID)]++
		}
		for _, n := range wantIDs {
			want += n
		}
		want += parseErrors

		inR, inW := io.Pipe()
		out := &notifyingBuffer{wrote: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			acp.Serve(ctx, acp.Options{Client: c, StateDir: stateDir, Log: io.Discard}, inR, out)
		}()
		go func() {
			inW.Write(data)
			inW.Write([]byte("\n"))
		}()
		answers := func() (ids map[string]int, parse, n int) {
			ids = map[string]int{}
			for _, line := range bytes.Split(out.Bytes(), []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var m inbound
				if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
					t.Fatalf("stdout line %q is not JSON-RPC 2.0: %v", line, err)
				}
				if m.Method != "" {
					continue // the agent's own notifications and requests
				}
				if (m.Result == nil) == (m.Error == nil) {
					t.Fatalf("answer %s: want a result or an error", line)
				}
				if m.ID == nil || string(*m.ID) == "null" {
					if m.Error == nil || m.Error.Code != -32700 {
						t.Fatalf("answer %s without an id", line)
					}
					parse++
				} else {
					ids[canonicalID(t, *m.ID)]++
				}
				n++
			}
			return ids, parse, n
		}
		deadline := time.After(10 * time.Second)
	wait:
		for {
			if _, _, n := answers(); n >= want {
				break
			}
			select {
			case <-out.wrote:
			case <-deadline:
				break wait
			}
		}
		inW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not end after stdin ended")
		}
		ids, parse, _ := answers()
		if parse != parseErrors {
			t.Fatalf("%d parse errors, want %d\nstdout:\n%s", parse, parseErrors, out.Bytes())
		}
		if !reflect.DeepEqual(ids, wantIDs) {
			t.Fatalf("answers by id %v, want %v\nstdout:\n%s", ids, wantIDs, out.Bytes())
		}
	})
}

// canonicalID is an id's canonical JSON, so equal ids compare equal.
func canonicalID(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("id %q: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
