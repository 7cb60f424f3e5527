package csvmap

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"testing"

	"reconcile"
)

// benchCSV builds n rows in the acmepay layout: payments, refunds and
// chargebacks in three currencies, with quoted descriptions.
func benchCSV(n int) []byte {
	var b bytes.Buffer
	b.WriteString("id,created,type,status,amount,currency,fee,metadata_effect_key,parent_effect_key,payment_intent,source_id,description,customer_email,order_id\n")
	types := []string{"payment", "payment", "payment", "refund", "chargeback"}
	curs := []string{"EUR", "EUR", "USD", "JPY"}
	for i := range n {
		typ, cur := types[i%len(types)], curs[i%len(curs)]
		amount := fmt.Sprintf("%d.%02d", 1+i%900, i%100)
		if cur == "JPY" {
			amount = fmt.Sprintf("%d", 100+i%9000)
		}
		if typ != "payment" {
			amount = "-" + amount
		}
		fmt.Fprintf(&b, "ap_%08d,2024-05-%02dT%02d:%02d:%02dZ,%s,succeeded,%s,%s,0.%02d,run_%06x:charge:%d,,pi_%08d,,\"Order %d, %d items\",c%d@example.com,%d\n",
			i, 1+i%28, i%24, i%60, i%60, typ, amount, cur, i%100, i/3, i%3, i, i, 1+i%5, i%1000, i)
	}
	return b.Bytes()
}

type discard struct{}

func (discard) Evidence(*reconcile.Evidence) error { return nil }
func (discard) Reject(int, string, string) error   { return nil }
func (discard) Ignore(int, string) error           { return nil }

func BenchmarkParse(b *testing.B) {
	js, err := os.ReadFile("testdata/acmepay.json")
	if err != nil {
		b.Fatal(err)
	}
	m := mustMapping(b, string(js))
	in := benchCSV(100_000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Parse(context.Background(), bytes.NewReader(in), Options{Mapping: m}, discard{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadCSV only reads the same bytes with encoding/csv: the floor
// Parse is compared with.
func BenchmarkReadCSV(b *testing.B) {
	in := benchCSV(100_000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r := csv.NewReader(bytes.NewReader(in))
		r.ReuseRecord = true
		for {
			if _, err := r.Read(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}
