package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/clients/bridge"
	"github.com/tackle-agent/tackle/clients/client"
	"github.com/tackle-agent/tackle/daemon"
	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// peer is an editor on the other end of a bridge: it writes requests and
// reads every line, answers by id, notifications in order.
type peer struct {
	t     *testing.T
	in    *io.PipeWriter
	mu    sync.Mutex
	next  int
	waits map[string]chan map[string]any
	notes chan map[string]any
	bad   []string
	seqs  map[string][]uint64 // every event's seq, by session, as delivered
}

func startBridge(t *testing.T, socket string) *peer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	dial := func(ctx context.Context) (*client.Client, error) {
		return client.Dial(ctx, &client.Options{Socket: socket, NoAutostart: true, ClientName: "bridge-test"})
	}
	go func() {
		defer close(done)
		if err := bridge.Serve(ctx, bridge.Options{Dial: dial}, inR, outW); err != nil {
			t.Errorf("Serve: %v", err)
		}
		outW.Close()
	}()
	p := &peer{t: t, in: inW, waits: map[string]chan map[string]any{}, notes: make(chan map[string]any, 4096), seqs: map[string][]uint64{}}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
				p.mu.Lock()
				p.bad = append(p.bad, sc.Text())
				p.mu.Unlock()
				continue
			}
			if m["method"] != nil {
				if m["method"] == "event" {
					e := m["params"].(map[string]any)
					n, _ := strconv.ParseUint(fmt.Sprint(e["seq"]), 10, 64)
					p.mu.Lock()
					sid := fmt.Sprint(e["sessionId"])
					p.seqs[sid] = append(p.seqs[sid], n)
					p.mu.Unlock()
				}
				p.notes <- m
				continue
			}
			id := fmt.Sprint(m["id"])
			p.mu.Lock()
			ch := p.waits[id]
			p.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		<-done
		if len(p.bad) > 0 {
			t.Errorf("stdout held lines that are not JSON-RPC: %q", p.bad)
		}
	})
	return p
}

// call sends a request (params as raw JSON) and returns the answer.
func (p *peer) call(method, params string) map[string]any {
	p.t.Helper()
	p.mu.Lock()
	p.next++
	id := strconv.Itoa(p.next)
	ch := make(chan map[string]any, 1)
	p.waits[id] = ch
	p.mu.Unlock()
	fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`+"\n", id, method, params)
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		p.t.Fatalf("no answer to %s", method)
		return nil
	}
}

// note waits for the next notification named method.
func (p *peer) note(method string) map[string]any {
	p.t.Helper()
	for {
		select {
		case m := <-p.notes:
			if m["method"] == method {
				return m["params"].(map[string]any)
			}
		case <-time.After(30 * time.Second):
			p.t.Fatalf("no %s notification", method)
			return nil
		}
	}
}

func result(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	if m["error"] != nil {
		t.Fatalf("error: %v", m["error"])
	}
	r, _ := m["result"].(map[string]any)
	return r
}

// Every unary method of the API answers through the bridge (a result, or
// tackled's own error with its gRPC code — never "method not found"), and
// --describe lists them with their schemas.
func TestEveryMethodReachable(t *testing.T) {
	d := daemontest.Start(t)
	p := startBridge(t, d.Socket())
	var buf bytes.Buffer
	if err := bridge.Describe(&buf); err != nil {
		t.Fatal(err)
	}
	var desc struct {
		Methods []struct {
			Name, Kind string
			Params     map[string]any
		}
		Notifications []struct{ Name string }
		Defs          map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &desc); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, n := range desc.Notifications {
		notes = append(notes, n.Name)
	}
	// Event batches come as their events: no notification of their own.
	if !slices.Contains(notes, "event") || slices.Contains(notes, "events") {
		t.Errorf("notifications described: %v", notes)
	}
	unary := 0
	for _, m := range desc.Methods {
		if m.Kind != "unary" {
			continue
		}
		unary++
		if m.Name == "tackle.v1.TackleService/Shutdown" {
			continue // it would end the test's daemon
		}
		ans := p.call(m.Name, "{}")
		if e, ok := ans["error"].(map[string]any); ok {
			data, _ := e["data"].(map[string]any)
			if e["code"].(float64) != -32000 || data["grpcCode"] == nil || data["grpcCode"] == "Unimplemented" {
				t.Errorf("%s: %v", m.Name, e)
			}
		} else if ans["result"] == nil {
			t.Errorf("%s: no result: %v", m.Name, ans)
		}
	}
	if unary < 30 {
		t.Errorf("%d unary methods described", unary)
	}
	sess, ok := desc.Defs["tackle.v1.Session"].(map[string]any)
	if !ok || sess["properties"].(map[string]any)["lastSeq"].(map[string]any)["type"] != "string" {
		t.Errorf("Session's schema (lastSeq a 64-bit integer, as a string): %v", sess)
	}
	if ans := p.call("no.such/Method", "{}"); ans["error"].(map[string]any)["code"].(float64) != -32601 {
		t.Errorf("an unknown method: %v", ans)
	}
}

// [] is taken as {} where an object is expected; 64-bit integers are
// strings; a malformed line gets a parse error and the bridge goes on;
// the Attach stream's messages arrive as notifications.
func TestEncodingsAndTheStream(t *testing.T) {
	d := daemontest.Start(t)
	p := startBridge(t, d.Socket())
	if r := result(t, p.call("tackle.v1.TackleService/Status", "[]")); r["version"] != "test" {
		t.Errorf("Status with []: %v", r)
	}
	dir := t.TempDir()
	r := result(t, p.call("tackle.v1.TackleService/CreateSession", fmt.Sprintf(`{"cwd":%q,"env":[]}`, dir)))
	id := r["session"].(map[string]any)["id"].(string)

	fmt.Fprintln(p.in, "{not json")
	if ans := p.call("tackle.v1.TackleService/GetSession", fmt.Sprintf(`{"id":%q}`, id)); ans["error"] != nil {
		t.Errorf("after a malformed line: %v", ans)
	}
	result(t, p.call("attach/subscribe", fmt.Sprintf(`{"sessionId":%q,"liveOnly":true}`, id)))
	p.note("snapshot")
	file := filepath.Join(dir, "a.txt")
	os.WriteFile(file, []byte("hello\n"), 0o644)
	in, _ := json.Marshal(map[string]string{"file_path": file})
	result(t, p.call("attach/runBatch", fmt.Sprintf(`{"sessionId":%q,"ref":"r1","calls":[{"id":"c1","name":"Read","inputJson":%q}]}`, id, in)))
	for {
		e := p.note("event")
		if _, ok := e["seq"].(string); !ok {
			t.Fatalf("seq is not a string: %v", e)
		}
		if e["type"] == "call_result" {
			if txt := fmt.Sprint(e["result"]); !strings.Contains(txt, "hello") {
				t.Errorf("the result: %s", txt)
			}
			break
		}
	}
}

// A daemon killed and restarted mid-stream: the bridge reconnects,
// subscribes again from the last event it delivered, says so, and no event
// is lost or delivered twice.
func TestDaemonRestart(t *testing.T) {
	d1 := daemontest.Start(t)
	p := startBridge(t, d1.Socket())
	dir := t.TempDir()
	r := result(t, p.call("tackle.v1.TackleService/CreateSession", fmt.Sprintf(`{"cwd":%q}`, dir)))
	id := r["session"].(map[string]any)["id"].(string)
	result(t, p.call("attach/subscribe", fmt.Sprintf(`{"sessionId":%q,"fromSeq":"1"}`, id)))
	p.note("snapshot")
	run := func(c tacklev1.TackleServiceClient, n int) {
		t.Helper()
		for i := range n {
			in, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("echo %d", i)})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			st, err := c.Attach(ctx)
			if err != nil {
				t.Fatal(err)
			}
			st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "driver"}}})
			st.Recv()
			st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id, LiveOnly: true}}})
			st.Recv() // the snapshot
			st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{SessionId: id, Ref: "x", PermissionMode: "bypassPermissions",
				Calls: []*tacklev1.ToolCall{{Id: fmt.Sprintf("c%d", i), Name: "Bash", InputJson: string(in)}}}}})
			for {
				m, err := st.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if m.GetEvent().GetType() == "turn_ended" {
					break
				}
			}
			cancel()
		}
	}
	run(d1.Client(), 2)
	// Stop the first daemon; the second one serves the same state on the
	// same socket, and runs more calls before the bridge is back.
	if err := d1.Stop(); err != nil {
		t.Fatal(err)
	}
	d2 := daemontest.Start(t, daemontest.WithOptions(func(o *daemon.Options) {
		o.Socket, o.StateDir, o.Home, o.ConfigHome = d1.Socket(), d1.StateDir(), d1.Home(), d1.Options().ConfigHome
	}))
	run(d2.Client(), 2)
	p.note("reconnected")
	gs, err := d2.Client().GetSession(context.Background(), &tacklev1.GetSessionRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	last := gs.GetSession().GetLastSeq()
	// Every event 1..last arrived exactly once, in order.
	deadline := time.Now().Add(30 * time.Second)
	for {
		p.mu.Lock()
		got := append([]uint64(nil), p.seqs[id]...)
		p.mu.Unlock()
		if len(got) > 0 && got[len(got)-1] >= last {
			for i, s := range got {
				if s != uint64(i+1) {
					t.Fatalf("events delivered %v, want 1..%d once each", got, last)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events delivered %v, want 1..%d", got, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
