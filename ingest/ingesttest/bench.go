package ingesttest

import (
	"bytes"
	"encoding/csv"
	"io"
	"testing"

	"reconcile"
)

// Bench runs parse over in b.N times, reporting bytes and allocations.
func Bench(b *testing.B, in []byte, parse func(io.Reader) error) {
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := parse(bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchReadCSV reads in with encoding/csv and does nothing else, b.N
// times: the floor a CSV parser's benchmark is compared with. It returns
// the number of records in.
func BenchReadCSV(b *testing.B, in []byte) (records int) {
	Bench(b, in, func(in io.Reader) error {
		r := csv.NewReader(in)
		r.FieldsPerRecord = -1
		r.ReuseRecord = true
		for records = 0; ; records++ {
			if _, err := r.Read(); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	})
	return records
}

// Discard is a RowSink that keeps nothing, so that a benchmark measures
// the parser.
type Discard struct{}

func (Discard) Evidence(*reconcile.Evidence) error { return nil }
func (Discard) Reject(int, string, string) error   { return nil }
func (Discard) Ignore(int, string) error           { return nil }
