package tabular

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"reconcile/ingest/ingesttest"
)

// benchQuoted is 100k rows in the style of a PayPal settlement report,
// where most fields are quoted whether they need it or not.
func benchQuoted() []byte {
	var b bytes.Buffer
	for i := range 100_000 {
		fmt.Fprintf(&b, `"SB","%017d","inv-%d","","","T0006",2024/05/01 09:%02d:%02d -0700,2024/05/01 09:%02d:%02d -0700,"CR",%d,"USD","DR",%d,"USD","cust-%d","PAYER%07d","","","",,,`+"\n",
			i, i, i%60, i%59, i%60, i%59, 100+i%99000, 30+i%500, i, i%5000)
	}
	return b.Bytes()
}

// BenchmarkReaderQuoted reads quoted lines: Read alone, Read and Joined
// (which writes these lines anew, as their quotes are not Join's), and
// encoding/csv.
func BenchmarkReaderQuoted(b *testing.B) {
	data := benchQuoted()
	read := func(joined bool) func(io.Reader) error {
		return func(in io.Reader) error { _, err := readCount(in, joined); return err }
	}
	b.Run("Read", func(b *testing.B) { ingesttest.Bench(b, data, read(false)) })
	b.Run("Joined", func(b *testing.B) { ingesttest.Bench(b, data, read(true)) })
	b.Run("EncodingCSV", func(b *testing.B) { ingesttest.BenchReadCSV(b, data) })
}

// readCount reads every record of in, and with joined writes each line anew
// as Joined does. It returns the number of records.
func readCount(in io.Reader, joined bool) (int, error) {
	r, err := NewReader(in, ',')
	if err != nil {
		return 0, err
	}
	for n := 0; ; n++ {
		if _, _, err := r.Read(); err == io.EOF {
			return n, nil
		} else if err != nil {
			return n, err
		}
		if joined {
			r.Joined()
		}
	}
}
