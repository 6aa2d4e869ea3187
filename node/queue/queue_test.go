package queue

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestPushesCoalesceIntoOneWakeAndTakeKeepsTheOrder(t *testing.T) {
	t.Parallel()
	q := New[int]()
	for i := range 3 {
		q.Push(i)
	}
	select {
	case <-q.Wake():
	default:
		t.Fatal("no wake-up after three pushes")
	}
	select {
	case <-q.Wake():
		t.Fatal("three pushes woke the consumer twice")
	default:
	}
	if got := q.Take(); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("Take = %v, want [0 1 2]", got)
	}
	if got := q.Take(); got != nil {
		t.Errorf("Take on an empty queue = %v, want nil", got)
	}
}

func TestAPushWhileTheConsumerWorksIsNotLost(t *testing.T) {
	t.Parallel()
	q := New[int]()
	const producers, each = 4, 250
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				q.Push(p*each + i)
			}
		}()
	}
	seen := map[int]bool{}
	deadline := time.After(30 * time.Second)
	for len(seen) < producers*each {
		select {
		case <-q.Wake():
		case <-deadline:
			t.Fatalf("took %d of %d items, then no wake-up", len(seen), producers*each)
		}
		for _, v := range q.Take() {
			if seen[v] {
				t.Fatalf("item %d taken twice", v)
			}
			seen[v] = true
		}
	}
	wg.Wait()
}
