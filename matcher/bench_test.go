package matcher_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"reconcile"
	"reconcile/fixtures"
	"reconcile/ingest"
	"reconcile/matcher"
)

// BenchmarkMatch times the matcher alone, in memory, on a generated world
// (its Stripe itemized report and webhook dump parsed beforehand): at the
// size of one partition of a run (50k effects) and at a whole world of
// 1M, which runs only when named (-bench 'Match/1M'):
//
//	go test -run '^$' -bench Match -benchmem ./matcher/
//
// It checks that the world is found as it was built.
func BenchmarkMatch(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"50k", 50_000}, {"1M", 1_000_000}} {
		b.Run(size.name, func(b *testing.B) {
			if size.n >= 1_000_000 && !strings.Contains(flag.Lookup("test.bench").Value.String(), "1M") {
				b.Skip("name it in -bench (-bench 'Match/1M') to run it")
			}
			w := fixtures.NewWorld(size.n, fixtures.DefaultRates, 1)
			in := &matcher.Input{Evidence: parseWorld(b, w)}
			in.Scope, in.Cutoff = matcher.Window(matcher.Ends(in.Evidence), time.Time{}, 3*time.Hour) // as the bench command runs it
			in.Terse = true                                                                           // as a run does
			for i := range w.Effects {
				e, err := matcher.FromLedger(&w.Effects[i])
				if err != nil {
					b.Fatal(err)
				}
				in.Effects = append(in.Effects, e)
			}
			// in no order, as a partition of a run gives them
			rand.New(rand.NewPCG(1, 1)).Shuffle(len(in.Effects), func(i, j int) { in.Effects[i], in.Effects[j] = in.Effects[j], in.Effects[i] })
			var res *matcher.Result
			for b.Loop() {
				res = matcher.Match(in)
			}
			got := map[reconcile.Class]int{}
			for _, d := range res.Discrepancies {
				got[d.Class]++
			}
			for c, n := range w.Want {
				if got[c] != n {
					b.Errorf("%s: %d found, %d built", c, got[c], n)
				}
			}
			b.ReportMetric(float64(len(in.Effects))/b.Elapsed().Seconds()*float64(b.N), "effects/s")
			b.ReportMetric(float64(len(in.Evidence))/b.Elapsed().Seconds()*float64(b.N), "records/s")
		})
	}
}

// parseWorld writes the world's files and parses them back into evidence.
func parseWorld(b *testing.B, w *fixtures.World) []reconcile.Evidence {
	dir := b.TempDir()
	var paths []string
	for name, write := range map[string]func(io.Writer) error{"world.itemized.csv": w.WriteItemized, "world.events.jsonl": w.WriteEvents} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, path)
	}
	srcs, err := ingest.Expand(context.Background(), paths, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := &records{}
	for _, src := range srcs {
		in, err := ingest.Read(context.Background(), src, &ingest.Options{}, c)
		if err != nil {
			b.Fatal(err)
		}
		if in.Rejected != 0 {
			b.Fatalf("%s: %d rows rejected", src.URI, in.Rejected)
		}
	}
	return c.evidence
}

type records struct{ evidence []reconcile.Evidence }

func (c *records) Evidence(e *reconcile.Evidence) error {
	e.Raw, e.Metadata = "", nil // the matcher reads neither; a run does not load them
	c.evidence = append(c.evidence, *e)
	return nil
}

func (c *records) Reject(*reconcile.Rejected) error { return nil }
