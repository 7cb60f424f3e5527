package camt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var upperCode = regexp.MustCompile(`^[A-Z]{3}$`)

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.xml")
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(doc(ntry(`<Amt Ccy="JPY">15000</Amt>`, "DBIT", "PMNT/ICDT/ESCT", ""))))
	f.Add([]byte(doc(ntry(`<Amt Ccy="KWD">1.234</Amt>`, "CRDT", "PMNT/RCDT/ESCT", "<NtryDtls><TxDtls><Amt Ccy='KWD'>1</Amt></TxDtls><TxDtls><Amt Ccy='KWD'>0.234</Amt></TxDtls></NtryDtls>"))))
	f.Add([]byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<Document><BkToCstmrStmt><Stmt><Ntry><Amt Ccy='EUR'>1</Amt></Ntry></Stmt></BkToCstmrStmt></Document>"))

	f.Fuzz(func(t *testing.T, in []byte) {
		a := &recorder{}
		errA := Parse(context.Background(), bytes.NewReader(in), Options{}, a)
		b := &recorder{}
		errB := Parse(context.Background(), bytes.NewReader(in), Options{}, b)
		if (errA == nil) != (errB == nil) || errA != nil && errA.Error() != errB.Error() {
			t.Fatalf("two parses of the same input: errors %v and %v", errA, errB)
		}
		if diff := cmp.Diff(a.lines, b.lines); diff != "" {
			t.Fatalf("two parses of the same input differ:\n%s", diff)
		}
		lines := bytes.Count(in, []byte("\n")) + 1
		for _, o := range a.outs {
			if o.Line < 1 || o.Line > lines {
				t.Errorf("%s on line %d, input has %d lines", o.Op, o.Line, lines)
			}
			if o.Op != "evidence" && o.Reason == "" {
				t.Errorf("%s on line %d without a reason", o.Op, o.Line)
			}
		}
		for _, e := range a.ev {
			if !upperCode.MatchString(e.Amount.Currency) {
				t.Errorf("evidence on line %d has currency %q", e.Line, e.Amount.Currency)
			}
			if e.Time.Location() != time.UTC || e.Time.IsZero() {
				t.Errorf("evidence on line %d has time %v, want a UTC time", e.Line, e.Time)
			}
			if e.Provider != Provider || e.Raw == "" {
				t.Errorf("evidence on line %d: provider %q, raw %q", e.Line, e.Provider, e.Raw)
			}
		}
	})
}
