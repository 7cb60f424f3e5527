package camt

import (
	"context"
	"io"
	"strings"
	"testing"

	"reconcile/ingest/ingesttest"
)

// lowBounds lowers the decoder's bounds for the rest of t, so that a test
// needs no input of megabytes.
func lowBounds(t *testing.T, token, markup, depth int) {
	old := [3]int{maxToken, maxMarkup, maxDepth}
	maxToken, maxMarkup, maxDepth = token, markup, depth
	t.Cleanup(func() { maxToken, maxMarkup, maxDepth = old[0], old[1], old[2] })
}

// stmtWith is a statement whose Stmt holds inner after its account, on
// line 4, and then one entry, on line 5.
func stmtWith(inner string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.04"><BkToCstmrStmt>
<Stmt><Id>S1</Id><Acct><Id><IBAN>DE00TEST</IBAN></Id></Acct>
` + inner + `
` + ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", "") + `
</Stmt></BkToCstmrStmt></Document>
`
}

// A text node, or an element decoded whole, larger than the bound makes
// the statement unreadable, with the line it starts on and the bound,
// rather than have the decoder hold it all; so does markup nested too deep
// or too much of it in one element. The same statement within the bounds
// is read.
func TestXMLOverTheBoundsIsUnreadable(t *testing.T) {
	long := strings.Repeat("y", 2000)
	tests := []struct {
		name, inner, want string
		token, markup     int // maxToken and maxMarkup; maxDepth is 8
	}{
		{"within the bounds", "<TxsSummry>" + long[:900] + strings.Repeat("<a>", 7) + strings.Repeat("</a>", 7) + "</TxsSummry>", "", 1 << 10, 500},
		{"text in an entry field", ntry(`<Amt Ccy="EUR">1.00</Amt>`, "CRDT", "", "<AddtlNtryInf>"+long+"</AddtlNtryInf>"),
			"line 4: an XML element or text starting on this line is longer than 1 KiB, the bound on one: the file is corrupt, or not a bank statement", 1 << 10, 500},
		{"text between elements", strings.Repeat(" ", 2000),
			"line 3: an XML element or text starting on this line is longer than 1 KiB, the bound on one: the file is corrupt, or not a bank statement", 1 << 10, 500},
		{"text in a skipped element", "<TxsSummry><TtlNtries>" + long + "</TtlNtries></TxsSummry>",
			"line 4: an XML element or text starting on this line is longer than 1 KiB, the bound on one: the file is corrupt, or not a bank statement", 1 << 10, 500},
		{"an attribute", "<TxsSummry a='" + long + "'/>",
			"line 4: an XML element or text starting on this line is longer than 1 KiB, the bound on one: the file is corrupt, or not a bank statement", 1 << 10, 500},
		{"nested deep in a skipped element", "<TxsSummry>" + strings.Repeat("<a>", 20) + strings.Repeat("</a>", 20) + "</TxsSummry>",
			"line 4: XML elements nested more than 8 deep: the file is corrupt, or not a bank statement", 1 << 10, 500},
		{"much markup in an element decoded whole", "<Bal>" + strings.Repeat("<a/>", 3000) + "</Bal>",
			"line 4: an XML element starting on this line holds more than 1000 tags, the bound on one that is read whole: the file is corrupt, or not a bank statement", 64 << 10, 1000},
	}
	for _, tt := range tests {
		lowBounds(t, tt.token, tt.markup, 8)
		in := stmtWith(tt.inner)
		if tt.name == "text between elements" {
			in = strings.Replace(stmtWith(""), "<Stmt>", tt.inner+"<Stmt>", 1)
		}
		rec, err := parseString(in)
		switch {
		case tt.want == "" && (err != nil || len(rec.Records()) != 1):
			t.Errorf("%s: Parse = %v, %v; want one evidence", tt.name, rec.Calls, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("%s: Parse error = %v, want %s", tt.name, err, tt.want)
		}
	}
}

// parseReader parses r as parseString parses a string.
func parseReader(r io.Reader) (*ingesttest.Recorder, error) {
	rec := &ingesttest.Recorder{}
	err := Parse(context.Background(), r, Options{}, rec)
	return rec, err
}

// endless reads as an endless run of its byte.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// A text node far over the bound, as a gzip bomb expands to, stops the
// parse at the bound: the decoder never holds more than that. (The input
// ends, so that a decoder without the bound fails this test rather than
// take all the memory there is.)
func TestHugeTextNodeStopsAtTheBound(t *testing.T) {
	lowBounds(t, 1<<20, maxMarkup, maxDepth)
	head := stmtWith("")[:strings.Index(stmtWith(""), "<Ntry>")] + "<Ntry><AddtlNtryInf>"
	rec, err := parseReader(io.MultiReader(strings.NewReader(head), io.LimitReader(endless('z'), 16<<20)))
	want := "line 5: an XML element or text starting on this line is longer than 1 MiB, the bound on one"
	if err == nil || !strings.HasPrefix(err.Error(), want) || len(rec.Calls) != 0 {
		t.Errorf("Parse of a text node of 16 MiB = %v, %v; want line 5 over the bound of 1 MiB", rec.Calls, err)
	}
}
