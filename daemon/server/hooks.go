package server

import (
	"context"

	"github.com/tackle-agent/tackle/daemon/session"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// HookEntry is one configured hook (HookService).
type HookEntry struct {
	Event, Matcher, Type, What, Source, Scope, State, Reason string
}

// HookLister lists a session's hooks.
type HookLister interface {
	Hooks(sess *session.Session) []HookEntry
}

type hookService struct {
	tacklev1.UnimplementedHookServiceServer
	s *Server
}

func (h *hookService) ListHooks(ctx context.Context, req *tacklev1.ListHooksRequest) (*tacklev1.ListHooksResponse, error) {
	sess, err := h.s.explainSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, toStatus(err)
	}
	out := &tacklev1.ListHooksResponse{Hooks: []*tacklev1.HookEntry{}}
	for _, e := range h.s.opts.HookList.Hooks(sess) {
		out.Hooks = append(out.Hooks, &tacklev1.HookEntry{Event: e.Event, Matcher: e.Matcher, Type: e.Type, What: e.What,
			Source: e.Source, Scope: e.Scope, State: e.State, Reason: e.Reason})
	}
	return out, nil
}
