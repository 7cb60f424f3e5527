package camt

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"testing"

	"reconcile/ingest/ingesttest"
)

// benchDoc builds a camt.053.001.04 statement of n realistic entries: mostly
// single credit transfers with references, some with charges, and a batch
// entry every hundred.
func benchDoc(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.04">
	<BkToCstmrStmt>
		<GrpHdr><MsgId>BENCH</MsgId><CreDtTm>2024-03-05T04:10:00+01:00</CreDtTm></GrpHdr>
		<Stmt>
			<Id>BENCH-STMT</Id>
			<Acct><Id><IBAN>DE44500105175407324931</IBAN></Id></Acct>
			<Bal><Tp><CdOrPrtry><Cd>OPBD</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">1000.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2024-03-04</Dt></Dt></Bal>
`)
	for i := range n {
		dir, fam := "CRDT", "RCDT"
		if i%3 == 0 {
			dir, fam = "DBIT", "ICDT"
		}
		fmt.Fprintf(&b, `			<Ntry>
				<NtryRef>N%08d</NtryRef>
				<Amt Ccy="EUR">%d.%02d</Amt>
				<CdtDbtInd>%s</CdtDbtInd>
				<RvslInd>false</RvslInd>
				<Sts>BOOK</Sts>
				<BookgDt><Dt>2024-03-04</Dt></BookgDt>
				<ValDt><Dt>2024-03-05</Dt></ValDt>
				<AcctSvcrRef>ASR%012d</AcctSvcrRef>
				<BkTxCd><Domn><Cd>PMNT</Cd><Fmly><Cd>%s</Cd><SubFmlyCd>ESCT</SubFmlyCd></Fmly></Domn></BkTxCd>
				<NtryDtls>
`, i, 10+i%5000, i%100, dir, i, fam)
		txs := 1
		if i%100 == 0 {
			txs = 3
		}
		for j := range txs {
			fmt.Fprintf(&b, `					<TxDtls>
						<Refs><EndToEndId>run_%06x:charge:%d</EndToEndId><InstrId>I%d-%d</InstrId></Refs>
						<Amt Ccy="EUR">%d.%02d</Amt>
						<CdtDbtInd>%s</CdtDbtInd>
						<RltdPties><Dbtr><Nm>Customer %d</Nm></Dbtr></RltdPties>
						<RmtInf><Ustrd>Order %d payment</Ustrd></RmtInf>
					</TxDtls>
`, i, j, i, j, 10+i%5000, i%100, dir, i, i)
		}
		b.WriteString("				</NtryDtls>\n			</Ntry>\n")
	}
	b.WriteString("		</Stmt>\n	</BkToCstmrStmt>\n</Document>\n")
	return b.Bytes()
}

// benchRows is the number of entries the benchmarks parse.
var benchRows = 100_000

func BenchmarkParse(b *testing.B) {
	ingesttest.Bench(b, benchDoc(benchRows), func(r io.Reader) error {
		return Parse(context.Background(), r, Options{}, ingesttest.Discard{})
	})
}

// BenchmarkReadXML only tokenizes the same bytes with encoding/xml: the floor
// Parse is compared with.
func BenchmarkReadXML(b *testing.B) {
	ingesttest.Bench(b, benchDoc(benchRows), func(r io.Reader) error {
		d := xml.NewDecoder(r)
		for {
			if _, err := d.Token(); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	})
}
