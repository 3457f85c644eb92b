package bridge_test

import (
	"bufio"
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

	"google.golang.org/grpc"

	"github.com/tackle-agent/tackle/clients/bridge"
	"github.com/tackle-agent/tackle/clients/client"
	"github.com/tackle-agent/tackle/daemon/socket"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// stubDaemon answers Attach with a welcome and discards what the client
// sends; every other RPC is Unimplemented. A fuzzed line can so reach
// every method and do nothing.
type stubDaemon struct {
	tacklev1.UnimplementedTackleServiceServer
}

func (stubDaemon) Attach(st grpc.BidiStreamingServer[tacklev1.ClientMessage, tacklev1.ServerMessage]) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	w := &tacklev1.Welcome{ProtocolVersion: client.ProtocolVersion, DaemonVersion: "fuzz", ClientId: "c1", Role: tacklev1.Role_ROLE_CONTROLLER}
	if err := st.Send(&tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_Welcome{Welcome: w}}); err != nil {
		return err
	}
	for {
		if _, err := st.Recv(); err != nil {
			return nil
		}
	}
}

// startStub serves a stubDaemon on a socket in a short temp dir.
func startStub(f *testing.F) string {
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
	f.Cleanup(func() {
		srv.Stop()
		os.RemoveAll(dir)
	})
	return sock
}

// lockedBuffer is stdout, written by the bridge's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// FuzzBridgeLines runs Serve over the input as stdin, against a daemon
// that implements nothing: every line is decoded as a JSON-RPC request
// and goes as far as it can (a unary RPC, an attach/* message). stdout
// carries protocol lines only, each a JSON-RPC 2.0 object; a line that is
// not a request gets one parse error (id null); a request with an id gets
// exactly one answer with that id, a result or an error; a notification
// (no id, or null) gets none; Serve returns once stdin ends.
func FuzzBridgeLines(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tackle.v1.TackleService/Status"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tackle.v1.TackleService/ListSessions","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tackle.v1.TackleService/CreateSession","params":{"cwd":"/tmp","env":[],"mcpConfig":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tackle.v1.TackleService/ListTools","params":[]}`,
		`{"jsonrpc":"2.0","id":4,"method":"attach/subscribe","params":{"sessionId":"s1","fromSeq":"5"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"attach/runBatch","params":{"sessionId":"s1","calls":[{"id":"c1","name":"Read","inputJson":"{}"}]}}`,
		`{"jsonrpc":"2.0","id":6,"method":"attach/permissionAnswer","params":{"requestId":"r","option":"allow_once"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"attach/hello","params":{}}`, `{"jsonrpc":"2.0","id":8,"method":"attach/nope"}`,
		`{"jsonrpc":"2.0","method":"tackle.v1.TackleService/Status"}`, `{"jsonrpc":"2.0","id":null,"method":"attach/cancel","params":{}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tackle.v1.TackleService/Nope"}`, `{"jsonrpc":"2.0","id":10,"method":"tackle.v1.TackleService/GetSession","params":{"sessionId":5}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tackle.v1.AgentService/Prompt","params":{"sessionId":"s","text":"hi","images":[{"data":"AAEC"}]}}`,
		`{"id":{"a":1},"method":"x"}`, `{"id":1e400,"method":"x"}`, `{"id":[],"method":""}`, `not json`, `[]`, `{}`, `null`, `"x"`, ``,
		"{\"id\":1,\"method\":\"tackle.v1.TackleService/Status\"}\r\n\r\n{\"id\":1,\"method\":\"tackle.v1.TackleService/Status\"}\n{",
	} {
		f.Add([]byte(s))
	}
	sock := startStub(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var out lockedBuffer
		dial := func(ctx context.Context) (*client.Client, error) {
			return client.Dial(ctx, &client.Options{Socket: sock, NoAutostart: true, ClientName: "fuzz"})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		if err := bridge.Serve(ctx, bridge.Options{Dial: dial, Log: io.Discard}, bytes.NewReader(data), &out); err != nil && err != bufio.ErrTooLong {
			t.Fatalf("Serve: %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("Serve took %v after stdin ended", d)
		}

		// What each line asks for, as JSON-RPC reads it.
		wantIDs := map[string]int{} // canonical id → answers expected
		parseErrors := 0
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &req) != nil || req.Method == "" {
				parseErrors++
				continue
			}
			if len(req.ID) > 0 && string(req.ID) != "null" {
				wantIDs[canonical(t, req.ID)]++
			}
		}

		gotIDs := map[string]int{}
		gotParseErrors := 0
		for _, line := range bytes.Split([]byte(out.String()), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var m struct {
				JSONRPC string           `json:"jsonrpc"`
				ID      *json.RawMessage `json:"id"`
				Method  string           `json:"method"`
				Result  json.RawMessage  `json:"result"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
				t.Fatalf("stdout line %q is not JSON-RPC 2.0: %v", line, err)
			}
			if m.Method != "" {
				continue // a notification: welcome, disconnected, ...
			}
			if (m.Result == nil) == (m.Error == nil) {
				t.Fatalf("answer %s: want a result or an error", line)
			}
			if m.ID == nil || string(*m.ID) == "null" {
				if m.Error == nil || m.Error.Code != -32700 {
					t.Fatalf("answer %s without an id", line)
				}
				gotParseErrors++
				continue
			}
			gotIDs[canonical(t, *m.ID)]++
		}
		if gotParseErrors != parseErrors {
			t.Fatalf("%d parse errors, want %d\nstdout:\n%s", gotParseErrors, parseErrors, out.String())
		}
		if !reflect.DeepEqual(gotIDs, wantIDs) {
			t.Fatalf("answers by id %v, want %v\nstdout:\n%s", gotIDs, wantIDs, out.String())
		}
	})
}

// canonical is a JSON value's canonical text, so that an id compares
// equal however it was spelled.
func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("id %q: %v", raw, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("id %q: %v", raw, err)
	}
	return string(b)
}
