package netproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"syscall"
	"time"
)

// SOCKS5 (RFC 1928) constants: methods, commands, address types, replies.
const (
	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff
	socksConnect      = 0x01
	socksIPv4         = 0x01
	socksDomain       = 0x03
	socksIPv6         = 0x04

	socksSucceeded          = 0x00
	socksGeneralFailure     = 0x01
	socksNotAllowed         = 0x02 // connection not allowed by ruleset
	socksNetUnreachable     = 0x03
	socksHostUnreachable    = 0x04
	socksConnRefused        = 0x05
	socksCommandUnsupported = 0x07
	socksAddrUnsupported    = 0x08
)

// aLongTimeAgo is a deadline in the past, to interrupt a blocked Read.
var aLongTimeAgo = time.Unix(1, 0)

// serveSOCKS serves a SOCKS5 client: no authentication, CONNECT only, to
// a domain name, an IPv4 or an IPv6 address. A refusal is reply 0x02. The
// handshake must finish within handshakeTimeout (set by serveConn).
func (s *Server) serveSOCKS(c *conn, br *bufio.Reader) {
	host, port, ok := socksHandshake(c, br)
	if !ok {
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	v := s.decideWatching(ctx, cancel, c, br, host, port)
	if ctx.Err() != nil {
		c.Close()
		return
	}
	if !v.Allow {
		socksReply(c, socksNotAllowed)
		c.Close()
		return
	}
	up, err := s.dialUpstream(ctx, "tcp", hostPort(host, port))
	if err != nil {
		s.log.Debug("dialing an allowed sandbox target", "host", host, "port", port, "error", err)
		socksReply(c, dialReply(err))
		c.Close()
		return
	}
	if err := socksReply(c, socksSucceeded); err != nil {
		c.Close()
		up.Close()
		return
	}
	s.splice(c, up, nil) // bytes the client sent early wait in br, which c reads through
}

// socksHandshake reads the greeting and the request and returns the
// normalised target, having answered what it refuses itself.
func socksHandshake(c net.Conn, br *bufio.Reader) (host string, port int, ok bool) {
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:2]); err != nil || hdr[0] != socksVersion {
		return "", 0, false
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return "", 0, false
	}
	if !slices.Contains(methods, socksNoAuth) {
		c.Write([]byte{socksVersion, socksNoAcceptable})
		return "", 0, false
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return "", 0, false
	}
	if _, err := io.ReadFull(br, hdr[:]); err != nil || hdr[0] != socksVersion {
		return "", 0, false
	}
	if hdr[1] != socksConnect {
		socksReply(c, socksCommandUnsupported)
		return "", 0, false
	}
	var raw string
	switch hdr[3] {
	case socksIPv4, socksIPv6:
		b := make([]byte, 4)
		if hdr[3] == socksIPv6 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(br, b); err != nil {
			return "", 0, false
		}
		addr, _ := netip.AddrFromSlice(b)
		raw = addr.String()
	case socksDomain:
		n, err := br.ReadByte()
		if err != nil {
			return "", 0, false
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", 0, false
		}
		raw = string(b)
	default:
		socksReply(c, socksAddrUnsupported)
		return "", 0, false
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return "", 0, false
	}
	port = int(pb[0])<<8 | int(pb[1])
	host, err := normalizeHost(raw)
	if err != nil || port == 0 {
		socksReply(c, socksHostUnreachable)
		return "", 0, false
	}
	return host, port, true
}

// decideWatching asks the Decider while watching the client: if it hangs
// up, cancel ends ctx and so the Decider's wait. Whatever the client sends
// meanwhile stays in br.
func (s *Server) decideWatching(ctx context.Context, cancel context.CancelFunc, c net.Conn, br *bufio.Reader, host string, port int) Verdict {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := br.Peek(1); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			cancel()
		}
	}()
	v := s.decide(ctx, host, port, "socks5")
	c.SetReadDeadline(aLongTimeAgo)
	<-done
	c.SetReadDeadline(time.Time{})
	return v
}

// socksReply writes a reply with a zero bound address: the proxy's own
// address is of no use inside the sandbox.
func socksReply(c net.Conn, code byte) error {
	_, err := c.Write([]byte{socksVersion, code, 0, socksIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

// dialReply maps a dial error to a SOCKS reply.
func dialReply(err error) byte {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksConnRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return socksNetUnreachable
	case errors.As(err, &dnsErr), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, os.ErrDeadlineExceeded):
		return socksHostUnreachable
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return socksHostUnreachable
	}
	return socksGeneralFailure
}
