package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tools/shell"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Shells are the background shells of the sessions, as the server needs
// them; *shell.Shells implements it. Implementations are safe for
// concurrent use. Read and Kill fail for a shell the session does not have
// with an error wrapping shell.ErrNotFound.
type Shells interface {
	// List returns the session's shells, oldest first.
	List(sessionID string) []event.ShellInfo
	// Read returns up to max bytes of a shell's output from offset, the
	// offset to read from next and the shell's state.
	Read(sessionID, id string, offset int64, max int) (data []byte, next int64, info event.ShellInfo, err error)
	// Kill kills a shell's process group and returns its final state.
	Kill(sessionID, id string) (event.ShellInfo, error)
	// KillSession kills every shell of a session and waits for them
	// (before the session is deleted).
	KillSession(sessionID string)
}

// Bounds of ReadShellOutput's max_bytes.
const (
	defaultShellRead = 64 << 10
	maxShellRead     = 1 << 20
)

// shellsOf returns the session's shells (none without a Shells).
func (s *Server) shellsOf(sessionID string) []event.ShellInfo {
	if s.opts.Shells == nil {
		return nil
	}
	return s.opts.Shells.List(sessionID)
}

// findShell checks that the session exists and has the shell.
func (s *Server) findShell(ctx context.Context, sessionID, shellID string) error {
	if _, err := s.session(ctx, sessionID); err != nil {
		return err
	}
	if shellID == "" {
		return invalidf("shell_id is required: list the session's shells with ListShells (tackle shells list)")
	}
	for _, sh := range s.shellsOf(sessionID) {
		if sh.ID == shellID {
			return nil
		}
	}
	return codedf(codes.NotFound, "session %s has no background shell %s: list its shells with ListShells (tackle shells list)", sessionID, shellID)
}

// ListShells implements TackleService.
func (s *Server) ListShells(ctx context.Context, req *tacklev1.ListShellsRequest) (*tacklev1.ListShellsResponse, error) {
	if _, err := s.session(ctx, req.GetSessionId()); err != nil {
		return nil, toStatus(err)
	}
	return &tacklev1.ListShellsResponse{Shells: shellsToProto(s.shellsOf(req.GetSessionId()))}, nil
}

// ReadShellOutput implements TackleService.
func (s *Server) ReadShellOutput(ctx context.Context, req *tacklev1.ReadShellOutputRequest) (*tacklev1.ReadShellOutputResponse, error) {
	if req.GetOffset() < 0 {
		return nil, toStatus(invalidf("offset %d is negative", req.GetOffset()))
	}
	if err := s.findShell(ctx, req.GetSessionId(), req.GetShellId()); err != nil {
		return nil, toStatus(err)
	}
	max := int(req.GetMaxBytes())
	if max <= 0 {
		max = defaultShellRead
	}
	max = min(max, maxShellRead)
	data, next, info, err := s.opts.Shells.Read(req.GetSessionId(), req.GetShellId(), req.GetOffset(), max)
	if err != nil {
		return nil, toStatus(s.shellError(err, req.GetSessionId(), req.GetShellId()))
	}
	return &tacklev1.ReadShellOutputResponse{Data: data, NextOffset: next, Shell: shellToProto(&info)}, nil
}

// KillShell implements TackleService.
func (s *Server) KillShell(ctx context.Context, req *tacklev1.KillShellRequest) (*tacklev1.KillShellResponse, error) {
	if err := s.findShell(ctx, req.GetSessionId(), req.GetShellId()); err != nil {
		return nil, toStatus(err)
	}
	info, err := s.opts.Shells.Kill(req.GetSessionId(), req.GetShellId())
	if err != nil {
		return nil, toStatus(s.shellError(err, req.GetSessionId(), req.GetShellId()))
	}
	s.log.Info("background shell killed by a client", "session", req.GetSessionId(), "shell", req.GetShellId(), "status", info.Status)
	return &tacklev1.KillShellResponse{Shell: shellToProto(&info)}, nil
}

// shellError maps an error of Shells: a shell that went away between the
// check and the call is NotFound too.
func (s *Server) shellError(err error, sessionID, shellID string) error {
	if isShellNotFound(err) {
		return codedf(codes.NotFound, "session %s has no background shell %s: %v", sessionID, shellID, err)
	}
	return err
}

// isShellNotFound reports whether err says the shell does not exist.
func isShellNotFound(err error) bool { return errors.Is(err, shell.ErrNotFound) }

var _ Shells = (*shell.Shells)(nil)
