package daemon

import (
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/permission"
)

// A skill's grant also ends on its own after grantLifetime when no client
// ends the turn.
func TestGrantsExpire(t *testing.T) {
	r, err := permission.ParseRule("Bash(touch:*)")
	if err != nil {
		t.Fatal(err)
	}
	p := &perms{grants: map[string][]grant{
		"s": {{rule: r, until: time.Now().Add(-time.Millisecond)}, {rule: r, until: time.Now().Add(grantLifetime)}},
	}}
	if got := p.activeGrants("s"); len(got) != 1 {
		t.Fatalf("active grants: %v, want the unexpired one", got)
	}
	p.grants["s"][0].until = time.Now().Add(-time.Millisecond)
	if got := p.activeGrants("s"); len(got) != 0 {
		t.Fatalf("expired grants still active: %v", got)
	}
	if _, ok := p.grants["s"]; ok {
		t.Error("a session without grants keeps an entry")
	}
}
