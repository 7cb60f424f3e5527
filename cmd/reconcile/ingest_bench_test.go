package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"reconcile"
	"reconcile/fixtures"
	"reconcile/ingest"
	"reconcile/job"
	"reconcile/ledgerdb/ledgerdbtest"
)

// BenchmarkIngest ingests a generated Stripe itemized report into a fresh
// PostgreSQL ledger as `reconcile ingest` does (persist: hash the file,
// parse it, COPY its evidence in one transaction), beside parsing the same
// file alone and merely reading it with encoding/csv. Each reports rows/s
// and MB/s. The 1M size runs only when -bench names it (-bench 'Ingest/1M')
// or RECONCILE_BENCH_1M=1 is set:
//
//	go test -run '^$' -bench 'Ingest/1M' -benchtime 1x ./cmd/reconcile/
func BenchmarkIngest(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"100k", 100_000}, {"1M", 1_000_000}} {
		b.Run(size.name, func(b *testing.B) {
			if size.n >= 1_000_000 && !benchAsked(size.name) {
				b.Skip("set RECONCILE_BENCH_1M=1 or name it in -bench (-bench 'Ingest/1M') to run it")
			}
			path, bytes := writeBenchWorld(b, size.n)
			rows := benchReadCSV(b, path)
			b.Run("encoding-csv", func(b *testing.B) {
				for b.Loop() {
					benchReadCSV(b, path)
				}
				reportSpeed(b, rows, bytes)
			})
			b.Run("parse", func(b *testing.B) {
				src := benchSource(b, path)
				var in *ingest.Input
				for b.Loop() {
					var err error
					if in, err = ingest.Read(context.Background(), src, &ingest.Options{}, benchDiscard{}); err != nil {
						b.Fatal(err)
					}
				}
				if in.Rows != rows || in.Rejected != 0 {
					b.Fatalf("%d rows, %d rejected; encoding/csv read %d", in.Rows, in.Rejected, rows)
				}
				reportSpeed(b, in.Rows, bytes)
			})
			b.Run("postgres", func(b *testing.B) {
				src := benchSource(b, path)
				var in *ingest.Input
				for b.Loop() {
					b.StopTimer()
					store := ledgerdbtest.New(b, "postgres").Open(b, nil)
					b.StartTimer()
					var err error
					if in, err = (&job.Job{Store: store}).Ingest(context.Background(), src, &ingest.Options{}, false, new(job.RejectedList).Collect(0)); err != nil {
						b.Fatal(err)
					}
					if in.AlreadyIngested || in.Evidence != rows {
						b.Fatalf("%+v; encoding/csv read %d rows", in, rows)
					}
				}
				reportSpeed(b, in.Rows, bytes)
			})
		})
	}
}

// benchAsked reports whether the benchmark named name should run although
// it is too long for the default: RECONCILE_BENCH_1M=1, or -bench naming it.
func benchAsked(name string) bool {
	if os.Getenv("RECONCILE_BENCH_1M") == "1" {
		return true
	}
	f := flag.Lookup("test.bench")
	return f != nil && strings.Contains(f.Value.String(), name)
}

// writeBenchWorld writes the Stripe itemized report of a generated world of
// n effects (about n lines) and returns its path and size.
func writeBenchWorld(b *testing.B, n int) (string, int64) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.itemized.csv")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := fixtures.NewWorld(n, fixtures.DefaultRates, 1).WriteItemized(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, info.Size()
}

// benchReadCSV merely reads the file with encoding/csv, as the floor the others
// are compared with, and returns the number of data rows.
func benchReadCSV(b *testing.B, path string) int {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 64<<10))
	r.ReuseRecord = true
	n := 0
	for {
		_, err := r.Read()
		if errors.Is(err, io.EOF) {
			return n - 1 // the header is no row
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// benchSource is the file at path as `reconcile ingest` takes it.
func benchSource(b *testing.B, path string) ingest.Source {
	srcs, err := ingest.Expand(context.Background(), []string{path}, nil, nil)
	if err != nil || len(srcs) != 1 {
		b.Fatalf("%v: %d sources", err, len(srcs))
	}
	return srcs[0]
}

// reportSpeed reports rows/s and MB/s of the timed iterations.
func reportSpeed(b *testing.B, rows int, bytes int64) {
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(rows)*float64(b.N)/s, "rows/s")
	b.ReportMetric(float64(bytes)*float64(b.N)/s/1e6, "MB/s")
}

// benchDiscard keeps nothing, so that the parse benchmark measures reading.
type benchDiscard struct{}

func (benchDiscard) Evidence(*reconcile.Evidence) error { return nil }
func (benchDiscard) Reject(*reconcile.Rejected) error   { return nil }
