package camt

import (
	"bytes"
	"context"
	"testing"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

func FuzzParse(f *testing.F) {
	for _, in := range ingesttest.Inputs(f, "testdata/*.xml") {
		f.Add(in)
	}
	f.Add([]byte(doc(ntry(`<Amt Ccy="JPY">15000</Amt>`, "DBIT", "PMNT/ICDT/ESCT", ""))))
	f.Add([]byte(doc(ntry(`<Amt Ccy="KWD">1.234</Amt>`, "CRDT", "PMNT/RCDT/ESCT", "<NtryDtls><TxDtls><Amt Ccy='KWD'>1</Amt></TxDtls><TxDtls><Amt Ccy='KWD'>0.234</Amt></TxDtls></NtryDtls>"))))
	f.Add([]byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<Document><BkToCstmrStmt><Stmt><Ntry><Amt Ccy='EUR'>1</Amt></Ntry></Stmt></BkToCstmrStmt></Document>"))

	f.Fuzz(func(t *testing.T, in []byte) {
		for _, c := range ingesttest.Check(t, in, Provider, func(sink reconcile.RowSink) error {
			return Parse(context.Background(), bytes.NewReader(in), Options{}, sink)
		}) {
			if e := c.Evidence; e != nil && (e.Time.IsZero() || e.Raw == "") {
				t.Errorf("evidence on line %d: time %v, raw %q", e.Line, e.Time, e.Raw)
			}
		}
	})
}
