package udiff

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a\n"}},
		{"a\nb", []string{"a\n", "b"}},
		{"a\r\nb\r\n", []string{"a\r\n", "b\r\n"}},
		{"\n\n", []string{"\n", "\n"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Split(tt.in)); diff != "" {
			t.Errorf("Split(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestUnifiedGolden(t *testing.T) {
	tests := []struct {
		name, a, b, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"change middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n",
			"--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n"},
		{"create", "", "x\ny\n", "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"delete all", "x\n", "", "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n"},
		{"no final newline", "a\nb", "a\nc",
			"--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"add final newline", "a", "a\n",
			"--- a\n+++ b\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"},
		{"crlf shown without cr", "a\r\nb\r\n", "a\r\nc\r\n", "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\nY\n",
			"--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+Y\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Unified("a", "b", tt.a, tt.b, 3)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// lcs is the textbook dynamic program, the oracle for minimality.
func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func randomLines(r *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a'+r.IntN(4))) + "\n"
	}
	return out
}

func TestDiffIsMinimalAndCorrect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 500 {
		a := randomLines(r, r.IntN(30))
		b := randomLines(r, r.IntN(30))
		script := Diff(a, b)
		var gotA, gotB []string
		changes := 0
		for _, l := range script {
			if l.Op != Insert {
				gotA = append(gotA, l.Text)
			}
			if l.Op != Delete {
				gotB = append(gotB, l.Text)
			}
			if l.Op != Equal {
				changes++
			}
		}
		if !cmp.Equal(a, gotA, cmpEmpty) || !cmp.Equal(b, gotB, cmpEmpty) {
			t.Fatalf("iteration %d: script does not reproduce the inputs", iter)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); changes != want {
			t.Fatalf("iteration %d: %d changes, the minimum is %d", iter, changes, want)
		}
	}
}

var cmpEmpty = cmp.Comparer(func(x, y []string) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
})

func TestDiffOverEditDistanceStillCorrect(t *testing.T) {
	var a, b []string
	for i := range MaxEditDistance + 500 {
		a = append(a, "a"+strings.Repeat("x", i%7)+"\n")
		b = append(b, "b"+strings.Repeat("y", i%5)+"\n")
	}
	a = append([]string{"same\n"}, a...)
	b = append([]string{"same\n"}, b...)
	script := Diff(a, b)
	var gotB []string
	for _, l := range script {
		if l.Op != Delete {
			gotB = append(gotB, l.Text)
		}
	}
	if !cmp.Equal(b, gotB) {
		t.Fatal("fallback script does not produce b")
	}
}

// TestUnifiedAppliesWithPatch checks the rendered diffs against patch(1).
func TestUnifiedAppliesWithPatch(t *testing.T) {
	patch, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("patch(1) not installed")
	}
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	for iter := range 40 {
		a := strings.Join(randomLines(r, 1+r.IntN(40)), "")
		b := strings.Join(randomLines(r, 1+r.IntN(40)), "")
		if iter%3 == 0 {
			b = strings.TrimSuffix(b, "\n")
		}
		d := Unified("f", "f", a, b, 3)
		if d == "" {
			continue
		}
		f := filepath.Join(dir, "f")
		if err := os.WriteFile(f, []byte(a), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(patch, "-s", "--no-backup-if-mismatch", f)
		cmd.Stdin = strings.NewReader(d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("iteration %d: patch: %v\n%s\ndiff:\n%s", iter, err, out, d)
		}
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != b {
			t.Fatalf("iteration %d: patched file differs\n(-want +got):\n%s", iter, cmp.Diff(b, string(got)))
		}
	}
}

func BenchmarkDiffSmallEdit(b *testing.B) {
	var lines []string
	for i := range 5000 {
		lines = append(lines, strings.Repeat("x", i%60)+"\n")
	}
	edited := append([]string(nil), lines...)
	edited[2500] = "changed\n"
	for b.Loop() {
		Hunks(Diff(lines, edited), 3)
	}
}
