package tool

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestResolvedIsEvalSymlinks builds random trees of directories, files,
// FIFOs and symbolic links (absolute and relative, chains, dangling ones,
// loops, links through links) and checks that for every path into them
// resolved gives what filepath.EvalSymlinks gives, and fails where that
// fails (RealPath then resolves the path itself).
func TestResolvedIsEvalSymlinks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	checked := 0
	for tree := range 30 {
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var dirs, names []string
		dirs = append(dirs, base)
		for i := range 40 {
			dir := dirs[rng.IntN(len(dirs))]
			p := filepath.Join(dir, fmt.Sprintf("n%d", i))
			switch k := rng.IntN(10); {
			case k < 3:
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
				dirs = append(dirs, p)
			case k < 5:
				if err := os.WriteFile(p, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			case k < 6:
				if err := syscall.Mkfifo(p, 0o600); err != nil {
					t.Fatal(err)
				}
			default:
				// A link to something that exists, that does not yet (a
				// later name), or never will; relative or absolute.
				target := filepath.Join(dirs[rng.IntN(len(dirs))], fmt.Sprintf("n%d", rng.IntN(50)))
				if rng.IntN(2) == 0 {
					if rel, err := filepath.Rel(dir, target); err == nil {
						target = rel
					}
				}
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			}
			names = append(names, p)
		}
		for _, p := range names {
			for _, q := range []string{p, filepath.Join(p, "n3"), filepath.Join(p, "x", "y")} {
				want, werr := filepath.EvalSymlinks(q)
				got, ok := resolved(q)
				if ok != (werr == nil) || got != want {
					t.Fatalf("tree %d: resolved(%q) = %q, %v; EvalSymlinks: %q, %v", tree, q, got, ok, want, werr)
				}
				checked++
			}
		}
	}
	t.Logf("%d paths", checked)
}

// TestResolvedFIFOAndMissing: a FIFO resolves without blocking (an open
// for reading would wait for a writer), a missing file does not resolve.
func TestResolvedFIFOAndMissing(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, ok := resolved(fifo); !ok || got != fifo {
		t.Errorf("resolved(%q) = %q, %v", fifo, got, ok)
	}
	if got, ok := resolved(filepath.Join(dir, "missing")); ok {
		t.Errorf("a missing file resolved to %q", got)
	}
}

// BenchmarkRealPath resolves a file right below a temporary directory and
// one six directories further down, with RealPath and with EvalSymlinks.
func BenchmarkRealPath(b *testing.B) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	deep := filepath.Join(dir, "home", "src", "project", "internal", "pkg", "sub")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		b.Fatal(err)
	}
	for _, file := range []string{filepath.Join(dir, "file.go"), filepath.Join(deep, "file.go")} {
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			b.Fatal(err)
		}
		depth := strings.Count(file, "/")
		b.Run(fmt.Sprintf("components=%d/RealPath", depth), func(b *testing.B) {
			for b.Loop() {
				RealPath(file)
			}
		})
		b.Run(fmt.Sprintf("components=%d/EvalSymlinks", depth), func(b *testing.B) {
			for b.Loop() {
				if _, err := filepath.EvalSymlinks(file); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
