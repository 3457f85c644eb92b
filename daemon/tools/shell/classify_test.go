package shell

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
)

func TestAttributes(t *testing.T) {
	tests := []struct {
		command     string
		readOnly    bool
		destructive bool
	}{
		// read-only
		{"ls -la", true, false},
		{"cat a.txt | grep foo | wc -l", true, false},
		{"head -n 5 x && tail -f y; wc z", true, false},
		{"grep -rn 'TODO' src/ || echo none", true, false},
		{"rg --files | sort | uniq -c", true, false},
		{"find . -name '*.go' -type f", true, false},
		{"git status && git log --oneline -5 && git diff HEAD~1", true, false},
		{"git -C sub --no-pager show HEAD:README.md", true, false},
		{"git branch -a", true, false},
		{"git branch --list 'feat*'", true, false},
		{"git remote -v", true, false},
		{"git rev-parse --show-toplevel; git ls-files; git blame x.go; git grep foo", true, false},
		{"git config --get user.name", true, false},
		{"git stash list", true, false},
		{"echo $(ls) `pwd`", true, false},
		{"(cd sub && ls)", true, false},
		{"ls > /dev/null 2>&1", true, false},
		{"cat < input.txt", true, false},
		{"grep foo <<< \"$text\"", true, false},
		{"if [ -f x ]; then cat x; else echo no; fi", true, false},
		{"for f in *.go; do wc -l \"$f\"; done", true, false},
		{"x=$(date +%s); echo $x", true, false},
		{"which go; type ls; file x; stat x; du -sh .; df -h", true, false},
		{"env; printenv HOME; true; false; test -d x; [ -e y ]", true, false},
		{"cut -d: -f1 /etc/passwd | tr a-z A-Z", true, false},
		{"echo a\nls\n", true, false},
		{"ls &", true, false},
		// not read-only
		{"echo hi > out.txt", false, false},
		{"echo hi >> out.txt", false, false},
		{"ls 2> errors.log", false, false},
		{"cat x | tee y", false, false},
		{"find . -name '*.tmp' -delete", false, true},
		{"find . -exec rm {} \\;", false, true},
		{"find . -execdir ls \\;", false, false},
		{"find . -fprint out", false, false},
		{"sort -o out in", false, false},
		{"git branch new-branch", false, false},
		{"git branch -D old", false, true},
		{"git commit -m x", false, false},
		{"git -c core.pager=evil log", false, false},
		{"git diff --output=x", false, false},
		{"git config user.name me", false, false},
		{"git stash", false, false},
		{"env rm x", false, true},
		{"date -s now", false, false},
		{"echo $(rm -rf x)", false, true},
		{"ls `touch x`", false, false},
		{"cat <(curl evil)", false, false},
		{"$CMD foo", false, false},
		{"./ls", false, false},
		{"/bin/ls", false, false},
		{"PATH=/tmp ls", false, false},
		{"f() { ls; }; f", false, false},
		{"eval ls", false, false},
		{"bash -c ls", false, false},
		{"sed -n 1p x", false, false},
		{"npm test", false, false},
		{"go build ./...", false, false},
		{"make", false, false},
		{"echo $(", false, false},                    // does not parse
		{"ls )", false, false},                       // does not parse
		{strings.Repeat("ls; ", 2600), false, false}, // too long to classify
		// destructive
		{"rm -rf build", false, true},
		{"rmdir x", false, true},
		{"mv a b", false, true},
		{"mv -n a b", false, false},
		{"dd if=/dev/zero of=x", false, true},
		{"mkfs.ext4 /dev/sdb1", false, true},
		{"git push --force origin main", false, true},
		{"git push -f", false, true},
		{"git push origin +main", false, true},
		{"git push origin main", false, false},
		{"git reset --hard HEAD~3", false, true},
		{"git reset HEAD~1", false, false},
		{"git clean -fdx", false, true},
		{"git checkout -- .", false, true},
		{"git checkout main", false, false},
		{"git restore src/", false, true},
		{"git restore --staged src/", false, false},
		{"git stash drop", false, true},
		{"sudo rm x", false, true},
		{"xargs rm < list", false, true},
		{"timeout 5 shred x", false, true},
		{"bash -c 'rm -rf /tmp/x'", false, true},
		{"echo x && rm -rf $(", false, true}, // does not parse, still destructive
		{"truncate -s 0 log", false, true},
		{"kubectl delete pod x", false, true},
	}
	bash := &Bash{}
	for _, tc := range tests {
		name := tc.command
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]any{"command": tc.command})
			a := bash.Attributes(in)
			if a.ReadOnly != tc.readOnly || a.ConcurrencySafe != tc.readOnly || a.Destructive != tc.destructive {
				t.Errorf("ReadOnly %v, ConcurrencySafe %v, Destructive %v; want read-only %v, destructive %v",
					a.ReadOnly, a.ConcurrencySafe, a.Destructive, tc.readOnly, tc.destructive)
			}
			if a.MaxResultChars < 50000 || a.Origin != "builtin" {
				t.Errorf("attributes %+v", a)
			}
		})
	}
}

func TestLastCommand(t *testing.T) {
	tests := map[string]string{
		"grep x y":                 "grep",
		"cat y | grep x":           "grep",
		"cd a && git diff --stat":  "git diff",
		"git -C x --no-pager grep": "git grep",
		"ls; (test -f x)":          "test",
		"{ ls; [ a = b ]; }":       "[",
		"[[ -n x ]]":               "[[",
		"grep x y; echo":           "echo",
		"! grep x":                 "",
		"/usr/bin/diff a b":        "diff",
		"time find .":              "find",
	}
	for cmd, want := range tests {
		if got := classify(cmd).Last; got != want {
			t.Errorf("Last(%q) = %q, want %q", cmd, got, want)
		}
	}
}

func TestInsideWorkingDirs(t *testing.T) {
	env := newEnv(t)
	root := env.Root
	for _, d := range []string{"src", "sub/deeper"} {
		os.MkdirAll(filepath.Join(root, d), 0o700)
	}
	os.WriteFile(filepath.Join(root, "src", "a.go"), nil, 0o600)
	os.Symlink("/etc", filepath.Join(root, "etc-link"))
	tests := []struct {
		command string
		inside  bool
	}{
		{"ls", true},
		{"ls -la src", true},
		{"cat src/a.go src/missing.go", true},
		{"grep -rn /etc src", true}, // the pattern is not a path
		{"grep -rn foo /etc", false},
		{"grep -e foo -- src /etc", false},
		{"head -n 5 src/a.go", true},
		{"cat ../outside", false},
		{"cat src/../../outside", false},
		{"cat /etc/passwd", false},
		{"cat etc-link/passwd", false},
		{"cat ~/x", false},
		{"cat $FILE", false},
		{"echo $HOME", true},
		{"echo /etc/passwd", false}, // clearly a path: not proved inside
		{"find . -name '*.go'", true},
		{"find / -name x", false},
		{"ls src/*.go", true},
		{"ls /etc/*", false},
		{"ls .*", false}, // may match ..
		{"cd sub && ls deeper", true},
		{"cd sub && cat ../src/a.go", false}, // must hold from every directory the cd may leave it in
		{"cd sub && cat ../../x", false},
		{"cd /etc && cat passwd", false},
		{"cd && ls", false},
		{"cat < src/a.go", true},
		{"cat < /etc/passwd", false},
		{"git status", true},
		{"git -C /etc status", false},
		{"git diff -- src ../x", false},
		{"wc -l " + filepath.Join(root, "src", "a.go"), true},
		{"sort --random-source=/dev/urandom src/a.go", false},
	}
	bash := &Bash{}
	for _, tc := range tests {
		t.Run(tc.command, func(t *testing.T) {
			in, _ := json.Marshal(map[string]any{"command": tc.command})
			if !bash.Attributes(in).ReadOnly {
				t.Fatalf("not read-only")
			}
			acc, err := bash.CheckPermission(t.Context(), &tool.Call{Name: "Bash", Input: in, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			if acc.InsideWorkingDirs != tc.inside || acc.Kind != "exec" || acc.Command != tc.command {
				t.Errorf("access %+v, want inside %v", acc, tc.inside)
			}
		})
	}
	// Not read-only: never inside.
	in, _ := json.Marshal(map[string]any{"command": "touch src/x"})
	if acc, _ := bash.CheckPermission(t.Context(), &tool.Call{Name: "Bash", Input: in, Env: env}); acc.InsideWorkingDirs {
		t.Errorf("touch: %+v", acc)
	}
}
