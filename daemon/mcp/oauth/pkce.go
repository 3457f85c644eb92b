package oauth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// pkceCheck refuses an authorization server whose metadata does not offer
// PKCE with S256 (the go-sdk refuses one that offers no method at all, and
// would send an S256 challenge to a server that ignores it).
type pkceCheck struct {
	base http.RoundTripper
}

func (p *pkceCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || !isASMetadata(req.URL.Path) {
		return resp, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	var meta struct {
		Methods []string `json:"code_challenge_methods_supported"`
	}
	if json.Unmarshal(b, &meta) == nil && len(meta.Methods) > 0 && !slices.Contains(meta.Methods, "S256") {
		return nil, fmt.Errorf("the authorization server at %s offers PKCE only with %s, not S256: tackle does not authorise with it",
			req.URL.Host, strings.Join(meta.Methods, ", "))
	}
	return resp, nil
}

func isASMetadata(path string) bool {
	return strings.Contains(path, "/.well-known/oauth-authorization-server") || strings.Contains(path, "/.well-known/openid-configuration")
}
