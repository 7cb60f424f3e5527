package camt

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

func parseString(doc string) (*ingesttest.Recorder, error) {
	rec := &ingesttest.Recorder{}
	err := Parse(context.Background(), strings.NewReader(doc), Options{}, rec)
	return rec, err
}

func TestGolden(t *testing.T) {
	ingesttest.GoldenFiles(t, "testdata/*.xml", ingesttest.FormatOps, func(t *testing.T, path string, in []byte) ([]ingesttest.Call, error) {
		if !Detect(filepath.Base(path), in) {
			t.Errorf("Detect(%s) = false, want true", path)
		}
		rec, err := parseString(string(in))
		return rec.Calls, err
	})
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		head string
		want bool
	}{
		{"v02", `<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02">`, true},
		{"bom and prefix", "\ufeff\n<ns:Document xmlns:ns=\"x\"><ns:BkToCstmrStmt>", true},
		{"cut mid-line", `<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.05`, false},
		{"camt.054", `<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.054.001.02"><BkToCstmrDbtCdtNtfctn>`, false},
		{"csv naming camt.053", "id,comment\n1,converted from camt.053\n", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		if got := Detect("x.xml", []byte(tt.head)); got != tt.want {
			t.Errorf("Detect(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// doc wraps entries in a camt.053.001.04 statement for an account. The
// entries start on line 4.
func doc(entries string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.04"><BkToCstmrStmt>
<Stmt><Id>S1</Id><Acct><Id><IBAN>DE00TEST</IBAN></Id></Acct>
` + entries + `
</Stmt></BkToCstmrStmt></Document>
`
}

// ntry writes one entry with the given amount element, direction, code and
// extra children.
func ntry(amt, dir, code, extra string) string {
	bk := ""
	if code != "" {
		p := strings.Split(code, "/")
		bk = "<BkTxCd><Domn><Cd>" + p[0] + "</Cd><Fmly><Cd>" + p[1] + "</Cd><SubFmlyCd>" + p[2] + "</SubFmlyCd></Fmly></Domn></BkTxCd>"
	}
	return "<Ntry>" + amt + "<CdtDbtInd>" + dir + "</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt><AcctSvcrRef>A1</AcctSvcrRef>" + bk + extra + "</Ntry>"
}

func one(t *testing.T, entries string) *reconcile.Evidence {
	t.Helper()
	rec, err := parseString(doc(entries))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(rec.Calls) != 1 || rec.Calls[0].Evidence == nil {
		t.Fatalf("Parse gave %v, want one evidence", rec.Calls)
	}
	return rec.Calls[0].Evidence
}

func TestAmountsSignsAndExponents(t *testing.T) {
	tests := []struct {
		amt, dir string
		want     reconcile.Money
	}{
		{`<Amt Ccy="EUR">142.00</Amt>`, "CRDT", reconcile.Money{Minor: 14200, Currency: "EUR"}},
		{`<Amt Ccy="EUR">142.5</Amt>`, "DBIT", reconcile.Money{Minor: -14250, Currency: "EUR"}},
		{`<Amt Ccy="eur"> 0.01 </Amt>`, "CRDT", reconcile.Money{Minor: 1, Currency: "EUR"}},
		{`<Amt Ccy="JPY">15000</Amt>`, "DBIT", reconcile.Money{Minor: -15000, Currency: "JPY"}},
		{`<Amt Ccy="JPY">15000.00</Amt>`, "CRDT", reconcile.Money{Minor: 15000, Currency: "JPY"}},
		{`<Amt Ccy="KWD">12.345</Amt>`, "CRDT", reconcile.Money{Minor: 12345, Currency: "KWD"}},
		{`<Amt Ccy="KWD">1.5</Amt>`, "DBIT", reconcile.Money{Minor: -1500, Currency: "KWD"}},
		{`<Amt Ccy="CHF">0</Amt>`, "CRDT", reconcile.Money{Minor: 0, Currency: "CHF"}},
	}
	for _, tt := range tests {
		e := one(t, ntry(tt.amt, tt.dir, "", ""))
		if e.Amount != tt.want {
			t.Errorf("Parse(%s %s).Amount = %v, want %v", tt.amt, tt.dir, e.Amount, tt.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		code   string
		credit bool
		want   reconcile.Kind
	}{
		{"PMNT/RCDT/ESCT", true, reconcile.KindCharge},
		{"PMNT/RCDT/ESCT", false, reconcile.KindAdjustment},
		{"PMNT/RRCT/ESCT", true, reconcile.KindCharge},
		{"PMNT/ICDT/ESCT", false, reconcile.KindPayout},
		{"PMNT/ICDT/RRTN", true, reconcile.KindAdjustment},
		{"PMNT/IDDT/ESDD", true, reconcile.KindCharge},
		{"PMNT/IDDT/UPDD", false, reconcile.KindDispute},
		{"PMNT/RDDT/ESDD", false, reconcile.KindPayout},
		{"PMNT/RDDT/ESDD", true, reconcile.KindCharge},
		{"PMNT/CCRD/POSD", true, reconcile.KindCharge},
		{"PMNT/RCDT/CHRG", false, reconcile.KindFee},
		{"ACMT/MDOP/CHRG", false, reconcile.KindFee},
		{"ACMT/MDOP/FEES", false, reconcile.KindFee},
		{"ACMT/MCOP/INTR", true, reconcile.KindAdjustment},
		{"ACMT/MDOP/OTHR", false, reconcile.KindAdjustment},
		{"CAMT/ACCB/SWEP", false, reconcile.KindTransfer},
		{"SECU/SETT/TRAD", true, reconcile.KindOther},
		{"XTND/NTAV/NTAV", false, reconcile.KindPayout},
		{"", true, reconcile.KindCharge},
		{"", false, reconcile.KindPayout},
		{"pmnt/rcdt/esct", true, reconcile.KindCharge},
	}
	for _, tt := range tests {
		var c bankCode
		if p := strings.Split(tt.code, "/"); len(p) == 3 {
			c = bankCode{Domain: p[0], Family: p[1], SubFamily: p[2]}
		}
		if got := kindOf(c, tt.credit); got != tt.want {
			t.Errorf("kindOf(%q, credit %v) = %s, want %s", tt.code, tt.credit, got, tt.want)
		}
	}
}

func TestRawKindAndReversal(t *testing.T) {
	e := one(t, ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "PMNT/RCDT/ESCT", ""))
	if e.Kind != reconcile.KindCharge || e.RawKind != "PMNT/RCDT/ESCT" {
		t.Errorf("domain code: Kind, RawKind = %s, %s, want charge, PMNT/RCDT/ESCT", e.Kind, e.RawKind)
	}
	e = one(t, ntry(`<Amt Ccy="EUR">1.00</Amt>`, "DBIT", "", "<BkTxCd><Prtry><Cd>NTRF+702</Cd></Prtry></BkTxCd>"))
	if e.Kind != reconcile.KindPayout || e.RawKind != "NTRF+702" {
		t.Errorf("proprietary code: Kind, RawKind = %s, %s, want payout, NTRF+702", e.Kind, e.RawKind)
	}
	e = one(t, ntry(`<Amt Ccy="EUR">1.00</Amt>`, "DBIT", "", ""))
	if e.Kind != reconcile.KindPayout || e.RawKind != "DBIT" {
		t.Errorf("no code: Kind, RawKind = %s, %s, want payout, DBIT", e.Kind, e.RawKind)
	}
	rev := strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "DBIT", "PMNT/RCDT/ESCT", ""), "<Sts>", "<RvslInd>true</RvslInd><Sts>", 1)
	e = one(t, rev)
	if e.Kind != reconcile.KindAdjustment || e.RawKind != "reversal" || e.Metadata["reversal"] != "true" || e.Metadata["bank_tx_code"] != "PMNT/RCDT/ESCT" || e.Amount.Minor != -100 {
		t.Errorf("reversal: got Kind %s RawKind %s Amount %d Metadata %v", e.Kind, e.RawKind, e.Amount.Minor, e.Metadata)
	}
}

func TestStatus(t *testing.T) {
	const noSts = "no Sts: read as booked"
	tests := []struct {
		sts         string
		wantOp      string
		wantPending bool
		wantNote    string
	}{
		{"<Sts>BOOK</Sts>", "evidence", false, ""},
		{"<Sts><Cd>BOOK</Cd></Sts>", "evidence", false, ""},
		{"<Sts>PDNG</Sts>", "evidence", true, ""},
		{"<Sts><Cd>PDNG</Cd></Sts>", "evidence", true, ""},
		{"<Sts><Cd>FUTR</Cd></Sts>", "evidence", true, ""},
		{"<Sts>INFO</Sts>", "ignore", false, ""},
		{"<Sts><Cd>INFO</Cd></Sts>", "ignore", false, ""},
		{"<Sts>XXXX</Sts>", "reject", false, ""},
		{"", "evidence", false, noSts},
		{"<Sts><Cd></Cd></Sts>", "evidence", false, noSts},
	}
	for _, tt := range tests {
		entry := strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "<Sts>BOOK</Sts>", tt.sts, 1)
		rec, err := parseString(doc(entry))
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.sts, err)
		}
		if len(rec.Calls) != 1 || rec.Calls[0].Call != tt.wantOp {
			t.Errorf("Parse(%s) = %v, want one %s", tt.sts, rec.Calls, tt.wantOp)
			continue
		}
		if tt.wantOp != "evidence" {
			continue
		}
		e := rec.Calls[0].Evidence
		if e.Pending != tt.wantPending || e.Metadata["camt_note"] != tt.wantNote {
			t.Errorf("Parse(%s) = Pending %v, camt_note %q; want %v, %q", tt.sts, e.Pending, e.Metadata["camt_note"], tt.wantPending, tt.wantNote)
		}
	}
}

func TestDates(t *testing.T) {
	tests := []struct {
		dates string
		want  string // RFC 3339, UTC
	}{
		{"<BookgDt><Dt>2024-03-04</Dt></BookgDt>", "2024-03-04T00:00:00Z"},
		{"<BookgDt><Dt>2024-03-04+01:00</Dt></BookgDt>", "2024-03-04T00:00:00Z"},
		{"<BookgDt><Dt>2024-03-04Z</Dt></BookgDt>", "2024-03-04T00:00:00Z"},
		{"<BookgDt><DtTm>2024-03-04T00:30:00+01:00</DtTm></BookgDt>", "2024-03-03T23:30:00Z"},
		{"<BookgDt><DtTm>2024-03-04T12:00:00.123-05:00</DtTm></BookgDt>", "2024-03-04T17:00:00.123Z"},
		{"<BookgDt><DtTm>2024-03-04T12:00:00</DtTm></BookgDt>", "2024-03-04T12:00:00Z"},
		{"<BookgDt><DtTm>2024-03-04T12:00:00Z</DtTm></BookgDt>", "2024-03-04T12:00:00Z"},
		{"<BookgDt><Dt>2024-03-04</Dt></BookgDt><ValDt><Dt>2024-03-06</Dt></ValDt>", "2024-03-04T00:00:00Z"},
		{"<ValDt><Dt>2024-03-06</Dt></ValDt>", "2024-03-06T00:00:00Z"},
	}
	for _, tt := range tests {
		entry := strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "<BookgDt><Dt>2024-01-02</Dt></BookgDt>", tt.dates, 1)
		e := one(t, entry)
		if got := e.Time.Format("2006-01-02T15:04:05.999Z07:00"); got != tt.want || e.Time.Location() != time.UTC {
			t.Errorf("Parse(%s).Time = %s (%v), want %s UTC", tt.dates, got, e.Time.Location(), tt.want)
		}
	}
}

func TestReferences(t *testing.T) {
	tests := []struct {
		name       string
		entries    string
		wantTxIDs  []string
		wantEffect []string
	}{
		{
			name:      "entry AcctSvcrRef",
			entries:   "<Ntry><NtryRef>N1</NtryRef><Amt Ccy='EUR'>1</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt><AcctSvcrRef>A1</AcctSvcrRef></Ntry>",
			wantTxIDs: []string{"A1"}, wantEffect: []string{""},
		},
		{
			name:      "NtryRef when no AcctSvcrRef",
			entries:   "<Ntry><NtryRef>N1</NtryRef><Amt Ccy='EUR'>1</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt><AcctSvcrRef>notprovided</AcctSvcrRef></Ntry>",
			wantTxIDs: []string{"N1"}, wantEffect: []string{""},
		},
		{
			name:      "no reference at all",
			entries:   "<Ntry><Amt Ccy='EUR'>1</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt></Ntry>",
			wantTxIDs: []string{""}, wantEffect: []string{""},
		},
		{
			name: "single TxDtls gives its references to the entry",
			entries: "<Ntry><Amt Ccy='EUR'>1</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt><AcctSvcrRef>A1</AcctSvcrRef>" +
				"<NtryDtls><TxDtls><Refs><AcctSvcrRef>T1</AcctSvcrRef><EndToEndId>run_1:charge:0</EndToEndId></Refs></TxDtls></NtryDtls></Ntry>",
			wantTxIDs: []string{"T1"}, wantEffect: []string{"run_1:charge:0"},
		},
		{
			name: "batch: own ref, else entry ref with index; NOTPROVIDED is empty",
			entries: "<Ntry><NtryRef>N9</NtryRef><Amt Ccy='EUR'>3</Amt><CdtDbtInd>DBIT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt><NtryDtls>" +
				"<TxDtls><Refs><AcctSvcrRef>T1</AcctSvcrRef><EndToEndId>NOTPROVIDED</EndToEndId></Refs><Amt Ccy='EUR'>1</Amt></TxDtls>" +
				"<TxDtls><Refs><AcctSvcrRef>NotProvided</AcctSvcrRef><EndToEndId>run_1:payout:1</EndToEndId></Refs><Amt Ccy='EUR'>2</Amt></TxDtls>" +
				"</NtryDtls></Ntry>",
			wantTxIDs: []string{"T1", "N9/2"}, wantEffect: []string{"", "run_1:payout:1"},
		},
		{
			name: "a reference repeated in the statement gets an occurrence suffix",
			entries: "<Ntry><Amt Ccy='EUR'>1</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt><AcctSvcrRef>A1</AcctSvcrRef></Ntry>" +
				"<Ntry><Amt Ccy='EUR'>bad</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt><AcctSvcrRef>A1</AcctSvcrRef></Ntry>" +
				"<Ntry><Amt Ccy='EUR'>2</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt><AcctSvcrRef>A1</AcctSvcrRef></Ntry>",
			wantTxIDs: []string{"A1", "A1#3"}, wantEffect: []string{"", ""},
		},
	}
	for _, tt := range tests {
		rec, err := parseString(doc(tt.entries))
		if err != nil {
			t.Fatalf("%s: Parse: %v", tt.name, err)
		}
		var ids, keys []string
		for _, e := range rec.Records() {
			ids = append(ids, e.TxID)
			keys = append(keys, e.EffectKey)
		}
		if diff := cmp.Diff(tt.wantTxIDs, ids); diff != "" {
			t.Errorf("%s: TxIDs (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.wantEffect, keys); diff != "" {
			t.Errorf("%s: EffectKeys (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestRejections(t *testing.T) {
	tests := []struct {
		name, entry, want string
	}{
		{"decimal comma", ntry(`<Amt Ccy="EUR">12,50</Amt>`, "CRDT", "", ""), `Ntry/Amt (EUR): amount "12,50" has misplaced thousands separators`},
		{"not a number", ntry(`<Amt Ccy="EUR">12.5x</Amt>`, "CRDT", "", ""), `Ntry/Amt (EUR): amount "12.5x" is not a number`},
		{"not a number after decimals", ntry(`<Amt Ccy="EUR">1.00x</Amt>`, "CRDT", "", ""), `Ntry/Amt (EUR): amount "1.00x" is not a number`},
		{"too many decimals EUR", ntry(`<Amt Ccy="EUR">1.234</Amt>`, "CRDT", "", ""), `Ntry/Amt (EUR): amount "1.234" has more decimals than the currency allows (2)`},
		{"decimals on JPY", ntry(`<Amt Ccy="JPY">100.5</Amt>`, "CRDT", "", ""), `Ntry/Amt (JPY): amount "100.5" has more decimals than the currency allows (0)`},
		{"four decimals KWD", ntry(`<Amt Ccy="KWD">1.2345</Amt>`, "CRDT", "", ""), `Ntry/Amt (KWD): amount "1.2345" has more decimals than the currency allows (3)`},
		{"scientific", ntry(`<Amt Ccy="EUR">1.8137E+3</Amt>`, "CRDT", "", ""), `Ntry/Amt (EUR): amount "1.8137E+3" is in scientific notation (a spreadsheet may have mangled it)`},
		{"signed", ntry(`<Amt Ccy="EUR">-5.00</Amt>`, "CRDT", "", ""), `Ntry/Amt "-5.00" has a sign; camt amounts are unsigned and CdtDbtInd gives the direction`},
		{"empty amount", ntry(`<Amt Ccy="EUR"></Amt>`, "CRDT", "", ""), `Ntry/Amt (EUR): empty amount`},
		{"no amount", ntry(``, "CRDT", "", ""), `entry has no amount (Ntry/Amt)`},
		{"unknown currency", ntry(`<Amt Ccy="EUX">1.00</Amt>`, "CRDT", "", ""), `Ntry/Amt currency (Ccy): unknown currency "EUX"`},
		{"empty currency", ntry(`<Amt>1.00</Amt>`, "CRDT", "", ""), `Ntry/Amt currency (Ccy): empty currency`},
		{"bad direction", ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CREDIT", "", ""), `Ntry/CdtDbtInd "CREDIT" is neither CRDT nor DBIT`},
		{"no direction", ntry(`<Amt Ccy="EUR">1.00</Amt>`, "", "", ""), `Ntry/CdtDbtInd (credit or debit) is missing`},
		{"bad reversal flag", strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "<Sts>", "<RvslInd>yes</RvslInd><Sts>", 1), `Ntry/RvslInd "yes" is not true or false`},
		{"bad date", strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "2024-01-02", "02.01.2024", 1), `Ntry/BookgDt/Dt "02.01.2024" is not a date (YYYY-MM-DD)`},
		{"impossible date", strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "2024-01-02", "2024-02-30", 1), `Ntry/BookgDt/Dt "2024-02-30" is not a date (YYYY-MM-DD)`},
		{"bad date zone", strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "2024-01-02", "2024-01-02 10:00", 1), `Ntry/BookgDt/Dt "2024-01-02 10:00" is not a date (YYYY-MM-DD)`},
		{"bad date time", strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "<Dt>2024-01-02</Dt>", "<DtTm>2024-01-02 10:00</DtTm>", 1), `Ntry/BookgDt/DtTm "2024-01-02 10:00" is not a date and time (YYYY-MM-DDThh:mm:ss)`},
		{"bad value date", strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "</BookgDt>", "</BookgDt><ValDt><Dt>tomorrow</Dt></ValDt>", 1), `Ntry/ValDt/Dt "tomorrow" is not a date (YYYY-MM-DD)`},
		{"empty date", strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "<Dt>2024-01-02</Dt>", "", 1), `Ntry/BookgDt has neither Dt nor DtTm`},
		{"no date", strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "<BookgDt><Dt>2024-01-02</Dt></BookgDt>", "", 1), `entry has no booking date (Ntry/BookgDt) or value date (Ntry/ValDt), and the statement has no date (Stmt/FrToDt/ToDtTm, Stmt/CreDtTm or GrpHdr/CreDtTm)`},
		{"mangled entry reference", strings.Replace(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""), "<AcctSvcrRef>A1<", "<AcctSvcrRef>4.5012E+17<", 1), `Ntry/AcctSvcrRef "4.5012E+17" is in scientific notation: a spreadsheet mangled the reference and the original is lost`},
		{"mangled end-to-end id", ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", "<NtryDtls><TxDtls><Refs><EndToEndId>1.8137e+15</EndToEndId></Refs></TxDtls></NtryDtls>"), `TxDtls/Refs/EndToEndId "1.8137e+15" is in scientific notation: a spreadsheet mangled the reference and the original is lost`},
		{"charges overflow", ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", "<Chrgs><Amt Ccy='EUR'>92233720368547758.07</Amt></Chrgs><Chrgs><Amt Ccy='EUR'>0.01</Amt></Chrgs>"), `Chrgs/Amt: the charges add up to more than can be counted`},
		{"bad charges", ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", "<Chrgs><Amt Ccy='EUR'>0.5.0</Amt></Chrgs>"), `Chrgs/Amt (EUR): amount "0.5.0" is not a number`},
	}
	for _, tt := range tests {
		rec, err := parseString(doc(tt.entry))
		if err != nil {
			t.Fatalf("%s: Parse: %v", tt.name, err)
		}
		want := []ingesttest.Call{{Call: "reject", Line: 4, Reason: tt.want}}
		if diff := cmp.Diff(want, rec.Outcomes()); diff != "" {
			t.Errorf("%s: outcomes (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestBatchRowsEachGetTheirOutcome(t *testing.T) {
	entries := "<Ntry>\n<Amt Ccy='EUR'>3.00</Amt><CdtDbtInd>DBIT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt><AcctSvcrRef>B</AcctSvcrRef>\n<NtryDtls>\n" +
		"<TxDtls><Amt Ccy='EUR'>1.00</Amt></TxDtls>\n" +
		"<TxDtls><Refs><EndToEndId>E2</EndToEndId></Refs></TxDtls>\n" +
		"<TxDtls><Amt Ccy='EUR'>2.00</Amt><CdtDbtInd>CRDT</CdtDbtInd></TxDtls>\n" +
		"</NtryDtls></Ntry>"
	rec, err := parseString(doc(entries))
	if err != nil {
		t.Fatal(err)
	}
	want := []ingesttest.Call{
		{Call: "evidence", Line: 7},
		{Call: "reject", Line: 8, Reason: "batch transaction has no amount (TxDtls/Amt or TxDtls/AmtDtls/TxAmt/Amt)"},
		{Call: "evidence", Line: 9},
	}
	if diff := cmp.Diff(want, rec.Outcomes()); diff != "" {
		t.Fatalf("outcomes (-want +got):\n%s", diff)
	}
	ev := rec.Records()
	if ev[0].Amount.Minor != -100 || ev[0].TxID != "B/1" || ev[1].Amount.Minor != 200 || ev[1].TxID != "B/3" {
		t.Errorf("batch evidence = %+v, %+v; want -100 B/1 and +200 B/3", ev[0], ev[1])
	}
	if want := "<TxDtls><Amt Ccy='EUR'>1.00</Amt></TxDtls>"; ev[0].Raw != want {
		t.Errorf("Raw = %q, want %q", ev[0].Raw, want)
	}
}

func TestFatal(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "line 1: not a camt.053 document: no XML element found"},
		{"csv", "id,amount\n1,2.00\n", "line 1: not a camt.053 document: text before the first XML element"},
		{"json", `{"object": "list"}`, "line 1: not a camt.053 document: text before the first XML element"},
		{"camt.054", `<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.054.001.02"><BkToCstmrDbtCdtNtfctn/></Document>`, `line 1: not a camt.053 document: namespace "urn:iso:std:iso:20022:tech:xsd:camt.054.001.02"`},
		{"other root", `<?xml version="1.0"?>` + "\n<Statement/>", "line 2: not a camt.053 document: root element <Statement>"},
		{"other child", "<Document>\n<CstmrCdtTrfInitn/></Document>", "line 2: not a camt.053 document: <CstmrCdtTrfInitn> where <BkToCstmrStmt> was expected"},
		{"no statement", "<Document>\n</Document>", "line 2: not a camt.053 document: <BkToCstmrStmt> missing"},
		{"truncated", doc(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", ""))[:300], "line 4: document ends too early (truncated, or still being written: run again when it is complete): XML syntax error on line 4: unexpected EOF"},
		{"mismatched tags", doc("<Ntry><Amt>1</Ntry>"), "line 4: malformed XML: XML syntax error on line 4: element <Amt> closed by </Ntry>"},
		{"encoding", `<?xml version="1.0" encoding="UTF-16"?><Document/>`, `line 1: unsupported XML encoding "UTF-16" (convert the file to UTF-8)`},
	}
	for _, tt := range tests {
		rec, err := parseString(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: Parse error = %v, want %s", tt.name, err, tt.want)
		}
		if tt.name != "truncated" && len(rec.Calls) != 0 {
			t.Errorf("%s: Parse gave outcomes %v, want none", tt.name, rec.Calls)
		}
	}
}

func TestTruncatedBetweenTokens(t *testing.T) {
	// Cut between two elements: the document must not pass as complete.
	_, err := parseString(doc("")[:strings.Index(doc(""), "</Stmt>")])
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("Parse(cut between tokens) = %v, want a truncation error", err)
	}
}

func TestLatin1(t *testing.T) {
	in := "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n" + strings.TrimPrefix(doc(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", "<AddtlNtryInf>GEB\xdcHR M\xc4RZ</AddtlNtryInf>")), `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	e := one2(t, in)
	if e.Description != "GEBÜHR MÄRZ" || e.Line != 4 || !strings.Contains(e.Raw, "GEBÜHR") {
		t.Errorf("latin-1 entry: Description %q Line %d Raw %q", e.Description, e.Line, e.Raw)
	}
}

func one2(t *testing.T, in string) *reconcile.Evidence {
	t.Helper()
	rec, err := parseString(in)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	ev := rec.Records()
	if len(ev) != 1 {
		t.Fatalf("Parse gave %v, want one evidence", rec.Calls)
	}
	return ev[0]
}

func TestHugeBatchKeepsMemoryBoundedAndRawShort(t *testing.T) {
	var b strings.Builder
	b.WriteString("<Ntry><Amt Ccy='EUR'>1.00</Amt><CdtDbtInd>DBIT</CdtDbtInd><Sts>BOOK</Sts><BookgDt><Dt>2024-01-02</Dt></BookgDt><AcctSvcrRef>BIG</AcctSvcrRef><NtryDtls>\n")
	const n = 20000
	for range n {
		b.WriteString("<TxDtls><Amt Ccy='EUR'>0.01</Amt><RmtInf><Ustrd>" + strings.Repeat("x", 100) + "</Ustrd></RmtInf></TxDtls>\n")
	}
	b.WriteString("</NtryDtls></Ntry>")
	in := doc(b.String())
	src, err := utf8Source(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	tp := newTape(src)
	rec := &ingesttest.Recorder{}
	p := &parser{ctx: context.Background(), dec: xml.NewDecoder(tp), tape: tp, sink: rec}
	if err := p.document(); err != nil {
		t.Fatal(err)
	}
	if len(in) < 8*cap(tp.buf) {
		t.Errorf("the tape grew to %d bytes for a %d-byte batch entry; it should keep one transaction at a time", cap(tp.buf), len(in))
	}
	ev := rec.Records()
	if len(ev) != n {
		t.Fatalf("got %d evidence, want %d", len(ev), n)
	}
	last := ev[n-1]
	if last.Line != 4+n || last.TxID != "BIG/20000" || !strings.HasPrefix(last.Raw, "<TxDtls>") || !strings.HasSuffix(last.Raw, "</TxDtls>") {
		t.Errorf("last row: Line %d TxID %s Raw %.40q", last.Line, last.TxID, last.Raw)
	}

	// One entry larger than the tape keeps: still parsed, raw replaced by a note.
	big := ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", "<AddtlNtryInf>"+strings.Repeat("y", maxKept+10)+"</AddtlNtryInf>")
	e := one(t, big)
	if !strings.Contains(e.Raw, "too large to keep") || len(e.Description) != maxKept+10 {
		t.Errorf("huge entry: Raw %.80q, Description length %d", e.Raw, len(e.Description))
	}
}

func TestSinkErrorStopsParse(t *testing.T) {
	in, err := os.ReadFile("testdata/v02_batch.xml")
	if err != nil {
		t.Fatal(err)
	}
	s := &ingesttest.FailingSink{On: "ignore"}
	if err := Parse(context.Background(), bytes.NewReader(in), Options{}, s); !errors.Is(err, ingesttest.ErrSink) {
		t.Errorf("Parse with a failing sink = %v, want %v", err, ingesttest.ErrSink)
	}
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := doc(strings.Repeat(ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", "")+"\n", 5000))
	err := Parse(ctx, strings.NewReader(in), Options{}, &ingesttest.Recorder{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Parse with a cancelled context = %v, want %v", err, context.Canceled)
	}
}
