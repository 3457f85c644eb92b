package oauthserver

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// noRedirect is a client that stops at the authorization server's redirect.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

const redirect = "http://localhost:12345/callback"

func register(t *testing.T, s *Server) string {
	t.Helper()
	resp, err := http.Post(s.Issuer+"/register", "application/json", strings.NewReader(`{"redirect_uris":["`+redirect+`"],"client_name":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil || resp.StatusCode != http.StatusCreated || reg.ClientID == "" {
		t.Fatalf("register: %s %v %+v", resp.Status, err, reg)
	}
	return reg.ClientID
}

// authorizeQuery is a valid authorization request of client, verifier's
// challenge.
func authorizeQuery(s *Server, client, verifier string) url.Values {
	return url.Values{
		"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "state": {"st"},
		"code_challenge": {challengeOf(verifier)}, "code_challenge_method": {"S256"}, "resource": {s.URL},
	}
}

// authorizeReq sends q to /authorize and returns the redirect's query
// (nil when the server did not redirect) and the status.
func authorizeReq(t *testing.T, s *Server, q url.Values) (url.Values, int) {
	t.Helper()
	resp, err := noRedirect.Get(s.Issuer + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		return nil, resp.StatusCode
	}
	if !strings.HasPrefix(loc.String(), redirect+"?") {
		t.Fatalf("redirected to %s, not to %s", loc, redirect)
	}
	return loc.Query(), resp.StatusCode
}

func tokenReq(t *testing.T, s *Server, form url.Values) (map[string]any, int) {
	t.Helper()
	resp, err := http.PostForm(s.Issuer+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body, resp.StatusCode
}

func TestRulesAreEnforced(t *testing.T) {
	s := Start(t, nil)
	client := register(t, s)
	verifier := "a-verifier-of-enough-length-0123456789-abcdefghijkl"

	for name, change := range map[string]func(url.Values){
		"no challenge":     func(q url.Values) { q.Del("code_challenge") },
		"plain method":     func(q url.Values) { q.Set("code_challenge_method", "plain") },
		"no resource":      func(q url.Values) { q.Del("resource") },
		"another resource": func(q url.Values) { q.Set("resource", s.Issuer+"/other") },
		"no state":         func(q url.Values) { q.Del("state") },
	} {
		q := authorizeQuery(s, client, verifier)
		change(q)
		if back, _ := authorizeReq(t, s, q); back == nil || back.Get("error") == "" || back.Get("code") != "" {
			t.Errorf("%s: redirected back with %v; want an error and no code", name, back)
		}
	}
	q := authorizeQuery(s, client, verifier)
	q.Set("redirect_uri", "http://localhost:1/elsewhere")
	if back, code := authorizeReq(t, s, q); back != nil || code != http.StatusBadRequest {
		t.Errorf("an unregistered redirect_uri: %d, redirected %v; want 400 and no redirect", code, back)
	}
	if n := len(s.Violations()); n != 6 {
		t.Errorf("%d violations recorded; want 6: %v", n, s.Violations())
	}

	code := func() string {
		back, _ := authorizeReq(t, s, authorizeQuery(s, client, verifier))
		if back.Get("code") == "" || back.Get("state") != "st" || back.Get("iss") != s.Issuer {
			t.Fatalf("a valid authorization request: redirected with %v; want code, state st, iss %s", back, s.Issuer)
		}
		return back.Get("code")
	}
	exchange := func(c string) url.Values {
		return url.Values{"grant_type": {"authorization_code"}, "code": {c}, "client_id": {client},
			"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {s.URL}}
	}
	for name, change := range map[string]func(url.Values){
		"wrong verifier": func(f url.Values) { f.Set("code_verifier", verifier+"x") },
		"no verifier":    func(f url.Values) { f.Del("code_verifier") },
		"no resource":    func(f url.Values) { f.Del("resource") },
		"other redirect": func(f url.Values) { f.Set("redirect_uri", "http://localhost:12345/other") },
	} {
		f := exchange(code())
		change(f)
		if body, status := tokenReq(t, s, f); status != http.StatusBadRequest || body["access_token"] != nil {
			t.Errorf("%s: %d %v; want 400 and no token", name, status, body)
		}
	}

	c := code()
	body, status := tokenReq(t, s, exchange(c))
	if status != http.StatusOK || body["access_token"] == nil || body["refresh_token"] == nil {
		t.Fatalf("a valid exchange: %d %v", status, body)
	}
	if _, status := tokenReq(t, s, exchange(c)); status != http.StatusBadRequest {
		t.Errorf("the code used twice: %d; want 400", status)
	}
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {body["refresh_token"].(string)}, "client_id": {client}}
	again, status := tokenReq(t, s, refresh)
	if status != http.StatusOK || again["access_token"] == body["access_token"] {
		t.Fatalf("a refresh: %d %v; want a new access token", status, again)
	}
	if _, status := tokenReq(t, s, refresh); status != http.StatusBadRequest {
		t.Errorf("a rotated refresh token used again: %d; want 400", status)
	}

	// The MCP endpoint wants the token.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(token string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post(""); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Errorf("initialize without a token: %s %q; want 401 naming the resource metadata", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := post(again["access_token"].(string)); resp.StatusCode != http.StatusOK {
		t.Errorf("initialize with the token: %s; want 200", resp.Status)
	}
	st := s.Stats()
	if st.Registrations != 1 || st.CodeGrants != 1 || st.RefreshGrants != 1 || st.Authorizations != 5 {
		t.Errorf("stats %+v; want 1 registration, 5 authorizations, 1 code grant, 1 refresh grant", st)
	}
}
