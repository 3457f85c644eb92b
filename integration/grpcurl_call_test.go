package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// grpcurlBin is the grpcurl `make tools` builds.
func grpcurlBin(t *testing.T) string {
	t.Helper()
	g, err := filepath.Abs("../.bin/grpcurl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g); err != nil {
		t.Fatalf("grpcurl is built by `make tools` (make test does it): %v", err)
	}
	return g
}

// grpcurlEvents decodes grpcurl's output: one JSON object per message.
func grpcurlEvents(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var msgs []map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("grpcurl output is not JSON messages: %v\n%s", err, out)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func eventType(m map[string]any) string {
	ev, _ := m["event"].(map[string]any)
	s, _ := ev["type"].(string)
	return s
}

// TestGrpcurlCall: CallService/Call runs one call from grpcurl with its
// input as a JSON object and streams its events to its result, then
// closes; a permission request in it is answered with the option names
// the request lists; describe shows the proto's doc comments.
func TestGrpcurlCall(t *testing.T) {
	e := newEnv(t)
	g := grpcurlBin(t)
	// grpcurl runs grpcurl with flags, then the socket, then args.
	grpcurl := func(stdin string, flags []string, args ...string) ([]byte, error) {
		all := append(append([]string{"-plaintext", "-unix"}, flags...), e.socket)
		cmd := exec.Command(g, append(all, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		return cmd.CombinedOutput()
	}
	e.tackle("", "status") // the daemon runs
	file := filepath.Join(e.project, "notes.txt")
	if err := os.WriteFile(file, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(map[string]any{"cwd": e.project, "name": "Read", "input": map[string]any{"file_path": file, "limit": 1}})
	out, err := grpcurl(string(req), []string{"-d", "@"}, "tackle.v1.CallService/Call")
	if err != nil {
		t.Fatalf("grpcurl Call: %v\n%s", err, out)
	}
	msgs := grpcurlEvents(t, out)
	if len(msgs) < 2 || eventType(msgs[0]) != "turn_started" || eventType(msgs[len(msgs)-1]) != "call_result" {
		t.Fatalf("Call's messages: %s", out)
	}
	last, _ := msgs[len(msgs)-1]["event"].(map[string]any)
	res, _ := last["result"].(map[string]any)
	if res["status"] != "completed" || !strings.Contains(string(out), "one") || strings.Contains(string(out), "two") {
		t.Errorf("Call's result: %s", out)
	}

	// A call that asks: the stream shows the request, another grpcurl
	// answers it with an option's names copied from it, the stream ends
	// with the result.
	target := filepath.Join(e.project, "from-grpcurl.txt")
	req, _ = json.Marshal(map[string]any{"cwd": e.project, "name": "Write", "input": map[string]any{"file_path": target, "content": "hi\n"}, "permission_timeout_seconds": 60})
	cmd := exec.Command(g, "-plaintext", "-unix", "-d", "@", e.socket, "tackle.v1.CallService/Call")
	cmd.Stdin = bytes.NewReader(req)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// grpcurl ends a message's line only when the next one comes: decode
	// the stream, not its lines.
	type callMsg struct {
		Event struct {
			Type       string `json:"type"`
			SessionID  string `json:"sessionId"`
			Permission struct {
				RequestID string `json:"requestId"`
				Preview   string `json:"preview"`
				Options   []struct {
					Option string `json:"option"`
					Scope  string `json:"scope"`
				} `json:"options"`
			} `json:"permission"`
			Result struct {
				Status string `json:"status"`
			} `json:"result"`
		} `json:"event"`
	}
	dec := json.NewDecoder(stdout)
	var sessionID, requestID, option, scope string
	var seen []string
	for requestID == "" {
		var m callMsg
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("reading Call's stream: %v (after %v)", err, seen)
		}
		seen = append(seen, m.Event.Type)
		if m.Event.Type != "permission_requested" {
			continue
		}
		sessionID, requestID = m.Event.SessionID, m.Event.Permission.RequestID
		if !strings.Contains(m.Event.Permission.Preview, "+hi") {
			t.Errorf("the request's preview: %q", m.Event.Permission.Preview)
		}
		for _, o := range m.Event.Permission.Options {
			if o.Option == "allow_always" && o.Scope == "SCOPE_SESSION" {
				option, scope = o.Option, o.Scope
			}
		}
	}
	if requestID == "" || option == "" {
		t.Fatalf("no allow_always option for the session in the request (events %v)", seen)
	}
	answer, _ := json.Marshal(map[string]any{"answer": map[string]any{"session_id": sessionID, "request_id": requestID, "option": option, "scope": scope}})
	if out, err := grpcurl(string(answer), []string{"-d", "@"}, "tackle.v1.TackleService/AnswerPermission"); err != nil || !strings.Contains(string(out), `"accepted": true`) {
		t.Fatalf("AnswerPermission with the option's names: %v\n%s", err, out)
	}
	rest := make(chan []string, 1)
	go func() {
		var types []string
		for {
			var m callMsg
			if err := dec.Decode(&m); err != nil {
				break // the stream closed
			}
			types = append(types, m.Event.Type+" "+m.Event.Result.Status)
		}
		rest <- types
	}()
	select {
	case types := <-rest:
		if len(types) == 0 || types[len(types)-1] != "call_result completed" || !slices.Contains(types, "permission_resolved ") {
			t.Errorf("after the answer: %v", types)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the Call stream did not close after its result")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("grpcurl Call: %v", err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\n" {
		t.Errorf("the allowed Write: %q, %v", b, err)
	}

	// describe shows the proto's doc comments.
	out, err = grpcurl("", nil, "describe", "tackle.v1.CallService")
	if err != nil || !strings.Contains(string(out), "runs one tool call") {
		t.Errorf("grpcurl describe CallService: %v\n%s", err, out)
	}
	out, err = grpcurl("", nil, "describe", "tackle.v1.PermissionAnswer")
	if err != nil || !strings.Contains(string(out), "option") {
		t.Errorf("grpcurl describe PermissionAnswer: %v\n%s", err, out)
	}
}
