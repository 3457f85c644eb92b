package shell

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// TestAnalysisBound: a 9.9 k-character command of nested $(…) (issue 18,
// fault 4) lists a bounded text of commands, the outer ones first, and is
// always asked. (Its daemon CPU is measured by TestFaultHugeCommand.)
func TestAnalysisBound(t *testing.T) {
	env := newEnv(t)
	n := 1240
	cmd := strings.Repeat("echo $(", n) + "x" + strings.Repeat(")", n)
	in, _ := json.Marshal(map[string]any{"command": cmd})
	c := &tool.Call{ID: "toolu_huge", Name: "Bash", Input: in, Env: env}
	acc, err := (&Bash{}).CheckPermission(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, c := range acc.Commands {
		total += len(c)
	}
	if total > maxCommandsBytes {
		t.Errorf("Commands hold %d bytes, want at most %d", total, maxCommandsBytes)
	}
	if !strings.Contains(acc.AlwaysAsk, "too complex to analyse") {
		t.Errorf("AlwaysAsk = %q, want the bound named", acc.AlwaysAsk)
	}
	if len(acc.Commands) == 0 || !strings.HasPrefix(acc.Commands[0], "echo") {
		t.Errorf("Commands = %.80q…, want the outer commands kept", acc.Commands)
	}
}

// TestAnalysisBoundKeepsWholeCommand: a command too long to analyse is
// still listed whole, past the bound on Commands, so that deny rules see
// it.
func TestAnalysisBoundKeepsWholeCommand(t *testing.T) {
	env := newEnv(t)
	cmd := "rm -rf /tmp/x; echo " + strings.Repeat("y", 2*maxCommandsBytes)
	in, _ := json.Marshal(map[string]any{"command": cmd})
	acc, err := (&Bash{}).CheckPermission(context.Background(), &tool.Call{ID: "toolu_long", Name: "Bash", Input: in, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if len(acc.Commands) != 1 || acc.Commands[0] != cmd || acc.AlwaysAsk == "" {
		t.Fatalf("Commands = %d of %d bytes, AlwaysAsk %q; want the whole command, asked", len(acc.Commands), len(cmd), acc.AlwaysAsk)
	}
}
