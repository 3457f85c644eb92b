package event

import (
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
