package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tackle-agent/tackle/internal/safefile"
	"golang.org/x/oauth2"
)

// refreshEarly is how long before its expiry a token is refreshed.
const refreshEarly = time.Minute

// stored is a server's token file: the token and what refreshing it needs
// (the client and the token endpoint), so it works after a restart.
type stored struct {
	Server       string           `json:"server"`
	URL          string           `json:"url"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
	Token        *oauth2.Token    `json:"token"`
	Saved        time.Time        `json:"saved"`
}

// fileName is a server's token file in dir: its name (made safe) and a
// digest of its URL, so a renamed URL never gets another server's token.
func fileName(dir, server, serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, server)
	return filepath.Join(dir, safe+"-"+hex.EncodeToString(sum[:6])+".json")
}

// load reads a token file; a missing one is (nil, nil).
func load(path string) (*stored, error) {
	b, err := safefile.Read(path, 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Token == nil || s.Token.AccessToken == "" || s.ClientID == "" {
		return nil, fmt.Errorf("%s: no token or client in the file", path)
	}
	return &s, nil
}

// save writes a token file (0600, in a 0700 directory) atomically.
func save(path string, s *stored) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	s.Saved = time.Now().UTC()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// tokenSource hands out a server's token and refreshes it before it
// expires: a minute before, or at half its life when that is shorter (a
// token of a few seconds is not refreshed at every request), writing every
// new token to the server's file.
type tokenSource struct {
	r *refresher

	mu    sync.Mutex
	tok   *oauth2.Token
	early time.Duration
}

func earlyFor(tok *oauth2.Token) time.Duration {
	if tok.Expiry.IsZero() {
		return 0
	}
	return min(refreshEarly, time.Until(tok.Expiry)/2)
}

func (t *tokenSource) Token() (*oauth2.Token, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok != nil && (t.tok.Expiry.IsZero() || time.Until(t.tok.Expiry) > t.early) {
		return t.tok, nil
	}
	tok, err := t.r.Token()
	if err != nil {
		return nil, err
	}
	t.tok, t.early = tok, earlyFor(tok)
	return tok, nil
}

// newTokenSource makes the token source of a stored token: refreshes go
// to the stored token endpoint with the stored client, through the
// client in ctx (oauth2.HTTPClient).
func newTokenSource(ctx context.Context, path string, s *stored, persist func(error)) oauth2.TokenSource {
	cfg := &oauth2.Config{
		ClientID:     s.ClientID,
		ClientSecret: s.ClientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: s.TokenURL, AuthStyle: s.AuthStyle},
		Scopes:       s.Scopes,
	}
	r := &refresher{ctx: ctx, cfg: cfg, path: path, rec: *s, persist: persist}
	early := earlyFor(s.Token)
	if !s.Saved.IsZero() && !s.Token.Expiry.IsZero() {
		// Half the life it had when it was saved, not of what is left.
		early = min(refreshEarly, s.Token.Expiry.Sub(s.Saved)/2)
	}
	return &tokenSource{r: r, tok: s.Token, early: early}
}

// refresher refreshes at every call (the tokenSource in front decides
// when): oauth2's own source would hand back its cached token until ten
// seconds before expiry.
type refresher struct {
	ctx     context.Context
	cfg     *oauth2.Config
	path    string
	persist func(error) // told of a failed write (nil: logged by nobody)

	mu  sync.Mutex
	rec stored
}

func (r *refresher) Token() (*oauth2.Token, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rec.Token.RefreshToken == "" {
		// The transport goes on without a token and the server's 401
		// starts a new authorisation.
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the token expired and the server gave no refresh token"}
	}
	tok, err := r.cfg.TokenSource(r.ctx, &oauth2.Token{RefreshToken: r.rec.Token.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 && re.ErrorCode == "" {
			re.ErrorCode = "invalid_grant" // a refusal without a code: authorise again
		}
		return nil, err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = r.rec.Token.RefreshToken
	}
	r.rec.Token = tok
	err = save(r.path, &r.rec)
	if r.persist != nil {
		r.persist(err)
	}
	return tok, nil
}
