package dataset

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

func TestPrefetch(t *testing.T) {
	for _, depth := range []int{0, 1, 3} {
		n := 0
		released := 0
		p := NewPrefetch(depth, func(ctx context.Context) (int, error) {
			if n == 5 {
				return 0, errors.New("boom")
			}
			n++
			return n, nil
		}, func() error { released++; return nil })
		for want := 1; want <= 5; want++ {
			got, err := p.Next(context.Background())
			if err != nil || got != want {
				t.Fatalf("depth %d: Next = %d, %v; want %d", depth, got, err, want)
			}
		}
		if _, err := p.Next(context.Background()); err == nil || err.Error() != "boom" {
			t.Fatalf("depth %d: error %v; want boom", depth, err)
		}
		if _, err := p.Next(context.Background()); err == nil {
			t.Fatalf("depth %d: error not sticky", depth)
		}
		p.Close()
		p.Close()
		if released != 1 {
			t.Fatalf("depth %d: release called %d times by two Closes; want once", depth, released)
		}
	}
	// A cancelled context returns at once without consuming.
	block := make(chan struct{})
	p := NewPrefetch(1, func(ctx context.Context) (int, error) {
		select {
		case <-block:
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with an expired context: %v", err)
	}
	close(block)
	if v, err := p.Next(context.Background()); v != 1 || err != nil {
		t.Fatalf("after the interrupted wait: %d, %v; want 1", v, err)
	}
	p.Close()
}

// TestPrefetchCloseStopsProducer checks that Close returns only once the
// producer has stopped, and that release runs after it.
func TestPrefetchCloseStopsProducer(t *testing.T) {
	running := make(chan struct{}, 1)
	stopped := false
	p := NewPrefetch(2, func(ctx context.Context) (int, error) {
		select {
		case running <- struct{}{}:
		default:
		}
		<-ctx.Done()
		stopped = true
		return 0, ctx.Err()
	}, func() error {
		if !stopped {
			return errors.New("released while the producer runs")
		}
		return io.ErrClosedPipe
	})
	<-running
	if err := p.Close(); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Close = %v; want release's error", err)
	}
}
