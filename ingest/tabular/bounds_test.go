package tabular

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile/ingest/ingesttest"
)

// lowBounds lowers the reader's bounds for the rest of t, so that a test
// needs no input of megabytes.
func lowBounds(t testing.TB, line, quoted, lines int) {
	old := [3]int{maxLine, maxQuoted, maxQuotedLines}
	maxLine, maxQuoted, maxQuotedLines = line, quoted, lines
	t.Cleanup(func() { maxLine, maxQuoted, maxQuotedLines = old[0], old[1], old[2] })
}

// A line over the bound is a rejected row, with its line, the bound and
// its first bytes; the rows after it are read. Over the bound on the last
// line, which has no terminator, it is a cut file.
func TestLineOverTheBoundIsARejectedRow(t *testing.T) {
	lowBounds(t, 40, 1000, 100)
	x50 := strings.Repeat("x", 50)
	tests := []struct {
		name, in string
		want     []ingesttest.Call
		err      string
	}{
		{"over", "a,b,c\n1,2," + x50 + "\n4,5,6\n", []ingesttest.Call{
			{Call: "reject", Line: 2, Raw: "1,2," + x50[:36],
				Reason: "line 2 is longer than 40 bytes, the bound on one line: it is not read, and only its first 40 bytes are kept as its raw text"},
			{Call: "ignore", Line: 3, Reason: "4|5|6"}}, ""},
		{"over with quotes and CRLF", "a,b,c\r\n\"1\",\"" + x50 + "\"\r\n4,5,6\r\n", []ingesttest.Call{
			{Call: "reject", Line: 2, Raw: "\"1\",\"" + x50[:35],
				Reason: "line 2 is longer than 40 bytes, the bound on one line: it is not read, and only its first 40 bytes are kept as its raw text"},
			{Call: "ignore", Line: 3, Reason: "4|5|6"}}, ""},
		{"not cut in a UTF-8 sequence", "a,b,c\n1,2,x" + strings.Repeat("é", 30) + "\n", []ingesttest.Call{
			{Call: "reject", Line: 2, Raw: "1,2,x" + strings.Repeat("é", 17),
				Reason: "line 2 is longer than 40 bytes, the bound on one line: it is not read, and only its first 39 bytes are kept as its raw text"}}, ""},
		{"at the bound", "a,b,c\n1,2," + x50[:36] + "\r\n", []ingesttest.Call{
			{Call: "reject", Line: 2, Raw: "1,2," + x50[:36], Reason: "an x"}}, ""},
		{"over on the cut last line", "a,b,c\n1,2,3\n" + x50, []ingesttest.Call{{Call: "ignore", Line: 2, Reason: "1|2|3"}},
			"line 3: the last line has no line terminator and its row is rejected (line 3 is longer than 40 bytes, the bound on one line: " +
				"it is not read, and only its first 40 bytes are kept as its raw text): the file may still be being written; run again when it is complete"},
	}
	for _, tc := range tests {
		calls, err := guarded(t, tc.in, 3)
		if diff := cmp.Diff(tc.want, calls); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", tc.name, diff)
		}
		if got := errString(err); got != tc.err {
			t.Errorf("%s: error %q, want %q", tc.name, got, tc.err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A quoted field that runs on past its bound makes the input unreadable
// from the line where the quote opened, rather than take the rest of the
// file for one field; one within the bounds is read, and a quote left open
// at the end of the file is still a file that may be being written.
func TestQuoteNeverClosedStopsAtTheBound(t *testing.T) {
	lowBounds(t, 1000, 30, 4)
	rows := "5,6,7\n8,9,10\n11,12,13\n14,15,16\n"
	tests := []struct {
		name, in string
		want     []string
		err      string
	}{
		{"never closed", "a,b,c\n1,2,3\n4,\"open\n" + rows, []string{"ignore@2"},
			"a quote opened on line 3 is never closed within 4 lines (a quoted field may run over at most 4 lines and hold at most 30 bytes)"},
		{"opened on a later line of its row", "a,b,c\n1,\"2\n2\",\"open\n" + rows, []string{},
			"a quote opened on line 3 is never closed within 4 lines (a quoted field may run over at most 4 lines and hold at most 30 bytes)"},
		{"over the bytes", "a,b,c\n\"" + strings.Repeat("q", 20) + "\n" + strings.Repeat("q", 20) + "\nq\",2,3\n", []string{},
			"a quote opened on line 2 is not closed within 30 bytes (a quoted field may run over at most 4 lines and hold at most 30 bytes)"},
		{"closed on its fourth line", "a,b,c\n4,\"o\np\nq\nr\",6\n7,8,9\n", []string{"ignore@2", "ignore@6"}, ""},
		{"open at the end of the file", "a,b,c\n1,2,3\n4,\"open\n5,6", []string{"ignore@2"},
			"line 3: the last line is cut in the middle of a row (no line terminator, inside a quoted field): the file may still be being written; run again when it is complete"},
	}
	for _, tc := range tests {
		calls, err := guarded(t, tc.in, 3)
		if diff := cmp.Diff(tc.want, ingesttest.Summary(calls)); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", tc.name, diff)
		}
		if got := errString(err); got != tc.err {
			t.Errorf("%s: error %q, want %q", tc.name, got, tc.err)
		}
	}
}

// A row of many quoted fields, each within its bound, still may not grow
// past the bound on a row; nor may a line of a quoted field.
func TestRowOverTheBoundAcrossLines(t *testing.T) {
	lowBounds(t, 40, 30, 100)
	for _, in := range []string{
		"a,b,c\n" + strings.Repeat("\"aaaaaaaa\nb\",", 5) + "x\n",
		"a,b,c\n\"a\n" + strings.Repeat("z", 50) + "\"\n",
	} {
		_, err := guarded(t, in, 3)
		var be *BoundError
		if !errors.As(err, &be) || be.Line != 2 || err.Error() != "the row starting on line 2 is longer than 40 bytes, the bound on one row" {
			t.Errorf("read %q: error %v, want the row starting on line 2 over 40 bytes", in, err)
		}
	}
}

// filler reads as n bytes of 'x'.
type filler struct{ n int }

func (f *filler) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	f.n -= k
	return k, nil
}

// A line of more than MaxLine, as a gzip bomb expands to, is skipped as it
// is read rather than held: Read stops at the bound with ErrLineTooLong,
// keeps its first 4 KiB, and reads on.
func TestLineOverMaxLineIsNotHeld(t *testing.T) {
	in := io.MultiReader(strings.NewReader("id,note\n1,"), &filler{MaxLine + 1<<20}, strings.NewReader("\n2,b\n"))
	r, err := NewReader(in, ',')
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Read(); err != nil {
		t.Fatal(err)
	}
	_, line, err := r.Read()
	if pe := Malformed(err); pe == nil || !errors.Is(pe.Err, ErrLineTooLong) || line != 2 || len(r.Raw()) != keptOfLong {
		t.Fatalf("Read = line %d, %v, %d bytes of raw text; want line 2, %v, %d bytes", line, err, len(r.Raw()), ErrLineTooLong, keptOfLong)
	}
	rec, line, err := r.Read()
	if err != nil || line != 3 || !cmp.Equal(rec, []string{"2", "b"}) {
		t.Errorf("Read after the long line = %q, %d, %v; want [2 b] on line 3", rec, line, err)
	}
}

// FuzzReaderBounds reads any input with small bounds: the raw text of
// every record stays within them, an input stops only with a
// *BoundError, and until a bound is reached the records are those read
// without the bounds.
func FuzzReaderBounds(f *testing.F) {
	for _, s := range []string{
		"balance_transaction_id,created_utc,currency,gross,fee\ntxn_1,2026-11-01 10:00:00,eur,142.00,4.26\n",
		"Company Account,Merchant Account,Psp Reference\r\nAcme,\"Shop, EU\",8815\r\n",
		"\"RH\",\"2026/11/01 00:00:00 +0000\",\"A\"\n\"SB\",\"9X\",\"note\nover lines\",\"1000\"\n",
		"a;b\n\"open;1\n2;3\n4;5\n6;7\n8;9\n",
		"a,b\n1," + strings.Repeat("x", 100) + "\n2,3",
		"a,b\n" + strings.Repeat("\"q\nq\",", 20) + "\n",
		"a\tb\n\"\"\"x\"\"\"\t\"é\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		free := readBounded(t, in)
		lowBounds(t, 64, 32, 3)
		got := readBounded(t, in)
		for i, row := range got {
			if len(row.Raw) > maxLine {
				t.Fatalf("record on line %d: %d bytes of raw text, over the bound of %d", row.Line, len(row.Raw), maxLine)
			}
			if row.Err == "bound" || row.Err == "too long" {
				return // from here the records differ
			}
			if i >= len(free) || !cmp.Equal(row, free[i]) {
				t.Fatalf("record %d = %+v with the bounds, %+v without", i, row, free[min(i, len(free)-1)])
			}
		}
		if len(got) != len(free) {
			t.Fatalf("%d records with the bounds, %d without", len(got), len(free))
		}
	})
}

// readBounded reads every record of in, noting a line over the bound as
// "too long" and a *BoundError, which ends the reading, as "bound".
func readBounded(t *testing.T, in string) []rawRow {
	r, err := NewReader(strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	var rows []rawRow
	for {
		rec, line, err := r.Read()
		var be *BoundError
		pe := Malformed(err)
		switch {
		case errors.Is(err, io.EOF):
			return rows
		case errors.As(err, &be):
			return append(rows, rawRow{Line: line, Err: "bound"})
		case pe != nil && errors.Is(pe.Err, ErrLineTooLong):
			rows = append(rows, rawRow{Line: line, Raw: r.Raw(), Err: "too long"})
		case pe != nil:
			rows = append(rows, rawRow{Line: line, Raw: r.Raw(), Err: err.Error()})
		case err != nil:
			t.Fatalf("Read: %v, want a record, a *csv.ParseError or a *BoundError", err)
		default:
			for _, f := range rec {
				if len(f) > len(r.Raw()) {
					t.Fatalf("line %d: a field of %d bytes in a record of %d", line, len(f), len(r.Raw()))
				}
			}
			rows = append(rows, rawRow{Line: line, Fields: append([]string(nil), rec...), Raw: r.Raw()})
		}
	}
}
