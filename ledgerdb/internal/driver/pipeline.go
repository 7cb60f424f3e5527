package driver

import (
	"context"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Pipeline works a run's count partitions: read gives each, in order;
// match classifies them, several at once where there are processors for
// it (one per processor but one, which the reading and recording and the
// database keep busy; at most maxMatching); record takes each once
// matched, one at a time, in the order they are matched. Memory holds a
// few partitions at most: one read ahead, those being matched, one matched
// and one being recorded.
func Pipeline[P any](ctx context.Context, count int, read func(ctx context.Context, i int) (P, error), match func(P) (P, error),
	record func(ctx context.Context, p P) error) error {
	g, gctx := errgroup.WithContext(ctx)
	reads, matched := make(chan P), make(chan P, 1)
	g.Go(func() error {
		defer close(reads)
		for i := range count {
			p, err := read(gctx, i)
			if err != nil {
				return err
			}
			select {
			case reads <- p:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	var matching sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0)-1, maxMatching, count)) {
		matching.Add(1)
		g.Go(func() error {
			defer matching.Done()
			for p := range reads {
				p, err := match(p)
				if err != nil {
					return err
				}
				select {
				case matched <- p:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		matching.Wait()
		close(matched)
		return nil
	})
	g.Go(func() error {
		for p := range matched {
			if gctx.Err() != nil {
				return gctx.Err()
			}
			if err := record(gctx, p); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}

// maxMatching bounds the partitions matched at once.
const maxMatching = 4

// ScopeRead, when set, is called by PartitionMatch once it has first looked
// at the ledger (whether any effect is closed, whether earlier evidence
// exists) and before it reads the effects in scope: a test writes there
// what another process may write in between. Nil outside tests.
var ScopeRead func()

// Marking, when set, is called by PartitionMatch before it marks what the
// run leaves the next (MatchParams.MarkBeside); an error fails the mark.
// Nil outside tests.
var Marking func() error
