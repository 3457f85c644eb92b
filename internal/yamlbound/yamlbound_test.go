package yamlbound

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

var lim = Limits{Bytes: 1 << 20, Nodes: 10000}

// A billion laughs: each level repeats the one before ten times.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for i := 0; i < levels; i++ {
		name := string(rune('b' + i))
		b.WriteString(name + ": &" + name + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("*" + prev)
		}
		b.WriteString("]\n")
		prev = name
	}
	return b.String()
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		ok        bool
	}{
		{"plain", "name: x\ndescription: does things\ntools: [Read, Grep]\n", true},
		{"a few aliases", "base: &b {type: command, command: true}\nhooks: [*b, *b, *b]\n", true},
		{"merge key", "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  z: 3\n", true},
		{"literal block", "body: |\n  line one\n  line two\n", true},
		{"three levels", laughs(2), true},
		{"nine levels", laughs(8), false},
		{"alias of an unknown anchor", "a: *nope\n", true},
		{"not YAML", "a: [\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.src), lim)
			if (err == nil) != tc.ok {
				t.Fatalf("Check = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// The measure agrees with what decoding builds: the expanded document's
// scalars, counted by the decoder, fit in what Check measured.
func TestCheckMatchesDecoding(t *testing.T) {
	src := laughs(3) // 10,000 "lol"s
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	var count func(any) int
	count = func(x any) int {
		switch x := x.(type) {
		case map[string]any:
			n := 1
			for k, e := range x {
				n += 1 + count(e)
				_ = k
			}
			return n
		case []any:
			n := 1
			for _, e := range x {
				n += count(e)
			}
			return n
		}
		return 1
	}
	got := count(v)
	if err := Check([]byte(src), Limits{Bytes: 1 << 30, Nodes: got - 1}); err == nil {
		t.Errorf("%d values decoded, but Check with a bound of %d passes", got, got-1)
	}
	if err := Check([]byte(src), Limits{Bytes: 1 << 30, Nodes: got}); err != nil {
		t.Errorf("%d values decoded, but Check with that bound fails: %v", got, err)
	}
}
