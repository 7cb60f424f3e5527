package camt

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

// read is what these tests check of one evidence record.
type read struct {
	Kind    reconcile.Kind
	Amount  reconcile.Money
	Time    string // RFC 3339, UTC
	Pending bool
	Note    string // Metadata["camt_note"]
}

func readOf(e *reconcile.Evidence) read {
	return read{e.Kind, e.Amount, e.Time.Format(time.RFC3339), e.Pending, e.Metadata["camt_note"]}
}

func eur(minor int64) reconcile.Money { return reconcile.Money{Minor: minor, Currency: "EUR"} }

func TestEntriesWithoutStatusOrDatesAreRead(t *testing.T) {
	const (
		noSts    = "no Sts: read as booked"
		noBookg  = "no BookgDt: time is the value date (ValDt)"
		stmtEnd  = "no BookgDt or ValDt: time is the statement's end (Stmt/FrToDt/ToDtTm)"
		stmtMade = "no BookgDt or ValDt: time is the statement's creation (Stmt/CreDtTm)"
	)
	tests := []struct {
		file string
		want map[string]read // by TxID
	}{
		{"testdata/v02_lenient.xml", map[string]read{
			"LEN-A1": {reconcile.KindCharge, eur(12000), "2024-06-03T00:00:00Z", false, ""},
			"LEN-A2": {reconcile.KindPayout, eur(-4510), "2024-06-04T00:00:00Z", false, noSts},
			"LEN-A3": {reconcile.KindCharge, eur(750), "2024-06-05T00:00:00Z", false, noBookg},
			"LEN-A4": {reconcile.KindFee, eur(-200), "2024-06-30T20:59:59Z", false, stmtEnd},
			"LEN-A5": {reconcile.KindCharge, eur(1500), "2024-06-30T20:59:59Z", false, noSts + "; " + stmtEnd},
			"LEN-A6": {reconcile.KindPayout, eur(-6000), "2024-06-28T00:00:00Z", true, ""},
		}},
		{"testdata/v08_lenient.xml", map[string]read{
			"LEN8-A1": {reconcile.KindCharge, eur(8000), "2024-08-01T07:15:00Z", false, ""},
			"LEN8-A2": {reconcile.KindCharge, eur(1999), "2024-08-01T00:00:00Z", false, noSts},
			"LEN8-A3": {reconcile.KindPayout, eur(-525), "2024-08-01T20:30:00Z", false, noBookg},
			// Stmt/CreDtTm has no offset: read as UTC, like every DtTm.
			"LEN8-A4": {reconcile.KindPayout, eur(-100), "2024-08-02T05:00:00Z", false, stmtMade},
			"LEN8-A5": {reconcile.KindDispute, eur(-8000), "2024-08-01T00:00:00Z", false, ""},
		}},
	}
	for _, tt := range tests {
		rec, err := parseString(string(ingesttest.ReadFile(t, tt.file)))
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.file, err)
		}
		got := map[string]read{}
		for _, c := range rec.Calls {
			switch {
			case c.Evidence != nil:
				got[c.Evidence.TxID] = readOf(c.Evidence)
			case c.Call == "reject":
				t.Errorf("Parse(%s) rejected line %d: %s", tt.file, c.Line, c.Reason)
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Parse(%s) (-want +got):\n%s", tt.file, diff)
		}
	}
}

// stmtDoc is a camt.053.001.04 document whose group header holds hdr and
// whose statement starts with head; the entries start on line 5.
func stmtDoc(hdr, head, entries string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.04"><BkToCstmrStmt>
<GrpHdr><MsgId>M1</MsgId>` + hdr + `</GrpHdr>
<Stmt><Id>S1</Id>` + head + `<Acct><Id><IBAN>DE00TEST</IBAN></Id></Acct>
` + entries + `
</Stmt></BkToCstmrStmt></Document>
`
}

func TestUndatedEntryTakesTheStatementsDate(t *testing.T) {
	undated := "<Ntry><Amt Ccy='EUR'>1.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts>BOOK</Sts><AcctSvcrRef>U1</AcctSvcrRef></Ntry>"
	const (
		hdr     = "<CreDtTm>2024-03-06T01:00:00+01:00</CreDtTm>"
		created = "<CreDtTm>2024-03-05T22:00:00-02:00</CreDtTm>"
		period  = "<FrToDt><FrDtTm>2024-03-04T00:00:00</FrDtTm><ToDtTm>2024-03-04T23:59:59</ToDtTm></FrToDt>"
	)
	tests := []struct {
		name, hdr, head string
		wantTime        string
		wantNote        string
		wantReject      string
	}{
		{"period end first", hdr, created + period, "2024-03-04T23:59:59Z", "no BookgDt or ValDt: time is the statement's end (Stmt/FrToDt/ToDtTm)", ""},
		{"else statement creation", hdr, created, "2024-03-06T00:00:00Z", "no BookgDt or ValDt: time is the statement's creation (Stmt/CreDtTm)", ""},
		{"else message creation", hdr, "", "2024-03-06T00:00:00Z", "no BookgDt or ValDt: time is the message's creation (GrpHdr/CreDtTm)", ""},
		{"no date anywhere", "", "", "", "", "entry has no booking date (Ntry/BookgDt) or value date (Ntry/ValDt), and the statement has no date (Stmt/FrToDt/ToDtTm, Stmt/CreDtTm or GrpHdr/CreDtTm)"},
		{"bad statement date", hdr, "<FrToDt><FrDtTm>2024-03-04</FrDtTm><ToDtTm>2024-03-04</ToDtTm></FrToDt>", "", "", `entry has no booking or value date, and the statement's Stmt/FrToDt/ToDtTm "2024-03-04" is not a date and time (YYYY-MM-DDThh:mm:ss)`},
	}
	for _, tt := range tests {
		rec, err := parseString(stmtDoc(tt.hdr, tt.head, undated))
		if err != nil {
			t.Fatalf("%s: Parse: %v", tt.name, err)
		}
		if tt.wantReject != "" {
			want := []ingesttest.Call{{Call: "reject", Line: 5, Reason: tt.wantReject}}
			if diff := cmp.Diff(want, rec.Outcomes()); diff != "" {
				t.Errorf("%s: outcomes (-want +got):\n%s", tt.name, diff)
			}
			continue
		}
		ev := rec.Records()
		if len(ev) != 1 {
			t.Errorf("%s: Parse = %v, want one evidence", tt.name, rec.Calls)
			continue
		}
		if got := ev[0].Time.Format(time.RFC3339); got != tt.wantTime || ev[0].Metadata["camt_note"] != tt.wantNote {
			t.Errorf("%s: Parse = time %s note %q, want %s %q", tt.name, got, ev[0].Metadata["camt_note"], tt.wantTime, tt.wantNote)
		}
	}
}

func TestHeaderWithoutStatementIsUnreadable(t *testing.T) {
	const want = "line 3: not a readable statement: <BkToCstmrStmt> holds no <Stmt> (a day without entries still has its <Stmt>): the export is incomplete, fetch it again"
	for _, in := range []string{
		"<Document xmlns='urn:iso:std:iso:20022:tech:xsd:camt.053.001.02'><BkToCstmrStmt>\n<GrpHdr><MsgId>H1</MsgId><CreDtTm>2024-01-02T06:00:00</CreDtTm></GrpHdr>\n</BkToCstmrStmt></Document>",
		"<BkToCstmrStmt>\n<GrpHdr><MsgId>H1</MsgId></GrpHdr>\n</BkToCstmrStmt>",
	} {
		rec, err := parseString(in)
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, want %s", in, err, want)
		}
		if len(rec.Calls) != 0 {
			t.Errorf("Parse(%q) gave outcomes %v, want none", in, rec.Calls)
		}
	}
}

func TestStatementWithoutEntriesIsAQuietDay(t *testing.T) {
	in := stmtDoc("<CreDtTm>2024-01-02T06:00:00</CreDtTm>", "",
		"<Bal><Tp><CdOrPrtry><Cd>CLBD</Cd></CdOrPrtry></Tp><Amt Ccy='EUR'>5.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2024-01-01</Dt></Dt></Bal>")
	rec, err := parseString(in)
	if err != nil {
		t.Fatalf("Parse(statement without entries) = %v, want no error", err)
	}
	want := []ingesttest.Call{{Call: "ignore", Line: 5, Reason: "closing booked balance CLBD: 5.00 EUR on 2024-01-01, not a transaction"}}
	if diff := cmp.Diff(want, rec.Outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

func TestReturnReasonIsKept(t *testing.T) {
	tests := []struct {
		name, rtr string
		want      map[string]string
	}{
		{"ISO code with info", "<RtrInf><Rsn><Cd>MD06</Cd></Rsn><AddtlInf>REFUND REQUEST</AddtlInf><AddtlInf>BY DEBTOR</AddtlInf></RtrInf>",
			map[string]string{"return_reason": "MD06", "return_info": "REFUND REQUEST BY DEBTOR"}},
		{"proprietary code", "<RtrInf><Rsn><Prtry>R-77</Prtry></Rsn></RtrInf>",
			map[string]string{"return_reason": "R-77"}},
		{"both", "<RtrInf><Rsn><Cd>AC04</Cd><Prtry>R-77</Prtry></Rsn></RtrInf>",
			map[string]string{"return_reason": "AC04", "return_reason_prtry": "R-77"}},
		{"no return", "", map[string]string{}},
	}
	for _, tt := range tests {
		e := one(t, ntry(`<Amt Ccy="EUR">1.00</Amt>`, "DBIT", "PMNT/IDDT/UPDD",
			"<NtryDtls><TxDtls><Refs><EndToEndId>E1</EndToEndId></Refs>"+tt.rtr+"</TxDtls></NtryDtls>"))
		got := map[string]string{}
		for k, v := range e.Metadata {
			if strings.HasPrefix(k, "return_") {
				got[k] = v
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: Parse(%s) return metadata (-want +got):\n%s", tt.name, tt.rtr, diff)
		}
	}

	// Each transaction of a batch keeps its own reason.
	rec, err := parseString(doc(ntry(`<Amt Ccy="EUR">3.00</Amt>`, "DBIT", "PMNT/IDDT/UPDD", "<NtryDtls>"+
		"<TxDtls><Amt Ccy='EUR'>1.00</Amt><RtrInf><Rsn><Cd>AM04</Cd></Rsn></RtrInf></TxDtls>"+
		"<TxDtls><Amt Ccy='EUR'>2.00</Amt><RtrInf><Rsn><Cd>MS02</Cd></Rsn></RtrInf></TxDtls></NtryDtls>")))
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range rec.Records() {
		reasons = append(reasons, e.Metadata["return_reason"])
	}
	if diff := cmp.Diff([]string{"AM04", "MS02"}, reasons); diff != "" {
		t.Errorf("Parse(batch of returns) reasons (-want +got):\n%s", diff)
	}
}
