package tabular

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"testing"
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
	b.Run("Read", func(b *testing.B) { benchRead(b, data, false) })
	b.Run("Joined", func(b *testing.B) { benchRead(b, data, true) })
	b.Run("EncodingCSV", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			r := csv.NewReader(bytes.NewReader(data))
			r.FieldsPerRecord = -1
			r.ReuseRecord = true
			for {
				if _, err := r.Read(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

func benchRead(b *testing.B, data []byte, joined bool) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), ',')
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, _, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if joined {
				r.Joined()
			}
		}
	}
}
