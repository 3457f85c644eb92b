package permission

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestInterimPolicy(t *testing.T) {
	readIn := tool.Access{Kind: tool.AccessRead, Paths: []string{"/w/a"}, InsideWorkingDirs: true}
	readOut := tool.Access{Kind: tool.AccessRead, Paths: []string{"/etc/passwd"}}
	editIn := tool.Access{Kind: tool.AccessEdit, Paths: []string{"/w/a"}, InsideWorkingDirs: true}
	editOut := tool.Access{Kind: tool.AccessEdit, Paths: []string{"/etc/x"}}
	exec := tool.Access{Kind: tool.AccessExec, Command: "rm -rf /"}
	net := tool.Access{Kind: tool.AccessNetwork, Command: "example.com"}
	ro := tool.Attributes{ReadOnly: true}
	rw := tool.Attributes{}
	inter := tool.Attributes{ReadOnly: true, Interactive: true}
	tests := []struct {
		mode   string
		attrs  tool.Attributes
		access tool.Access
		want   Verdict
		reason string // substring
	}{
		{"", ro, readIn, Allow, "read-only"},
		{"default", ro, tool.Access{}, Allow, ""},
		{"default", ro, readOut, Ask, "outside the working directories: /etc/passwd"},
		{"default", ro, net, Ask, "reach example.com"},
		{"default", rw, editIn, Ask, "change /w/a"},
		{"default", rw, exec, Ask, "run: rm -rf /"},
		{"acceptEdits", rw, editIn, Allow, "acceptEdits"},
		{"acceptEdits", rw, editOut, Ask, "outside"},
		{"acceptEdits", rw, exec, Ask, ""},
		{"plan", rw, editIn, Deny, "plan mode"},
		{"plan", ro, readIn, Allow, ""},
		{"plan", ro, readOut, Ask, ""},
		{"dontAsk", rw, editIn, Deny, "dontAsk"},
		{"dontAsk", ro, readIn, Allow, ""},
		{"bypassPermissions", rw, exec, Allow, ""},
		{"bypassPermissions", rw, editOut, Allow, ""},
		{"bypassPermissions", inter, tool.Access{}, Ask, "needs a person"},
		{"dontAsk", inter, tool.Access{}, Deny, "needs a person"},
	}
	p := NewInterimPolicy()
	for _, tc := range tests {
		d := p.Decide(context.Background(), Request{Tool: "T", Mode: tc.mode, Attrs: tc.attrs, Access: tc.access})
		if d.Verdict != tc.want || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("mode %q attrs %+v access %+v: got %s %q, want %s containing %q", tc.mode, tc.attrs, tc.access, d.Verdict, d.Reason, tc.want, tc.reason)
		}
	}
}

func TestBrokerFirstAnswerWins(t *testing.T) {
	b := NewBroker()
	ch, remove := b.Open("s1", event.PermissionRequest{RequestID: "r1", CallID: "c"})
	defer remove()
	if b.Answer("s2", "r1", Answer{Decision: AllowOnce}) {
		t.Error("answer for another session accepted")
	}
	if b.Answer("s1", "r1", Answer{Decision: "maybe"}) {
		t.Error("invalid decision accepted")
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.Answer("s1", "r1", Answer{Decision: DenyAnswer, ClientID: "x"}) {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d answers won, want 1", wins.Load())
	}
	if a := <-ch; a.Decision != DenyAnswer {
		t.Errorf("got %+v", a)
	}
	if len(b.Pending("s1")) != 0 {
		t.Error("an answered request is still pending")
	}
}

func TestBrokerPendingAndRemove(t *testing.T) {
	b := NewBroker()
	_, r1 := b.Open("s", event.PermissionRequest{RequestID: "a"})
	ch2, r2 := b.Open("s", event.PermissionRequest{RequestID: "b"})
	_, r3 := b.Open("other", event.PermissionRequest{})
	defer r3()
	var ids []string
	for _, p := range b.Pending("s") {
		ids = append(ids, p.RequestID)
	}
	if strings.Join(ids, ",") != "a,b" {
		t.Errorf("pending %v, want a,b (oldest first)", ids)
	}
	if p := b.Pending("other"); len(p) != 1 || !strings.HasPrefix(p[0].RequestID, "perm_") {
		t.Errorf("empty id not filled: %+v", p)
	}
	r1()
	r1() // idempotent
	if b.Answer("s", "a", Answer{Decision: AllowOnce}) {
		t.Error("answer after remove accepted")
	}
	// An answer accepted just before removal is still in the channel.
	if !b.Answer("s", "b", Answer{Decision: AllowAlways, Scope: "session"}) {
		t.Fatal("answer refused")
	}
	r2()
	select {
	case a := <-ch2:
		if a.Decision != AllowAlways {
			t.Errorf("got %+v", a)
		}
	default:
		t.Error("accepted answer lost by remove")
	}
	if len(b.Pending("s")) != 0 {
		t.Error("requests left after remove")
	}
}

func TestValidMode(t *testing.T) {
	for _, m := range Modes {
		if !ValidMode(m) {
			t.Errorf("%s not valid", m)
		}
	}
	if ValidMode("auto") || ValidMode("") {
		t.Error("unknown mode valid")
	}
}
