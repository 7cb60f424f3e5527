package csvmap

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"reconcile/ingest/ingesttest"
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

func BenchmarkParse(b *testing.B) {
	js, err := os.ReadFile("testdata/acmepay.json")
	if err != nil {
		b.Fatal(err)
	}
	m := mustMapping(b, string(js))
	ingesttest.Bench(b, benchCSV(100_000), func(r io.Reader) error {
		return Parse(context.Background(), r, Options{Mapping: m}, ingesttest.Discard{})
	})
}

// BenchmarkReadCSV only reads the same bytes with encoding/csv: the floor
// Parse is compared with.
func BenchmarkReadCSV(b *testing.B) {
	ingesttest.BenchReadCSV(b, benchCSV(100_000))
}
