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
	// Schema-invalid shapes real banks send: no Sts, no BookgDt, no dates at
	// all (the statement's dates are used); a return with its reason; a
	// header without a statement.
	f.Add([]byte(stmtDoc("<CreDtTm>2024-03-06T01:00:00</CreDtTm>",
		"<CreDtTm>2024-03-05T22:00:00-02:00</CreDtTm><FrToDt><FrDtTm>2024-03-04T00:00:00</FrDtTm><ToDtTm>2024-03-04T23:59:59</ToDtTm></FrToDt>",
		"<Ntry><Amt Ccy='EUR'>1.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><BookgDt><Dt>2024-03-04</Dt></BookgDt></Ntry>"+
			"<Ntry><Amt Ccy='EUR'>2.00</Amt><CdtDbtInd>DBIT</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts><ValDt><Dt>2024-03-05</Dt></ValDt></Ntry>"+
			"<Ntry><Amt Ccy='EUR'>3.00</Amt><CdtDbtInd>CRDT</CdtDbtInd></Ntry>"+
			"<Ntry><Amt Ccy='EUR'>4.00</Amt><CdtDbtInd>DBIT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-03-04</Dt></BookgDt><NtryDtls><TxDtls>"+
			"<RtrInf><Rsn><Cd>MD06</Cd></Rsn><AddtlInf>RETURN</AddtlInf></RtrInf></TxDtls></NtryDtls></Ntry>")))
	f.Add([]byte("<Document><BkToCstmrStmt><GrpHdr><MsgId>H</MsgId><CreDtTm>2024-01-02T06:00:00</CreDtTm></GrpHdr></BkToCstmrStmt></Document>"))
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
