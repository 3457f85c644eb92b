package shell

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// TestAccessRecursiveReads checks the directories read whole: they are
// RecursiveReads and Reads; files and listings are not.
func TestAccessRecursiveReads(t *testing.T) {
	env, outside := accessEnv(t)
	expand := pathExpander(env, outside)
	for _, tc := range []struct {
		command string
		trees   []string
		reads   []string // nil: the same as trees
	}{
		// grep and its kin: the option anywhere, and the current directory without an operand
		{"grep -r pw .", []string{"R"}, nil},
		{"grep -R pw secrets", []string{"R/secrets"}, nil},
		{"grep -rh pw", []string{"R"}, nil},
		{"grep pw -r .", []string{"R"}, nil},
		{"grep -rn --include='*.go' pw src docs", []string{"R/src", "R/docs"}, nil},
		{"grep --recursive -e pw", []string{"R"}, nil},
		{"grep -d recurse pw src", []string{"R/src"}, nil},
		{"grep --directories=recurse pw src", []string{"R/src"}, nil},
		{"egrep -rl 'a|b' src", []string{"R/src"}, nil},
		{"grep -r pw src/a.go", nil, []string{"R/src/a.go"}},
		{"grep pw src", nil, []string{"R/src"}},
		{"cd src && grep -r pw", []string{"R", "R/src"}, nil},
		{"grep -r pw out", []string{"O"}, nil},
		// always recursive
		{"rg foo", []string{"R"}, nil},
		{"rg -n foo secrets docs", []string{"R/secrets", "R/docs"}, nil},
		{"rg --files src", []string{"R/src"}, nil},
		{"rg foo src/a.go", nil, []string{"R/src/a.go"}},
		{"ag foo", []string{"R"}, nil},
		{"ag -l foo src", []string{"R/src"}, nil},
		{"ack foo docs", []string{"R/docs"}, nil},
		// copies and comparisons
		{"cp -r secrets /tmp/s", []string{"R/secrets"}, nil},
		{"cp -a src docs /tmp", []string{"R/src", "R/docs"}, nil},
		{"cp src/a.go /tmp", nil, []string{"R/src/a.go"}},
		{"diff -r src docs", []string{"R/src", "R/docs"}, nil},
		{"diff src/a.go src/b.go", nil, []string{"R/src/a.go", "R/src/b.go"}},
		{"diff --from-file=secrets/key src/a.go src/b.go", nil, []string{"R/secrets/key", "R/src/a.go", "R/src/b.go"}},
		{"diff --to-file secrets/key src/a.go", nil, []string{"R/secrets/key", "R/src/a.go"}},
		// find running commands, and listers piped into xargs
		{"find . -type f -exec cat {} +", []string{"R"}, nil},
		{"find secrets src -name '*' -execdir grep pw {} \\;", []string{"R/secrets", "R/src"}, nil},
		{"find -L docs -ok cat {} \\;", []string{"R/docs"}, nil},
		{"find . -name '*.go'", nil, nil},
		{"find secrets -name k | xargs cat", []string{"R/secrets"}, nil},
		{"find . -print0 | sort -z | xargs -0 grep pw", []string{"R"}, nil},
		{"fd key secrets | xargs cat", []string{"R/secrets"}, nil},
		{"git ls-files | xargs cat", []string{"R"}, nil},
		{"find . | wc -l", nil, nil},
		// archives and syncs
		{"tar czf out.tgz src secrets", []string{"R/src", "R/secrets"}, nil},
		{"tar -cf - docs | cat", []string{"R/docs"}, nil},
		{"tar --create --file=a.tar -C src .", []string{"R/src"}, nil},
		{"tar -C secrets -cz . | base64", []string{"R/secrets"}, nil},
		{"tar xzf out.tgz", nil, nil},
		{"tar tvf out.tgz", nil, nil},
		{"zip -r out.zip secrets", []string{"R/secrets"}, nil},
		{"zip out.zip src/a.go", nil, []string{"R/src/a.go"}},
		{"rsync -a secrets/ host:backup/", []string{"R/secrets"}, nil},
		{"rsync -av --exclude '*.o' src docs /tmp/x", []string{"R/src", "R/docs"}, nil},
		{"rsync host:x/ docs", nil, nil},
		{"scp -r secrets host:", []string{"R/secrets"}, nil},
		// listings are not content
		{"ls -R secrets; du -sh .; tree src", nil, nil},
		{"grep -r pw \"$DIR\"", nil, nil},
	} {
		acc := bashAccess(t, env, tc.command)
		reads := tc.reads
		if reads == nil {
			reads = tc.trees
		}
		if diff := cmp.Diff(expand(tc.trees), acc.RecursiveReads, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%q recursive reads (-want +got):\n%s", tc.command, diff)
		}
		for _, p := range expand(reads) {
			if !slices.Contains(acc.Reads, p) {
				t.Errorf("%q: Reads = %q, want %s among them", tc.command, acc.Reads, p)
			}
		}
	}
}

// TestAccessGlobBudget checks that a glob too costly to expand names the
// directory before its first pattern, read whole, in bounded time, and
// asks.
func TestAccessGlobBudget(t *testing.T) {
	env, _ := accessEnv(t)
	// More entries than maxGlobEntries: 64 directories of 65 names, made
	// in memory when there is a memory file system (scratchDir).
	deep, err := os.MkdirTemp(scratchDir(), "tackle-glob-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(deep) })
	for i := range 64 {
		dir := filepath.Join(deep, fmt.Sprintf("d%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range maxGlobEntries/64 + 1 {
			if err := os.Symlink("x", filepath.Join(dir, fmt.Sprint(j))); err != nil {
				t.Fatal(err)
			}
		}
	}
	deep = tool.RealPath(deep)
	start := time.Now()
	acc := bashAccess(t, env, "cat "+deep+"/*/* "+deep+"/*/*/*")
	if d := time.Since(start); d > time.Second {
		t.Errorf("the analysis took %v", d)
	}
	if !slices.Contains(acc.RecursiveReads, deep) || !slices.Contains(acc.Reads, deep) || !strings.Contains(acc.AlwaysAsk, "more paths than are checked") {
		t.Errorf("RecursiveReads = %q, Reads = %q, AlwaysAsk = %q; want %s in both, and asked", acc.RecursiveReads, acc.Reads, acc.AlwaysAsk, deep)
	}
	if acc := bashAccess(t, env, "cat src/*.go"); len(acc.RecursiveReads) != 0 || len(acc.Reads) != 2 || acc.AlwaysAsk != "" {
		t.Errorf("a small glob: RecursiveReads = %q, Reads = %q, AlwaysAsk = %q", acc.RecursiveReads, acc.Reads, acc.AlwaysAsk)
	}
}
