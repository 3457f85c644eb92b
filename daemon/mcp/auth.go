package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/tackle-agent/tackle/daemon/mcp/oauth"
)

// Login outcomes.
const (
	LoginAuthorized        = "authorized"         // a flow ran and the server is connected
	LoginAlreadyAuthorized = "already-authorized" // connected with a token already
	LoginNotRequired       = "not-required"       // connected without asking for one
)

// OAuth is the server's OAuth handler, nil when tackle does not authorise
// it (a stdio or sse server, or no Options.Auth).
func (c *Conn) OAuth() *oauth.Handler { return c.oauth }

// Login runs (or joins) the OAuth flow of session sessionID's server name:
// onURL gets the authorisation URL once the flow has it (again if a new
// flow replaces it). It returns when the server is connected, or fails
// with why not. force forgets a token first, so a new flow runs.
func (m *Manager) Login(ctx context.Context, sessionID, name string, force bool, onURL func(string)) (string, error) {
	c, ok := m.Conn(sessionID, name)
	if !ok {
		return "", fmt.Errorf("no MCP server %q in the session", name)
	}
	if c.oauth == nil {
		if c.client == nil {
			st := c.Status()
			return "", &StateError{Server: name, State: st.State, Err: st.Error}
		}
		return "", fmt.Errorf("MCP server %q is a %s server: tackle authorises only http servers by OAuth (give an sse server an Authorization header under \"headers\")", name, c.transport())
	}
	if force {
		if _, err := m.opts.Auth.Logout(name, c.cfg.URL); err != nil {
			return "", err
		}
	} else if st := c.Status(); st.State == Connected && st.Authorized {
		return LoginAlreadyAuthorized, nil
	}
	events := make(chan oauth.Event, 16)
	stop := c.oauth.Watch(func(ev oauth.Event) {
		select {
		case events <- ev:
		default:
		}
	})
	defer stop()
	c.mu.Lock()
	changed := c.changed
	c.mu.Unlock()
	sent := ""
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	switch u := c.oauth.Pending(); {
	case u != "" && !force:
		onURL(u)
		sent = u
	case (st == Connecting || st == Pending) && !force:
		// An attempt is under way: its 401 starts the flow (a reconnect
		// now would make another attempt after it).
	default:
		c.requestReconnect(true)
		// The state before the reconnect says nothing: wait for a change.
		select {
		case <-changed:
		case <-ctx.Done():
			return "", ctx.Err()
		case <-c.done:
			return "", &StateError{Server: name, State: Failed, Err: "the connection was closed"}
		}
	}
	authorized := false
	for {
		c.mu.Lock()
		st, msg := c.state, c.lastErr
		changed = c.changed
		c.mu.Unlock()
		switch st {
		case Connected:
			if authorized || c.oauth.Authorized() {
				return LoginAuthorized, nil
			}
			return LoginNotRequired, nil
		case Failed:
			return "", &StateError{Server: name, State: st, Err: msg}
		case NeedsAuth:
			if c.oauth.Pending() == "" && sent != "" {
				// The flow ended without a token (its event says why).
				if err := c.oauth.LastError(); err != "" {
					return "", errors.New(err)
				}
				return "", &StateError{Server: name, State: st, Err: msg}
			}
		}
		select {
		case ev := <-events:
			switch ev.State {
			case oauth.Required:
				if ev.URL != sent {
					onURL(ev.URL)
					sent = ev.URL
				}
			case oauth.Authorized:
				authorized = true
			case oauth.Failed:
				return "", errors.New(ev.Error)
			}
		case <-changed:
		case <-ctx.Done():
			return "", ctx.Err()
		case <-c.done:
			return "", &StateError{Server: name, State: Failed, Err: "the connection was closed"}
		}
	}
}
