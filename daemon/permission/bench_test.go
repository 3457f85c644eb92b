package permission

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/shell"
)

// BenchmarkDecideCompoundBash decides a 5-part compound Bash command (its
// Access built once by the real Bash tool) against 50 rules: every stage
// runs and every part is matched against every rule (issue 4: ≤ 50 µs).
func BenchmarkDecideCompoundBash(b *testing.B) {
	env := tooltest.New(b)
	command := "npm run build && npm test -- --watch=false | tee test.log; git status && make lint 2>&1"
	bash := shell.New(nil).Tools()[0]
	input, _ := json.Marshal(map[string]string{"command": command})
	acc, err := bash.CheckPermission(context.Background(), &tool.Call{Name: "Bash", Input: input, Env: env})
	if err != nil {
		b.Fatal(err)
	}
	if len(acc.Commands) != 0 && len(acc.Commands) != 5 {
		b.Fatalf("commands %q: want 5 parts", acc.Commands)
	}
	if len(acc.Commands) == 0 { // until the Bash tool splits commands
		acc.Commands = []string{"npm run build", "npm test -- --watch=false", "tee test.log", "git status", "make lint"}
	}
	var rs []string
	for i := 0; i < 14; i++ {
		rs = append(rs, fmt.Sprintf("deny:Bash(tool%d *)", i), fmt.Sprintf("ask:Bash(cmd%d:*)", i))
	}
	for i := 0; i < 6; i++ {
		rs = append(rs, fmt.Sprintf("deny:Read(./secret%d/**)", i), fmt.Sprintf("deny:Edit(//etc/app%d/**)", i))
	}
	for i := 0; i < 4; i++ {
		rs = append(rs, fmt.Sprintf("allow:Bash(other%d *)", i))
	}
	rs = append(rs, "allow:Bash(npm run:*)", "allow:Bash(npm test *)", "allow:Bash(tee *)", "allow:Bash(git status)", "allow:Bash(make *)", "allow:Bash(grep *)")
	if len(rs) != 50 {
		b.Fatal(len(rs))
	}
	r := Request{Tool: "Bash", Mode: ModeDefault, Attrs: bash.Attributes(input), Access: acc, Rules: testRules(b, rs...), Cwd: env.Root, Root: env.Root, Home: "/home/u"}
	e := NewEngine()
	if d := e.Decide(context.Background(), r); d.Verdict != Allow || d.By != ByRule {
		b.Fatalf("got %s by %s: %s", d.Verdict, d.By, d.Reason)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e.Decide(context.Background(), r)
	}
}
