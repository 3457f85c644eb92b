package event

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBusDeliversInOrder(t *testing.T) {
	b := NewBus()
	s := b.Subscribe(16)
	for i := 1; i <= 10; i++ {
		b.Publish(&Event{Seq: uint64(i), Type: CallState})
	}
	for i := 1; i <= 10; i++ {
		e := <-s.C()
		if e.Seq != uint64(i) {
			t.Fatalf("got seq %d, want %d", e.Seq, i)
		}
	}
	s.Close()
	s.Close() // idempotent
	if _, ok := <-s.C(); ok {
		t.Fatal("channel open after Close")
	}
	if s.Err() != nil {
		t.Fatalf("Err after Close = %v, want nil", s.Err())
	}
}

func TestBusDropsProgressButCutsOffSlowReaders(t *testing.T) {
	b := NewBus()
	s := b.Subscribe(2)
	b.Publish(&Event{Seq: 1, Type: CallState})
	b.Publish(&Event{Seq: 2, Type: CallState})
	b.Publish(&Event{Seq: 3, Type: CallProgress}) // buffer full: dropped
	if s.Dropped() != 1 {
		t.Fatalf("Dropped = %d, want 1", s.Dropped())
	}
	if s.Err() != nil {
		t.Fatal("a dropped progress event cut the reader off")
	}
	b.Publish(&Event{Seq: 4, Type: CallResult}) // must be delivered: cut off instead
	var seqs []uint64
	for e := range s.C() {
		seqs = append(seqs, e.Seq)
	}
	if len(seqs) != 2 || s.Err() != ErrSlow {
		t.Fatalf("got %v, err %v; want the two buffered events then ErrSlow", seqs, s.Err())
	}
	// Publishing after the cut-off does not panic or block.
	b.Publish(&Event{Seq: 5, Type: CallResult})
}

func TestBusConcurrentPublishAndClose(t *testing.T) {
	b := NewBus()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		s := b.Subscribe(4)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range s.C() {
			}
		}()
	}
	for i := 0; i < 1000; i++ {
		b.Publish(&Event{Seq: uint64(i), Type: CallProgress})
	}
	b.Close()
	wg.Wait()
}

// TestBusSubscribeTypes: a subscriber of some types gets those, in order,
// and the others neither reach it nor fill its buffer.
func TestBusSubscribeTypes(t *testing.T) {
	b := NewBus()
	s := b.SubscribeTypes(2, []Type{CallResult, TurnEnded})
	all := b.Subscribe(16)
	seq := uint64(0)
	pub := func(ty Type) {
		seq++
		b.Publish(&Event{Seq: seq, Type: ty})
	}
	for _, ty := range []Type{TurnStarted, CallState, CallState, CallState, CallResult, TurnEnded} {
		pub(ty)
	}
	for _, want := range []uint64{5, 6} {
		if e := <-s.C(); e.Seq != want {
			t.Fatalf("filtered subscriber got seq %d (%s), want %d", e.Seq, e.Type, want)
		}
	}
	if s.Err() != nil || len(all.C()) != 6 {
		t.Fatalf("err %v; unfiltered subscriber has %d events, want 6", s.Err(), len(all.C()))
	}
	s.Close()
	all.Close()
}

// TestTypesListsEveryType: Types names every Type constant of event.go.
func TestTypesListsEveryType(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "event.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[Type]bool{}
	for _, ty := range Types {
		if listed[ty] {
			t.Errorf("%s is listed twice", ty)
		}
		listed[ty] = true
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Type" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					continue
				}
				n++
				if s, _ := strconv.Unquote(lit.Value); !listed[Type(s)] {
					t.Errorf("event type %s is not in Types", s)
				}
			}
		}
	}
	if n != len(Types) {
		t.Errorf("event.go declares %d types, Types lists %d", n, len(Types))
	}
}
