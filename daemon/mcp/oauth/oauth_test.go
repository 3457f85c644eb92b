package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/tackle-agent/tackle/daemon/config"
	"golang.org/x/oauth2"
)

// waitFlow starts a browser step of h for authURL and returns the channel
// its result arrives on.
func waitFlow(t *testing.T, h *Handler, authURL string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		res, err := h.fetch(context.Background(), &auth.AuthorizationArgs{URL: authURL})
		h.tellBrowser(err) // as Authorize does once the code is exchanged
		if err == nil && (res.Code != "the-code" || res.State != "s1" || res.Iss != "https://as.example") {
			err = fmt.Errorf("result %+v", res)
		}
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for h.Pending() == "" {
		if time.Now().After(deadline) {
			t.Fatal("the flow never waited for the browser")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return done
}

// The browser's redirect reaches the flow its state names; a wrong state
// is refused and the flow goes on waiting for the right one.
func TestCallbackState(t *testing.T) {
	b := New(Options{Dir: t.TempDir()})
	defer b.Close()
	h := b.Handler(config.MCPServer{Name: "srv", Type: "http", URL: "https://mcp.example/mcp"})
	events := make(chan Event, 4)
	stop := h.Watch(func(ev Event) { events <- ev })
	defer stop()
	port, err := b.listen(0)
	if err != nil {
		t.Fatal(err)
	}
	done := waitFlow(t, h, "https://as.example/authorize?client_id=c&state=s1")
	if ev := <-events; ev.State != Required || ev.Server != "srv" || !strings.Contains(ev.URL, "state=s1") {
		t.Fatalf("event %+v", ev)
	}
	base := fmt.Sprintf("http://localhost:%d/callback", port)
	get := func(q string) (int, string) {
		resp, err := http.Get(base + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("code=evil&state=wrong"); code != http.StatusBadRequest || !strings.Contains(body, "unknown or expired state") {
		t.Fatalf("wrong state: %d %s", code, body)
	}
	select {
	case err := <-done:
		t.Fatalf("the flow ended on a wrong state: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if code, body := get("code=the-code&state=s1&iss=" + url.QueryEscape("https://as.example")); code != http.StatusOK || !strings.Contains(body, "srv") {
		t.Fatalf("right state: %d %s", code, body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if h.Pending() != "" {
		t.Fatalf("still pending: %s", h.Pending())
	}
	// The state is spent: a replay is refused.
	if code, _ := get("code=the-code&state=s1"); code != http.StatusBadRequest {
		t.Fatalf("replayed state: %d", code)
	}
}

// An authorization server's refusal ends the flow with its words.
func TestCallbackError(t *testing.T) {
	b := New(Options{Dir: t.TempDir()})
	defer b.Close()
	h := b.Handler(config.MCPServer{Name: "srv", Type: "http", URL: "https://mcp.example/mcp"})
	port, err := b.listen(0)
	if err != nil {
		t.Fatal(err)
	}
	done := waitFlow(t, h, "https://as.example/authorize?state=s1")
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/callback?state=s1&error=access_denied&error_description=no+way", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "access_denied: no way") {
		t.Fatalf("err %v", err)
	}
}

// A flow nobody completes ends after FlowTimeout, saying what to run; one
// whose caller gives up ends at once.
func TestFlowEnds(t *testing.T) {
	b := New(Options{Dir: t.TempDir(), FlowTimeout: 100 * time.Millisecond})
	defer b.Close()
	h := b.Handler(config.MCPServer{Name: "srv", Type: "http", URL: "https://mcp.example/mcp"})
	_, err := h.fetch(context.Background(), &auth.AuthorizationArgs{URL: "https://as.example/authorize?state=s1"})
	if err == nil || !strings.Contains(err.Error(), "tackle mcp login srv") {
		t.Fatalf("err %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	paused := false
	ctx = WithPause(ctx, func() func() { paused = true; return func() { paused = false } })
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = h.fetch(ctx, &auth.AuthorizationArgs{URL: "https://as.example/authorize?state=s2"})
	if err == nil || !strings.Contains(err.Error(), "abandoned") || paused {
		t.Fatalf("err %v, paused %v", err, paused)
	}
}

// A token file is 0600 in a 0700 directory, survives a new broker (a
// daemon restart) and is refreshed before it expires, the new token
// written back.
func TestTokenFileAndRefresh(t *testing.T) {
	var refreshes int
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("refresh_token") != "r1" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		refreshes++
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("a%d", refreshes+1), "token_type": "Bearer", "expires_in": 3600})
	}))
	defer as.Close()
	dir := filepath.Join(t.TempDir(), "mcp-oauth")
	srv := config.MCPServer{Name: "srv", Type: "http", URL: "https://mcp.example/mcp"}
	b := New(Options{Dir: dir})
	h := b.Handler(srv)
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, b.o.HTTPClient)
	cfg := &oauth2.Config{ClientID: "c1", Endpoint: oauth2.Endpoint{TokenURL: as.URL + "/token", AuthStyle: oauth2.AuthStyleInParams}}
	// A 10 s token is used, not refreshed at once (half its life is left).
	short, err := h.newTokenSource(ctx, cfg, &oauth2.Token{AccessToken: "s1", RefreshToken: "r1", Expiry: time.Now().Add(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := short.Token(); err != nil || tok.AccessToken != "s1" || refreshes != 0 {
		t.Fatalf("short token: %+v %v, %d refreshes", tok, err, refreshes)
	}
	// Expired: refreshed at its next use (after the restart below).
	ts, err := h.newTokenSource(ctx, cfg, &oauth2.Token{AccessToken: "a1", RefreshToken: "r1", Expiry: time.Now().Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.ts = ts
	h.mu.Unlock()
	b.Close()
	fi, err := os.Stat(fileName(dir, srv.Name, srv.URL))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", di.Mode())
	}

	b2 := New(Options{Dir: dir})
	defer b2.Close()
	h2 := b2.Handler(srv)
	if !h2.Authorized() {
		t.Fatal("the token was not read back")
	}
	ts2, _ := h2.TokenSource(context.Background())
	tok, err := ts2.Token()
	if err != nil || tok.AccessToken != "a2" || refreshes != 1 {
		t.Fatalf("token %+v, err %v, refreshes %d", tok, err, refreshes)
	}
	s, err := load(fileName(dir, srv.Name, srv.URL))
	if err != nil || s.Token.AccessToken != "a2" || s.Token.RefreshToken != "r1" || s.ClientID != "c1" {
		t.Fatalf("stored %+v, err %v", s, err)
	}
	// Another URL under the same name never gets this token.
	if b2.Handler(config.MCPServer{Name: "srv", Type: "http", URL: "https://other.example/mcp"}).Authorized() {
		t.Fatal("a token for another URL")
	}
	if removed, err := b2.Logout(srv.Name, srv.URL); err != nil || removed == "" || h2.Authorized() {
		t.Fatalf("logout: %q %v", removed, err)
	}
	if _, err := os.Stat(fileName(dir, srv.Name, srv.URL)); !os.IsNotExist(err) {
		t.Fatalf("file after logout: %v", err)
	}
}

// Without a refresh token an expired token gives way to a new
// authorisation: the transport sends no header and the server's 401
// starts a flow.
func TestExpiredWithoutRefresh(t *testing.T) {
	dir := t.TempDir()
	path := fileName(dir, "srv", "https://mcp.example/mcp")
	if err := save(path, &stored{Server: "srv", URL: "https://mcp.example/mcp", ClientID: "c", TokenURL: "http://127.0.0.1:1/token",
		Token: &oauth2.Token{AccessToken: "old", Expiry: time.Now().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	b := New(Options{Dir: dir})
	defer b.Close()
	h := b.Handler(config.MCPServer{Name: "srv", Type: "http", URL: "https://mcp.example/mcp"})
	ts, _ := h.TokenSource(context.Background())
	_, err := ts.Token()
	var re *oauth2.RetrieveError
	if !asRetrieve(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("err %v", err)
	}
}

func asRetrieve(err error, re **oauth2.RetrieveError) bool {
	r, ok := err.(*oauth2.RetrieveError)
	if ok {
		*re = r
	}
	return ok
}

// An authorization server that offers PKCE only as plain is refused.
func TestPKCES256Required(t *testing.T) {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		methods := []string{"plain"}
		if strings.HasSuffix(r.URL.Path, "/good") {
			methods = []string{"plain", "S256"}
		}
		json.NewEncoder(w).Encode(map[string]any{"issuer": "x", "code_challenge_methods_supported": methods})
	}))
	defer as.Close()
	b := New(Options{Dir: t.TempDir()})
	defer b.Close()
	resp, err := b.o.HTTPClient.Get(as.URL + "/.well-known/oauth-authorization-server")
	if err == nil || !strings.Contains(err.Error(), "not S256") {
		t.Fatalf("plain only: %v %v", resp, err)
	}
	resp, err = b.o.HTTPClient.Get(as.URL + "/.well-known/oauth-authorization-server/good")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "S256") {
		t.Fatalf("body %s", body)
	}
}
