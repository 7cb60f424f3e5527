package ingest_test

import (
	"errors"
	"strings"
	"testing"

	"reconcile/ingest"
	"reconcile/ingest/paypal"
)

// stlReport is a whole PayPal settlement report of one payment whose
// footers add up.
var stlReport = []string{
	`"RH",2024/05/02 03:10:11 -0700,"A","TESTACCT0042Z",009,`,
	`"FH",01`,
	`"SH",2024/05/01 00:00:00 -0700,2024/05/01 23:59:59 -0700,"TESTACCT0042Z",""`,
	`"CH","Transaction ID","Invoice ID","PayPal Reference ID","PayPal Reference ID Type","Transaction Event Code","Transaction Initiation Date",` +
		`"Transaction Completion Date","Transaction Debit or Credit","Gross Transaction Amount","Gross Transaction Currency","Fee Debit or Credit",` +
		`"Fee Amount","Fee Currency","Custom Field"`,
	`"SB","0PQ11112222333344","inv-42","","","T0006",2024/05/01 10:00:00 -0700,2024/05/01 10:00:01 -0700,"CR",4200,"USD","DR",150,"USD",""`,
	`"SF","USD",4200,0,0,150,"CR",0,"CR",4050,"CR",0,"CR",4050,"CR",0,"CR",0,1`,
	`"SC",1`,
	`"RF","USD",4200,0,0,150,"CR",0,"CR",4050,"CR",0,"CR",4050,"CR",0,"CR",0,1`,
	`"RC",1`,
	`"FF",1`,
}

func stl(lines []string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

// A settlement report that lost its first rows is refused with what is
// missing, not as an unknown format; one whose footers do not add up is
// refused as corrupt, as before.
func TestPayPalWithoutHeaderRows(t *testing.T) {
	dir := t.TempDir()
	if in, c, err := read(t, write(t, dir, "whole.csv", stl(stlReport)), nil); err != nil || in.Format != "paypal-stl" || len(c.evidence) != 1 {
		t.Fatalf("Read(whole report) = %+v, %d evidence, %v; want one evidence of paypal-stl", in, len(c.evidence), err)
	}
	badCount := append([]string(nil), stlReport...)
	badCount[9] = `"FF",2`
	tests := []struct {
		name   string
		data   []byte
		opt    *ingest.Options
		want   string
		unlike string // what the error must not say
	}{
		{"no-rh-fh.csv", stl(stlReport[2:]), nil,
			"looks like a PayPal settlement report (STL): its SH, CH, SB, SF, SC, RF, RC and FF rows are there, but the RH and FH rows that start the file are missing; the file may be an excerpt or cut at the top",
			"unrecognized format"},
		{"excerpt.csv", stl(stlReport[3:5]), nil,
			"its CH and SB rows are there, but the RH, FH and SH rows that start the file are missing, and so are the SF, SC, RF, RC and FF rows that end it",
			"unrecognized format"},
		{"no-rh.csv.gz", gz(t, stl(stlReport[1:])), nil, "but the RH row that starts the file is missing", "unrecognized format"},
		{"forced.csv", stl(stlReport[2:]), &ingest.Options{Format: "paypal-stl"},
			"line 1: looks like a PayPal settlement report (STL), but its first row is SH, not the report header (RH)", "unrecognized format"},
		{"bad-footer.csv", stl(badCount), nil, "corrupt or truncated STL: file footer (FF) says 2 rows, found 1", "looks like"},
	}
	for _, tc := range tests {
		path := write(t, dir, tc.name, tc.data)
		_, c, err := read(t, path, tc.opt)
		var ie *ingest.InputError
		if !errors.As(err, &ie) || ie.URI != path || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.unlike) {
			t.Errorf("Read(%s) error = %v; want an InputError naming the file and saying %q", tc.name, err, tc.want)
		}
		if tc.name == "bad-footer.csv" {
			if !errors.Is(err, paypal.ErrCorrupt) {
				t.Errorf("Read(%s) error = %v, want paypal.ErrCorrupt", tc.name, err)
			}
		} else if c != nil && len(c.evidence)+len(c.rejected) > 0 {
			t.Errorf("Read(%s) gave %d evidence and %d rejected rows, want none", tc.name, len(c.evidence), len(c.rejected))
		}
	}
}
