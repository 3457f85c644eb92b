package server

import (
	"context"

	"github.com/tackle-agent/tackle/daemon/session"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Sandbox is the daemon's Bash sandbox, for SandboxService.
type Sandbox interface {
	// Status says what the sandbox does for sess.
	Status(sess *session.Session) SandboxStatus
}

// SandboxStatus is SandboxStatusResponse without protobuf.
type SandboxStatus struct {
	Enabled, Available, AutoAllow, AllowUnsandboxed, FailIfUnavailable, AllowLocalBinding bool
	WhyUnavailable, Bwrap, Network, HTTPSocket, SOCKSSocket, Bridge                       string
	Excluded, AllowedDomains, DeniedDomains, Writable, ReadOnly, Hidden, HiddenEnv, Notes []string
}

type sandboxService struct {
	tacklev1.UnimplementedSandboxServiceServer
	s *Server
}

func (a *sandboxService) SandboxStatus(ctx context.Context, req *tacklev1.SandboxStatusRequest) (*tacklev1.SandboxStatusResponse, error) {
	sess, err := a.s.explainSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, toStatus(err)
	}
	st := a.s.opts.Sandbox.Status(sess)
	return &tacklev1.SandboxStatusResponse{
		Enabled: st.Enabled, Available: st.Available, WhyUnavailable: st.WhyUnavailable, Bwrap: st.Bwrap,
		AutoAllow: st.AutoAllow, AllowUnsandboxedCommands: st.AllowUnsandboxed, FailIfUnavailable: st.FailIfUnavailable,
		ExcludedCommands: st.Excluded, AllowedDomains: st.AllowedDomains, DeniedDomains: st.DeniedDomains,
		AllowLocalBinding: st.AllowLocalBinding, Writable: st.Writable, ReadOnly: st.ReadOnly, Hidden: st.Hidden,
		HiddenEnv: st.HiddenEnv, Network: st.Network, ProxyHttpSocket: st.HTTPSocket, ProxySocksSocket: st.SOCKSSocket,
		Bridge: st.Bridge, Notes: st.Notes,
	}, nil
}
