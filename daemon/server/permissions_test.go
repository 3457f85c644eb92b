package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// firstRequest runs calls on a fresh controller subscribed to id and
// returns the controller, the turn and the first permission request.
func firstRequest(t *testing.T, d *daemontest.Daemon, id, name string, calls ...*tacklev1.ToolCall) (*client, string, *tacklev1.PermissionRequest) {
	t.Helper()
	c := attach(t, d.Client(), name, tacklev1.Role_ROLE_CONTROLLER)
	c.subscribe(id, 0)
	turn := c.runBatch(id, "r", calls...)
	evs := c.eventsUntil(ofType("permission_requested"))
	return c, turn, evs[len(evs)-1].GetPermission()
}

func answerMsg(id, req string, d tacklev1.Decision, scope tacklev1.Scope, feedback string) *tacklev1.ClientMessage {
	return &tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{
		SessionId: id, RequestId: req, Decision: d, Scope: scope, Feedback: feedback,
	}}}
}

func bashCall(id, command string) *tacklev1.ToolCall {
	b, _ := json.Marshal(map[string]string{"command": command})
	return &tacklev1.ToolCall{Id: id, Name: "Bash", InputJson: string(b)}
}

// TestFirstAnswerWins: two controllers answer at once; one wins, the other
// is refused, and both hear the resolution naming the winner.
func TestFirstAnswerWins(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	a, turn, pr := firstRequest(t, d, id, "alpha", bashCall("b1", "mkdir made"))

	// The late joiner finds the request, with its options, in the snapshot.
	b := attach(t, d.Client(), "bravo", tacklev1.Role_ROLE_CONTROLLER)
	snap := b.subscribe(id, 0)
	if len(snap.GetPendingPermissions()) != 1 {
		t.Fatalf("snapshot pending = %v", snap.GetPendingPermissions())
	}
	p := snap.GetPendingPermissions()[0]
	var opts []string
	for _, o := range p.GetOptions() {
		opts = append(opts, o.GetOption()+"/"+strings.TrimPrefix(o.GetScope().String(), "SCOPE_"))
		if o.GetOption() == "allow_always" && o.GetRule() != p.GetAlwaysRule() {
			t.Errorf("option %v does not carry the always rule %q", o, p.GetAlwaysRule())
		}
	}
	wantOpts := []string{"allow_once/UNSPECIFIED", "allow_always/SESSION", "allow_always/PROJECT", "allow_always/USER", "deny/UNSPECIFIED", "deny_with_feedback/UNSPECIFIED"}
	if !slices.Equal(opts, wantOpts) || p.GetAlwaysRule() == "" || p.GetRequestId() != pr.GetRequestId() {
		t.Errorf("pending request %v: options %v, want %v and an always rule", p, opts, wantOpts)
	}
	// Both answer; the stream replays events before the answer is handled.
	var wg sync.WaitGroup
	for _, c := range []*client{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec := tacklev1.Decision_DECISION_ALLOW_ONCE
			if c == a {
				dec = tacklev1.Decision_DECISION_DENY
			}
			if err := c.stream.Send(answerMsg(id, pr.GetRequestId(), dec, 0, "")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var winners []string
	for _, c := range []*client{a, b} {
		var res *tacklev1.PermissionResolved
		refused := false
		for res == nil || !refused {
			m := c.recv()
			if e := m.GetError(); e != nil {
				if e.GetCode() != codes.NotFound.String() {
					t.Fatalf("%s: stream error %v", c.welcome.GetClientId(), e)
				}
				refused = true
				continue
			}
			if e := m.GetEvent(); e.GetType() == "permission_resolved" {
				res = e.GetResolution()
				if res.GetClientId() != c.welcome.GetClientId() {
					// The other won: this one's answer is refused with NotFound,
					// before or after this event; wait for that too.
				} else {
					winners = append(winners, c.welcome.GetClientId())
					refused = true
				}
			}
		}
		winner := res.GetClientId()
		if res.GetClientName() != strings.SplitN(winner, "-", 2)[0] {
			t.Errorf("resolution %v does not name the answering client", res)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("winners %v, want exactly one", winners)
	}
	evs := a.eventsUntil(turnEnded(turn))
	r := resultOf(t, evs, "b1")
	_, statErr := os.Stat(filepath.Join(dir, "made"))
	if winners[0] == a.welcome.GetClientId() {
		if r.GetStatus() != "denied" || statErr == nil {
			t.Errorf("deny won, but the result is %v (dir: %v)", r, statErr)
		}
	} else if r.GetStatus() != "completed" || statErr != nil {
		t.Errorf("allow won, but the result is %v (dir: %v)", r, statErr)
	}
}

// TestControllerKilledMidPrompt: the client that ran the batch dies while
// the prompt waits; a one-shot answer from another client still lands,
// and the audit log names that client's process.
func TestControllerKilledMidPrompt(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	conn, err := daemontest.Dial(d.Socket())
	if err != nil {
		t.Fatal(err)
	}
	gone := attach(t, tacklev1.NewTackleServiceClient(conn), "gone", tacklev1.Role_ROLE_CONTROLLER)
	gone.subscribe(id, 0)
	turn := gone.runBatch(id, "b", bashCall("b1", "mkdir later"))
	gone.eventsUntil(ofType("permission_requested"))
	gone.cancel()
	conn.Close()

	obs := attach(t, d.Client(), "watcher", tacklev1.Role_ROLE_OBSERVER)
	snap := obs.subscribe(id, 0)
	pending, err := d.Client().ListPendingPermissions(context.Background(), &tacklev1.ListPendingPermissionsRequest{})
	if err != nil || len(pending.GetRequests()) != 1 || pending.GetRequests()[0].GetSessionId() != id {
		t.Fatalf("ListPendingPermissions = %v, %v", pending, err)
	}
	req := pending.GetRequests()[0]
	if len(snap.GetPendingPermissions()) != 1 || snap.GetPendingPermissions()[0].GetRequestId() != req.GetRequestId() {
		t.Fatalf("snapshot pending %v, listed %v", snap.GetPendingPermissions(), req)
	}
	resp, err := d.Client().AnswerPermission(context.Background(), &tacklev1.AnswerPermissionRequest{ClientName: "oneshot", Answer: &tacklev1.PermissionAnswer{
		SessionId: id, RequestId: req.GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ALWAYS, Scope: tacklev1.Scope_SCOPE_SESSION,
	}})
	if err != nil || !resp.GetAccepted() {
		t.Fatalf("AnswerPermission = %v, %v", resp, err)
	}
	evs := obs.eventsUntil(turnEnded(turn))
	if r := resultOf(t, evs, "b1"); r.GetStatus() != "completed" {
		t.Errorf("result %v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "later")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	for _, e := range evs {
		if res := e.GetResolution(); res != nil && (res.GetClientName() != "oneshot" || res.GetDecision() != "allow_always") {
			t.Errorf("resolution %v, want allow_always by oneshot", res)
		}
	}

	// The session rule applies to the next call at once: no prompt.
	c := attach(t, d.Client(), "next", tacklev1.Role_ROLE_CONTROLLER)
	c.subscribe(id, 0)
	turn = c.runBatch(id, "again", bashCall("b2", "mkdir later -p"))
	evs = c.eventsUntil(turnEnded(turn))
	for _, e := range evs {
		if e.GetType() == "permission_requested" {
			t.Errorf("asked again after allow_always for the session: %v", e.GetPermission())
		}
	}
	rules, err := d.Client().ListRules(context.Background(), &tacklev1.ListRulesRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rules.GetRules() {
		found = found || (r.GetSource().GetScope() == "session" && r.GetText() == req.GetAlwaysRule())
	}
	if !found {
		t.Errorf("rules %v lack the session rule %q", rules.GetRules(), req.GetAlwaysRule())
	}

	audit, err := d.Client().Audit(context.Background(), &tacklev1.AuditRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	var user *tacklev1.AuditEntry
	for _, e := range audit.GetEntries() {
		if e.GetCallId() == "b1" {
			user = e
		}
	}
	if user == nil || user.GetDecidedBy() != "user" || user.GetClientName() != "oneshot" || user.GetClientPid() != int32(os.Getpid()) ||
		user.GetClientUid() != uint32(os.Getuid()) || user.GetScope() != "session" || len(user.GetInputSha256()) != 64 || user.GetTime() == nil {
		t.Errorf("audit of the answered call = %v (all: %v)", user, audit.GetEntries())
	}
}

// TestNoControllerDeniedAfterTimeout: nobody answers; the settings'
// askTimeoutSeconds denies the call, never allows it.
func TestNoControllerDeniedAfterTimeout(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	if err := os.MkdirAll(filepath.Join(dir, ".tackle"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".tackle", "settings.json"), []byte(`{"permissions": {"askTimeoutSeconds": 1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := attach(t, d.Client(), "runner", tacklev1.Role_ROLE_OBSERVER)
	c.subscribe(id, 0)
	// An observer cannot run batches: use a controller that never answers.
	ctl := attach(t, d.Client(), "mute", tacklev1.Role_ROLE_CONTROLLER)
	ctl.subscribe(id, 0)
	turn := ctl.runBatch(id, "t", bashCall("b1", "mkdir never"))
	evs := c.eventsUntil(turnEnded(turn))
	r := resultOf(t, evs, "b1")
	if r.GetStatus() != "denied" || !strings.Contains(text(r), "within 1 s") {
		t.Errorf("unanswered call = %v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "never")); err == nil {
		t.Error("the unanswered command ran")
	}
	for _, e := range evs {
		if res := e.GetResolution(); res != nil && res.GetDecision() != "timeout" {
			t.Errorf("resolution %v, want timeout", res)
		}
	}
}

// TestConcurrentAlwaysAnswers: ten sessions of one project ask at once,
// ten answers save ten rules in .tackle/settings.local.json: none is lost.
func TestConcurrentAlwaysAnswers(t *testing.T) {
	d := daemontest.Start(t)
	dir := t.TempDir()
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}
	type asked struct {
		session string
		c       *client
		turn    string
		req     *tacklev1.PermissionRequest
	}
	var all []asked
	for i, w := range words {
		resp, err := d.Client().CreateSession(context.Background(), &tacklev1.CreateSessionRequest{Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		sid := resp.GetSession().GetId()
		c, turn, req := firstRequest(t, d, sid, "ctl"+w, bashCall("b"+string(rune('0'+i)), "mkdir "+w))
		if req.GetAlwaysRule() == "" {
			t.Fatalf("request %v has no always rule", req)
		}
		all = append(all, asked{sid, c, turn, req})
	}
	var wg sync.WaitGroup
	for _, a := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := d.Client().AnswerPermission(context.Background(), &tacklev1.AnswerPermissionRequest{ClientName: "bulk", Answer: &tacklev1.PermissionAnswer{
				SessionId: a.session, RequestId: a.req.GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ALWAYS, Scope: tacklev1.Scope_SCOPE_PROJECT,
			}})
			if err != nil || !resp.GetAccepted() {
				t.Errorf("AnswerPermission = %v, %v", resp, err)
			}
		}()
	}
	wg.Wait()
	for _, a := range all {
		evs := a.c.eventsUntil(turnEnded(a.turn))
		if r := evs[len(evs)-2].GetResult(); r.GetStatus() != "completed" {
			t.Errorf("session %s: %v", a.session, r)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ".tackle", "settings.local.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Permissions struct {
			Allow []string `json:"allow"`
		} `json:"permissions"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("settings.local.json is not JSON: %v\n%s", err, b)
	}
	for _, a := range all {
		if !slices.Contains(f.Permissions.Allow, a.req.GetAlwaysRule()) {
			t.Errorf("rule %q lost: the file has %v", a.req.GetAlwaysRule(), f.Permissions.Allow)
		}
	}
	if len(f.Permissions.Allow) != len(words) {
		t.Errorf("allow = %v, want %d rules", f.Permissions.Allow, len(words))
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.local.json")); err == nil {
		t.Error("Claude Code's settings file was written")
	}
}

// TestTrustOnOff: an untrusted project's allow rule is ignored (and the
// snapshot says so); trusting the project makes it apply; untrusting
// undoes it. Its deny rules apply either way.
func TestTrustOnOff(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	settings := filepath.Join(dir, ".tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte("{\"permissions\": {\n  \"allow\": [\"Bash(mkdir *)\"],\n  \"deny\": [\"Bash(rm *)\"]\n}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	explain := func(cmd string) *tacklev1.ExplainResponse {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"command": cmd})
		r, err := d.Client().Explain(ctx, &tacklev1.ExplainRequest{SessionId: id, Tool: "Bash", InputJson: string(b)})
		if err != nil {
			t.Fatalf("Explain(%s): %v", cmd, err)
		}
		return r
	}
	c := attach(t, d.Client(), "look", tacklev1.Role_ROLE_OBSERVER)
	tr := c.subscribe(id, 0).GetTrust()
	if tr.GetTrusted() || tr.GetHint() != "tackle trust "+dir || !slices.Contains(tr.GetIgnored(), "1 allow rule in "+settings) {
		t.Errorf("snapshot trust of an untrusted project = %v", tr)
	}
	if r := explain("mkdir x"); r.GetDecision() != "ask" {
		t.Errorf("untrusted: mkdir = %v, want ask", r)
	}
	if r := explain("rm x"); r.GetDecision() != "deny" || r.GetRule() != "Bash(rm *)" || r.GetSource().GetPath() != settings || r.GetSource().GetLine() != 3 {
		t.Errorf("untrusted: rm = %v, want deny by the project's rule", r)
	}

	if resp, err := d.Client().Trust(ctx, &tacklev1.TrustRequest{Dir: dir}); err != nil || resp.GetAlready() {
		t.Fatalf("Trust = %v, %v", resp, err)
	}
	r := explain("mkdir x")
	if r.GetDecision() != "allow" || r.GetDecidedBy() != "rule" || r.GetRule() != "Bash(mkdir *)" || r.GetSource().GetScope() != "project" || r.GetSource().GetLine() != 2 {
		t.Errorf("trusted: mkdir = %v, want allow by the project's rule", r)
	}
	if tr := attach(t, d.Client(), "look2", tacklev1.Role_ROLE_OBSERVER).subscribe(id, 0).GetTrust(); !tr.GetTrusted() || len(tr.GetIgnored()) != 0 {
		t.Errorf("snapshot trust of a trusted project = %v", tr)
	}
	list, err := d.Client().ListTrusted(ctx, &tacklev1.ListTrustedRequest{})
	if err != nil || !slices.Equal(list.GetDirs(), []string{dir}) {
		t.Errorf("ListTrusted = %v, %v", list, err)
	}

	if resp, err := d.Client().Untrust(ctx, &tacklev1.UntrustRequest{Dir: dir}); err != nil || !resp.GetRemoved() {
		t.Fatalf("Untrust = %v, %v", resp, err)
	}
	if r := explain("mkdir x"); r.GetDecision() != "ask" {
		t.Errorf("untrusted again: mkdir = %v, want ask", r)
	}
	if _, err := d.Client().Trust(ctx, &tacklev1.TrustRequest{Dir: "relative"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Trust of a relative dir: %v", err)
	}
}

func TestExplainRunsNothing(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	ctx := context.Background()
	b, _ := json.Marshal(map[string]string{"command": "mkdir explained"})
	r, err := d.Client().Explain(ctx, &tacklev1.ExplainRequest{SessionId: id, Tool: "Bash", InputJson: string(b)})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetDecision() != "ask" || r.GetAlwaysRule() == "" || len(r.GetChain()) < 3 {
		t.Errorf("explain = %v", r)
	}
	hooks := false
	for _, s := range r.GetChain() {
		hooks = hooks || (s.GetStage() == "PreToolUse hooks" && s.GetOutcome() == "not run")
	}
	if !hooks {
		t.Errorf("the chain does not say the hooks were not run: %v", r.GetChain())
	}
	if _, err := os.Stat(filepath.Join(dir, "explained")); err == nil {
		t.Error("explain ran the command")
	}
	for _, tc := range []struct{ tool, input string }{
		{"NoSuchTool", `{}`},
		{"Bash", `{"command": 3}`},
		{"Bash", `not json`},
	} {
		_, err := d.Client().Explain(ctx, &tacklev1.ExplainRequest{SessionId: id, Tool: tc.tool, InputJson: tc.input})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("Explain(%s, %s) = %v, want InvalidArgument", tc.tool, tc.input, err)
		}
	}
	// The session's events did not move: explain appends nothing.
	s, err := d.Client().GetSession(ctx, &tacklev1.GetSessionRequest{Id: id})
	if err != nil || s.GetSession().GetLastSeq() != 0 {
		t.Errorf("session after explain: %v, %v", s, err)
	}
}
