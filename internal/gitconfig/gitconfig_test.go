package gitconfig

import "testing"

func TestFirst(t *testing.T) {
	data := []byte("# c\n[core]\n\tbare = false\n[Filter \"LFS\"] clean = x\n[diff.bin]\n\ttextconv = \"./t\"\n[broken\n")
	var seen []string
	if got := First(data, func(e Entry) bool { seen = append(seen, e.Name()+"="+e.Value); return false }); got != ErrMalformed {
		t.Errorf("First = %q, want the malformed header", got)
	}
	want := []string{"core.bare=false", "filter.lfs.clean=x", "diff.bin.textconv=./t"}
	if len(seen) != len(want) {
		t.Fatalf("entries %q", seen)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("entry %d = %q, want %q", i, seen[i], want[i])
		}
	}
	if got := First(data, func(e Entry) bool { return e.Key == "textconv" }); got != "diff.bin.textconv" {
		t.Errorf("First = %q", got)
	}
}
