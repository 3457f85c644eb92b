package server

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/tackle-agent/tackle/daemon/socket"
)

// peerCreds is a grpc TransportCredentials that exchanges no bytes: its
// server handshake reads the peer's uid (SO_PEERCRED) and records it in the
// connection's AuthInfo. The interceptors below refuse every RPC of a peer
// whose uid is not the allowed one, with codes.PermissionDenied (a refused
// handshake would only show up as Unavailable on the client).
type peerCreds struct{}

// peerInfo is the AuthInfo of a connection: the peer's uid, or the reason it
// could not be read.
type peerInfo struct {
	credentials.CommonAuthInfo
	uid uint32
	pid int32
	err error
}

// AuthType implements credentials.AuthInfo.
func (peerInfo) AuthType() string { return "peercred" }

func (peerCreds) ClientHandshake(_ context.Context, _ string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c, peerInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
}

func (peerCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	info := peerInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}
	info.uid, info.err = socket.PeerUID(c)
	if info.err == nil {
		info.pid, _ = socket.PeerPID(c)
	}
	return c, info, nil
}

func (peerCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "peercred"}
}

func (p peerCreds) Clone() credentials.TransportCredentials { return p }

func (peerCreds) OverrideServerName(string) error { return nil } //nolint:staticcheck // part of the interface

// checkPeer refuses the RPC unless its peer's uid is the allowed one.
func (s *Server) checkPeer(ctx context.Context, method string) error {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return status.Error(codes.PermissionDenied, "no peer information: connect over tackled's unix socket")
	}
	info, ok := p.AuthInfo.(peerInfo)
	if !ok {
		return status.Error(codes.PermissionDenied, "no peer credentials: connect over tackled's unix socket")
	}
	if info.err != nil {
		s.log.Warn("refusing a peer without credentials", "method", method, "error", info.err)
		return status.Errorf(codes.PermissionDenied, "reading your credentials: %v", info.err)
	}
	if info.uid != s.allowedUID {
		s.log.Warn("refusing a peer of another user", "method", method, "uid", info.uid, "pid", info.pid)
		return status.Error(codes.PermissionDenied, fmt.Sprintf("uid %d may not use this daemon: it serves uid %d only", info.uid, s.allowedUID))
	}
	return nil
}

func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.checkPeer(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.checkPeer(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}
