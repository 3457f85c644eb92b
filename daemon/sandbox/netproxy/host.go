package netproxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// maxHostLen is the longest DNS name accepted (RFC 1035, without the
// trailing dot).
const maxHostLen = 253

// normalizeHost returns host as the Decider sees it: lower-case, without a
// trailing dot or IPv6 brackets. IP literals stay as given (lower-cased);
// anything else must be a DNS name of letters, digits, '-' and '_'. A name
// whose last label is numeric (2130706433, 0x7f.1, 010.0.0.1) is refused:
// a resolver may read it as an IP address the Decider never saw.
func normalizeHost(host string) (string, error) {
	h := host
	bracketed := strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]")
	if bracketed {
		h = h[1 : len(h)-1]
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "" {
		return "", errors.New("the host is empty")
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Zone() != "" {
			return "", fmt.Errorf("host %q is an IPv6 address with a zone, which the sandbox does not reach", host)
		}
		if bracketed && !ip.Is6() {
			return "", fmt.Errorf("host %q puts an IPv4 address in brackets", host)
		}
		return h, nil
	}
	if bracketed || strings.Contains(h, ":") {
		return "", fmt.Errorf("host %q is not a valid IPv6 address", host)
	}
	if err := checkName(h); err != nil {
		return "", fmt.Errorf("host %q %s", host, err)
	}
	return h, nil
}

// checkName reports what makes the lower-case name h no DNS name, as the
// end of a sentence ("is ..."), or nil.
func checkName(h string) error {
	if len(h) > maxHostLen {
		return fmt.Errorf("is longer than %d characters", maxHostLen)
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return errors.New("has an empty or over-long label")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("contains %q, which no host name has", c)
			}
		}
	}
	last := labels[len(labels)-1]
	if strings.HasPrefix(last, "0x") || strings.Trim(last, "0123456789") == "" {
		return errors.New("is neither an IP address nor a host name (its last label is numeric)")
	}
	return nil
}

// splitTarget splits a request's host[:port] into the normalised host and
// the port. A missing port is defPort; defPort 0 makes the port required.
// explicit reports whether the port was given.
func splitTarget(hostport string, defPort int) (host string, port int, explicit bool, err error) {
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		if defPort == 0 {
			return "", 0, false, fmt.Errorf("target %q has no port; give host:port", hostport)
		}
		h, p = hostport, ""
	}
	if p == "" {
		port = defPort
	} else {
		explicit = true
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, false, fmt.Errorf("target %q has an invalid port", hostport)
		}
		port = n
	}
	if host, err = normalizeHost(h); err != nil {
		return "", 0, false, err
	}
	return host, port, explicit, nil
}

// hostPort joins a normalised host and a port for dialing.
func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// MatchDomain reports whether host matches pattern, an entry of Claude
// Code's sandbox.network.allowedDomains or deniedDomains:
//
//   - "example.com" matches example.com only;
//   - "*.example.com" matches every subdomain (api.example.com,
//     a.b.example.com) but not example.com itself: list both for both;
//   - "*" alone, or a '*' anywhere else, matches nothing: there is no
//     "allow everything" pattern (CheckDomainPattern says so to a person).
//
// Both are compared case-insensitively, without a trailing dot or IPv6
// brackets. An IP address matches only an identical IP pattern, never a
// wildcard.
func MatchDomain(pattern, host string) bool {
	p, h := foldHost(pattern), foldHost(host)
	if p == "" || h == "" {
		return false
	}
	if base, ok := strings.CutPrefix(p, "*."); ok {
		if base == "" || strings.Contains(base, "*") {
			return false
		}
		if _, err := netip.ParseAddr(h); err == nil {
			return false // an address has no subdomains
		}
		return len(h) > len(base)+1 && strings.HasSuffix(h, "."+base)
	}
	return !strings.Contains(p, "*") && h == p
}

// CheckDomainPattern says what is wrong with an allowedDomains or
// deniedDomains entry, in a sentence for the person who wrote it, or
// returns nil when MatchDomain can match it.
func CheckDomainPattern(pattern string) error {
	p := foldHost(pattern)
	base, wild := strings.CutPrefix(p, "*.")
	switch {
	case p == "":
		return errors.New("the domain is empty; give a name such as example.com or *.example.com")
	case p == "*":
		return errors.New(`domain "*" is not supported: the sandbox has no allow-everything pattern; list the domains, or *.example.com for the subdomains of one`)
	case strings.Contains(base, "*"):
		return fmt.Errorf("domain %q puts '*' where it is not supported; a wildcard is only a leading \"*.\" (*.example.com: the subdomains, not example.com)", pattern)
	case wild && base == "":
		return fmt.Errorf("domain %q has nothing after \"*.\"; write *.example.com", pattern)
	}
	if _, err := netip.ParseAddr(base); err == nil {
		if wild {
			return fmt.Errorf("domain %q puts a wildcard on an IP address; list the address itself", pattern)
		}
		return nil
	}
	if err := checkName(base); err != nil {
		return fmt.Errorf("domain %q %s", pattern, err)
	}
	return nil
}

// foldHost lower-cases s and strips spaces, IPv6 brackets and one
// trailing dot, without validating it.
func foldHost(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	return strings.TrimSuffix(s, ".")
}
