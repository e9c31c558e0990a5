package dataset

import (
	"context"
	"fmt"
	"io"
)

// Prefetch reads ahead: it calls a producer on its own goroutine and keeps
// up to depth results ready, so that decoding the next mini-batches
// overlaps the caller's compute (PICASSO's D-interleaving, seeds/000
// §III-C). With depth 0 the producer runs on the caller's goroutine, in
// Next.
//
// The first error the producer returns (io.EOF at the end of its input
// included) is returned by that Next call and every later one. Not safe
// for concurrent use.
type Prefetch[T any] struct {
	produce func(ctx context.Context) (T, error)
	depth   int
	ch      chan prefetched[T]
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	failed  error        // a producer error already delivered
	release func() error // called by Close once the producer has stopped
}

type prefetched[T any] struct {
	v   T
	err error
}

// NewPrefetch starts reading ahead with produce, which is called with a
// context that Close cancels. release, when not nil, is called by Close once
// produce has stopped for good, to free what produce reads from.
func NewPrefetch[T any](depth int, produce func(ctx context.Context) (T, error), release func() error) *Prefetch[T] {
	p := &Prefetch[T]{produce: produce, depth: depth, release: release}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if depth <= 0 {
		return p
	}
	p.ch = make(chan prefetched[T], depth)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		defer close(p.ch)
		for {
			v, err := produce(p.ctx)
			select {
			case p.ch <- prefetched[T]{v, err}:
			case <-p.ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

// Next returns the next result. When ctx ends first it returns ctx's error
// and nothing is consumed.
func (p *Prefetch[T]) Next(ctx context.Context) (T, error) {
	var zero T
	if p.failed != nil {
		return zero, p.failed
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if p.depth <= 0 {
		v, err := p.produce(ctx)
		if err != nil && ctx.Err() == nil {
			p.failed = err
		}
		return v, err
	}
	select {
	case r, ok := <-p.ch:
		if !ok {
			return zero, fmt.Errorf("dataset: prefetch stopped: %w", io.ErrUnexpectedEOF)
		}
		if r.err != nil {
			p.failed = r.err
		}
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Close stops the producer, waits for it and then calls release, returning
// its error. Later calls do nothing.
func (p *Prefetch[T]) Close() error {
	p.cancel()
	if p.done != nil {
		<-p.done
	}
	var err error
	if p.release != nil {
		err = p.release()
		p.release = nil
	}
	return err
}
