package netproxy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalizeHost(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" is an error
	}{
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"api_v2.example.com", "api_v2.example.com"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"localhost", "localhost"},
		{"127.0.0.1", "127.0.0.1"},
		{"[::1]", "::1"},
		{"[FD00::AB]", "fd00::ab"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1"}, // as given: the Decider's to refuse
		{"fd00::1", "fd00::1"},
		{"", ""},
		{".", ""},
		{"example..com", ""},
		{"exa mple.com", ""},
		{"exa%2ample.com", ""},
		{"bücher.example", ""},
		{"2130706433", ""},
		{"0x7f.1", ""},
		{"0177.0.0.1", ""},
		{"1.2.3", ""},
		{"[127.0.0.1]", ""},
		{"[example.com]", ""},
		{"fe80::1%eth0", ""},
		{"fd00::1::2", ""},
		{strings.Repeat("a", 64) + ".com", ""},
		{strings.Repeat("abcdefg.", 32) + "com", ""},
	} {
		got, err := normalizeHost(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("normalizeHost(%q) = %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("normalizeHost(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestSplitTarget(t *testing.T) {
	for _, tc := range []struct {
		in       string
		def      int
		host     string
		port     int
		explicit bool
		bad      bool
	}{
		{in: "example.com:443", host: "example.com", port: 443, explicit: true},
		{in: "[::1]:8080", host: "::1", port: 8080, explicit: true},
		{in: "Example.com", def: 80, host: "example.com", port: 80},
		{in: "[fd00::1]", def: 80, host: "fd00::1", port: 80},
		{in: "example.com", bad: true},
		{in: "example.com:0", def: 80, bad: true},
		{in: "example.com:65536", def: 80, bad: true},
		{in: "example.com:http", def: 80, bad: true},
	} {
		host, port, explicit, err := splitTarget(tc.in, tc.def)
		if tc.bad {
			if err == nil {
				t.Errorf("splitTarget(%q, %d) = %q %d, want an error", tc.in, tc.def, host, port)
			}
			continue
		}
		if err != nil || host != tc.host || port != tc.port || explicit != tc.explicit {
			t.Errorf("splitTarget(%q, %d) = %q %d %v %v, want %q %d %v", tc.in, tc.def, host, port, explicit, err, tc.host, tc.port, tc.explicit)
		}
	}
}

func TestMatchDomain(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "EXAMPLE.com.", true},
		{"Example.COM", "example.com", true},
		{"example.com", "api.example.com", false},
		{"example.com", "badexample.com", false},
		{"*.example.com", "api.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.Example.com", "API.example.COM", true},
		{"*.example.com", "example.com", false}, // subdomains only
		{"*.example.com", "badexample.com", false},
		{"*.example.com", ".example.com", false},
		{"*", "example.com", false}, // no allow-everything pattern
		{"*.", "example.com", false},
		{"*example.com", "badexample.com", false},
		{"api.*.com", "api.example.com", false},
		{"*.*.example.com", "a.b.example.com", false},
		{"", "", false},
		{"127.0.0.1", "127.0.0.1", true},
		{"[::1]", "::1", true},
		{"::1", "[::1]", true},
		{"*.0.0.1", "127.0.0.1", false}, // an address has no subdomains
		{"*.1", "fd00::1", false},
	} {
		if got := MatchDomain(tc.pattern, tc.host); got != tc.want {
			t.Errorf("MatchDomain(%q, %q) = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}

func TestCheckDomainPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		wantErr string // "" for a valid pattern
	}{
		{"example.com", ""},
		{"*.example.com", ""},
		{"EXAMPLE.com.", ""},
		{"localhost", ""},
		{"127.0.0.1", ""},
		{"::1", ""},
		{"*", "no allow-everything pattern"},
		{"", "empty"},
		{"*.", "no allow-everything pattern"}, // "*." is "*" with a trailing dot
		{"*..", `nothing after "*."`},
		{"*example.com", "'*' where it is not supported"},
		{"api.*.com", "'*' where it is not supported"},
		{"*.*.example.com", "'*' where it is not supported"},
		{"*.127.0.0.1", "wildcard on an IP address"},
		{"exa mple.com", "contains"},
		{"https://example.com", "contains"},
	} {
		err := CheckDomainPattern(tc.pattern)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("CheckDomainPattern(%q) = %v, want nil", tc.pattern, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("CheckDomainPattern(%q) = %v, want an error containing %q", tc.pattern, err, tc.wantErr)
		}
	}
}

func TestBlockedMessage(t *testing.T) {
	if got := blockedMessage("denied.test", "not in allowedDomains"); got != "blocked by the sandbox: domain denied.test (not in allowedDomains)" {
		t.Errorf("blockedMessage = %q", got)
	}
	if got := blockedMessage("denied.test", ""); got != "blocked by the sandbox: domain denied.test" {
		t.Errorf("blockedMessage without a reason = %q", got)
	}
	if got := headerSafe("a\r\nb\x00c"); got != "a  b c" {
		t.Errorf("headerSafe = %q", got)
	}
}

func TestEnv(t *testing.T) {
	want := []string{
		"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128",
		"http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
		"npm_config_proxy=http://127.0.0.1:3128", "npm_config_https_proxy=http://127.0.0.1:3128",
		"ALL_PROXY=socks5h://127.0.0.1:1080", "all_proxy=socks5h://127.0.0.1:1080",
		"NO_PROXY=", "no_proxy=", "npm_config_noproxy=",
	}
	if diff := cmp.Diff(want, Env(3128, 1080, false)); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
	local := Env(3128, 0, true)
	wantLocal := append(want[:6:6], "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1", "npm_config_noproxy=localhost,127.0.0.1,::1")
	if diff := cmp.Diff(wantLocal, local); diff != "" {
		t.Errorf("Env with local binding and no SOCKS port (-want +got):\n%s", diff)
	}
}

func TestListenBridgeLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "localhost:0", "192.0.2.1:0", "nonsense"} {
		if b, err := ListenBridge(addr, "/tmp/x.sock"); err == nil {
			b.Close()
			t.Errorf("ListenBridge(%q) listened", addr)
		}
	}
	if _, err := ListenBridge("127.0.0.1:0", ""); err == nil {
		t.Error("ListenBridge without a socket path listened")
	}
	b, err := ListenBridge("[::1]:0", "/tmp/x.sock")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	b.Close()
}
