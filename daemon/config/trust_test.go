package config

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

func TestTrust(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(t.TempDir(), "proj")
	sub := filepath.Join(proj, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	tr := NewTrust(home)
	if tr.Trusted(proj) || tr.Trusted(sub) {
		t.Fatal("trusted before any trust")
	}
	if l, err := tr.List(); err != nil || len(l) != 0 {
		t.Fatalf("List = %v, %v; want empty", l, err)
	}
	canon, already, err := tr.Trust(link, false) // a symlink is trusted as its target
	if err != nil || already {
		t.Fatalf("Trust = %q, %v, %v", canon, already, err)
	}
	realProj, _ := filepath.EvalSymlinks(proj)
	if canon != realProj {
		t.Errorf("canonical %q, want %q", canon, realProj)
	}
	for _, d := range []string{proj, sub, link, filepath.Join(sub, "not-yet-created")} {
		if !tr.Trusted(d) {
			t.Errorf("%s not trusted", d)
		}
	}
	if tr.Trusted(filepath.Dir(proj)) || tr.Trusted(proj+"x") {
		t.Error("a parent or a sibling with the same prefix is trusted")
	}
	if _, already, _ := tr.Trust(sub, false); !already {
		t.Error("a child of a trusted dir is not reported as already trusted")
	}
	// Another process's view (a fresh store) sees the change.
	if !NewTrust(home).Trusted(sub) {
		t.Error("a fresh store does not see the trust")
	}
	// Untrusting a child that is not listed keeps it trusted by the parent.
	_, removed, by, err := tr.Untrust(sub)
	if err != nil || removed || by != realProj {
		t.Errorf("Untrust(sub) = %v, %q, %v", removed, by, err)
	}
	_, removed, by, err = tr.Untrust(proj)
	if err != nil || !removed || by != "" {
		t.Errorf("Untrust(proj) = %v, %q, %v", removed, by, err)
	}
	if tr.Trusted(sub) {
		t.Error("still trusted after untrust")
	}
	fi, err := os.Stat(tr.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("trust file mode: %v, %v", fi, err)
	}
}

func TestTrustConcurrent(t *testing.T) {
	home := t.TempDir()
	base := t.TempDir()
	var want []string
	var wg sync.WaitGroup
	for i := range 10 {
		d := filepath.Join(base, "p"+string(rune('a'+i)))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		want = append(want, d)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine has its own store, as separate processes would.
			if _, _, err := NewTrust(home).Trust(d, false); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := NewTrust(home).List()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("trusted %v, want %v", got, want)
	}
}

func TestTrustBadFile(t *testing.T) {
	home := t.TempDir()
	tr := NewTrust(home)
	if err := os.MkdirAll(filepath.Dir(tr.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tr.Path(), []byte(`{"trusted": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	if tr.Trusted("/") {
		t.Error("a broken trust file trusts something")
	}
	if _, err := tr.List(); err == nil {
		t.Error("List of a broken file gives no error")
	}
	if _, _, err := tr.Trust(home, false); err == nil {
		t.Error("Trust over a broken file does not fail")
	}
	if b, _ := os.ReadFile(tr.Path()); string(b) != `{"trusted": [` {
		t.Errorf("broken file was changed: %q", b)
	}
}
