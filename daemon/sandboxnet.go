package daemon

import (
	"github.com/tackle-agent/tackle/daemon/sandbox"
	"github.com/tackle-agent/tackle/daemon/server"
	"github.com/tackle-agent/tackle/daemon/session"
)

// sandboxNet gives sandboxed commands their network: none but the
// session's proxy.
type sandboxNet struct {
	d *Daemon
}

func newSandboxNet(d *Daemon) *sandboxNet { return &sandboxNet{d: d} }

// attach sets the policy's way out and returns the variables that point
// the command's programs at it. Without a proxy the command has no
// network at all.
func (n *sandboxNet) attach(sess *session.Session, p *sandbox.Policy, s *sandbox.Settings) ([]string, error) {
	return nil, nil
}

// status fills in the network part of a status.
func (n *sandboxNet) status(sess *session.Session, out *server.SandboxStatus) {}
