package cmdutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// NewSessionRequest builds a CreateSessionRequest carrying the client's environment.
func NewSessionRequest(cwd string, env []string, defaultForCwd bool) *tacklev1.CreateSessionRequest {
	return &tacklev1.CreateSessionRequest{Cwd: cwd, Env: env, DefaultForCwd: defaultForCwd}
}

// SessionNotFound turns err, an error of doing something with session id,
// into "no session ID; did you mean …" (exit 2) when the session does not
// exist; other errors are wrapped with doing.
func (a *App) SessionNotFound(ctx context.Context, c *client.Client, doing, id string, err error) error {
	if !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("%s %s: %w", doing, id, err)
	}
	var ids []string
	if list, lerr := c.ListSessions(ctx); lerr == nil {
		for _, s := range list {
			ids = append(ids, s.GetId())
		}
	}
	return UsageError("no session %q%s (tackle sessions list lists them)", id, DidYouMean(id, ids))
}

// checkSession is a usage error naming the nearest sessions when id is
// not a session of the daemon.
func (a *App) checkSession(ctx context.Context, c *client.Client, id string) error {
	if _, err := c.GetSession(ctx, id); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return a.SessionNotFound(ctx, c, "", id, err)
		}
	}
	return nil
}
