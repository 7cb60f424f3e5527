package tabular

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile/ingest/ingesttest"
)

// rawRow is a record as Read returns it, with its raw text, or its error.
type rawRow struct {
	Line   int
	Fields []string
	Raw    string
	Err    string
}

func readRaw(t *testing.T, in string, comma rune) []rawRow {
	t.Helper()
	r, err := NewReader(strings.NewReader(in), comma)
	if err != nil {
		t.Fatal(err)
	}
	var rows []rawRow
	for {
		rec, line, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Read: %v", err)
			}
			rows = append(rows, rawRow{Line: line, Raw: r.Raw(), Err: err.Error()})
			continue
		}
		rows = append(rows, rawRow{Line: line, Fields: append([]string(nil), rec...), Raw: r.Raw()})
	}
}

func TestReaderRecordsAndRawText(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		comma rune
		want  []rawRow
	}{
		{"bom and crlf", "\xEF\xBB\xBFid,amount\r\nch_1,25.00\r\n", 0, []rawRow{
			{1, []string{"id", "amount"}, "id,amount", ""},
			{2, []string{"ch_1", "25.00"}, "ch_1,25.00", ""}}},
		{"semicolon", "id;amount\nch_1;\"1.250,00\"\n", 0, []rawRow{
			{1, []string{"id", "amount"}, "id;amount", ""},
			{2, []string{"ch_1", "1.250,00"}, `ch_1;"1.250,00"`, ""}}},
		{"tab", "id\tamount\nch_1\t5\n", 0, []rawRow{
			{1, []string{"id", "amount"}, "id\tamount", ""},
			{2, []string{"ch_1", "5"}, "ch_1\t5", ""}}},
		{"quoted commas and doubled quotes", "a,\"b, c\",\"say \"\"hi\"\"\",\"\"\n", 0, []rawRow{
			{1, []string{"a", "b, c", `say "hi"`, ""}, `a,"b, c","say ""hi""",""`, ""}}},
		{"multi-line field", "id,desc\nch_1,\"one\ntwo\"\nch_2,x\n", 0, []rawRow{
			{1, []string{"id", "desc"}, "id,desc", ""},
			{2, []string{"ch_1", "one\ntwo"}, "ch_1,\"one\ntwo\"", ""},
			{4, []string{"ch_2", "x"}, "ch_2,x", ""}}},
		{"multi-line field with crlf: the field has lf, the raw text crlf", "a,\"one\r\ntwo\"\r\nb,c\r\n", 0, []rawRow{
			{1, []string{"a", "one\ntwo"}, "a,\"one\r\ntwo\"", ""},
			{3, []string{"b", "c"}, "b,c", ""}}},
		{"blank lines are not rows", "id\n\n\r\nch_1\n\n", 0, []rawRow{
			{1, []string{"id"}, "id", ""},
			{4, []string{"ch_1"}, "ch_1", ""}}},
		{"header only", "id,amount\n", 0, []rawRow{{1, []string{"id", "amount"}, "id,amount", ""}}},
		{"header only, no line end", "id,amount", 0, []rawRow{{1, []string{"id", "amount"}, "id,amount", ""}}},
		{"empty", "", 0, nil},
		{"only a bom", "\xEF\xBB\xBF", 0, nil},
		{"a cr inside a line is data, a last cr is dropped", "a\rb,c\r", ',', []rawRow{{1, []string{"a\rb", "c"}, "a\rb,c", ""}}},
		{"cr before crlf", "a,b\r\r\n", ',', []rawRow{{1, []string{"a", "b\r"}, "a,b\r", ""}}},
		{"empty fields", ",,\n\"\",\n", ',', []rawRow{
			{1, []string{"", "", ""}, ",,", ""},
			{2, []string{"", ""}, `"",`, ""}}},
		{"multi-byte delimiter", "a¦\"b¦c\"¦d\n", '¦', []rawRow{{1, []string{"a", "b¦c", "d"}, "a¦\"b¦c\"¦d", ""}}},
		{"bare quote: the line is the record, reading goes on", "id,x\nch_1,a\"b\nch_2,y\n", ',', []rawRow{
			{1, []string{"id", "x"}, "id,x", ""},
			{2, nil, `ch_1,a"b`, `parse error on line 2, column 7: bare " in non-quoted-field`},
			{3, []string{"ch_2", "y"}, "ch_2,y", ""}}},
		{"extraneous quote", "ch_1,\"a\"b,c\r\nch_2,y\n", ',', []rawRow{
			{1, nil, `ch_1,"a"b,c`, `parse error on line 1, column 8: extraneous or missing " in quoted-field`},
			{2, []string{"ch_2", "y"}, "ch_2,y", ""}}},
		{"bad quote on the second line of a record", "a,\"x\ny\"z,w\nb\n", ',', []rawRow{
			{1, nil, "a,\"x\ny\"z,w", `record on line 1; parse error on line 2, column 2: extraneous or missing " in quoted-field`},
			{3, []string{"b"}, "b", ""}}},
		{"unterminated quote takes the rest of the file", "a,b\nc,\"d\ne,f\n", ',', []rawRow{
			{1, []string{"a", "b"}, "a,b", ""},
			{2, nil, "c,\"d\ne,f", `record on line 2; parse error on line 3, column 5: extraneous or missing " in quoted-field`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, readRaw(t, tc.in, tc.comma)); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReaderLongLines(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	in := "a,b\n" + long + "," + long + "\n\"" + long + "\n" + long + "\",z\n"
	want := []rawRow{
		{1, []string{"a", "b"}, "a,b", ""},
		{2, []string{long, long}, long + "," + long, ""},
		{3, []string{long + "\n" + long, "z"}, "\"" + long + "\n" + long + "\",z", ""},
	}
	if diff := cmp.Diff(want, readRaw(t, in, 0)); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff[:min(len(diff), 2000)])
	}
}

func TestReaderInvalidDelimiter(t *testing.T) {
	r, err := NewReader(strings.NewReader("a\"b\n"), '"')
	if err != nil {
		t.Fatal(err)
	}
	c := csv.NewReader(strings.NewReader("a\"b\n"))
	c.Comma = '"'
	_, werr := c.Read()
	if _, _, err := r.Read(); err == nil || werr == nil || err.Error() != werr.Error() {
		t.Errorf("Read with delimiter '\"' = %v, encoding/csv says %v", err, werr)
	}
}

// fuzzCommas are the delimiters FuzzReaderMatchesEncodingCSV reads with;
// 0 sniffs.
var fuzzCommas = []rune{0, ',', ';', '\t', '|', '¦', '\u3001'}

// FuzzReaderMatchesEncodingCSV reads the input with Reader and with
// encoding/csv and requires the same records, starting lines and errors
// (with their lines and columns), record by record through errors to the
// end. Raw must be the input the record was read from: what encoding/csv
// consumed for it, less blank lines before it and the line end after it.
func FuzzReaderMatchesEncodingCSV(f *testing.F) {
	for _, s := range []string{
		"id,amount\r\nch_1,25.00\r\n", "\xEF\xBB\xBFa;b\n1;\"2,5\"\n", "a\tb\n\"x\"\"y\"\t\"\"\n",
		"a,\"b\nc\",d\n\ne\n", "a,\"b\r\nc\"\r\n", "a,b\"c\nd\n", "\"a\"b,c\nd\n", "a,\"b\n", "\"\r", "a\r\r\n\r",
		"x¦\"y¦z\"¦\n", "\"\"\"\",\"\n\"\n\n,", "a,\"b\"\"\n\"\"c\",d\r\ne",
		// Lines of each kind after one another, as the reader tries first the
		// way for the kind the last line was.
		"\"SB\",\"x\",1\n\"SB\",\"a,b\",2\n\"a,b\",c\n\"d,e\",\" f\"\n\"SB\",\"y\"\"z\",3\n\"q\",\"r\ns\",t\n\"SB\",4,\"\"\n\"u\"v,w\n",
	} {
		for i := range fuzzCommas {
			f.Add(s, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, in string, which uint8) {
		r, err := NewReader(strings.NewReader(in), fuzzCommas[int(which)%len(fuzzCommas)])
		if err != nil {
			t.Fatal(err)
		}
		body := strings.TrimPrefix(in, "\xEF\xBB\xBF")
		c := csv.NewReader(strings.NewReader(body))
		c.Comma = r.Comma
		c.FieldsPerRecord = -1
		prev := int64(0)
		for n := 0; ; n++ {
			if n > len(in)+1 {
				t.Fatalf("more records than bytes")
			}
			want, werr := c.Read()
			got, line, gerr := r.Read()
			if errors.Is(werr, io.EOF) {
				if !errors.Is(gerr, io.EOF) {
					t.Fatalf("record %d: got %q, %v; encoding/csv is at the end", n, got, gerr)
				}
				if _, _, err := r.Read(); !errors.Is(err, io.EOF) {
					t.Fatalf("Read after io.EOF: %v", err)
				}
				return
			}
			var wpe, gpe *csv.ParseError
			switch {
			case errors.As(werr, &wpe):
				if !errors.As(gerr, &gpe) {
					t.Fatalf("record %d: got %q, %v; encoding/csv says %v", n, got, gerr, werr)
				}
				if *gpe != *wpe || line != wpe.StartLine {
					t.Fatalf("record %d: got error %#v on line %d, encoding/csv %#v", n, gpe, line, wpe)
				}
				if r.Joined() != r.Raw() {
					t.Fatalf("record %d: Joined() = %q after an error, Raw() %q", n, r.Joined(), r.Raw())
				}
			case werr != nil:
				t.Fatalf("encoding/csv: %v", werr)
			default:
				if gerr != nil {
					t.Fatalf("record %d: got %v, encoding/csv %q", n, gerr, want)
				}
				if wline, _ := c.FieldPos(0); line != wline {
					t.Fatalf("record %d: line %d, encoding/csv %d", n, line, wline)
				}
				if !cmp.Equal(got, want) {
					t.Fatalf("record %d: got %q, encoding/csv %q", n, got, want)
				}
				if j := Join(got, r.Comma); r.Joined() != j {
					t.Fatalf("record %d: Joined() = %q, Join gives %q", n, r.Joined(), j)
				}
			}
			// What encoding/csv consumed for this record is blank lines,
			// the record's raw text and its line end.
			off := c.InputOffset()
			chunk := body[prev:off]
			prev = off
			if s, ok := strings.CutSuffix(chunk, "\n"); ok {
				chunk = strings.TrimSuffix(s, "\r")
			} else {
				chunk = strings.TrimSuffix(chunk, "\r")
			}
			blank, ok := strings.CutSuffix(chunk, r.Raw())
			if !ok || strings.Trim(blank, "\r\n") != "" || strings.Contains(strings.ReplaceAll(blank, "\r\n", ""), "\r") {
				t.Fatalf("record %d: Raw() = %q, but the record was read from %q", n, r.Raw(), chunk)
			}
			if r.Raw() == "" {
				t.Fatalf("record %d: Raw() is empty", n)
			}
		}
	})
}

// benchCSV is a realistic export: 100k rows of 20 columns, some quoted
// (with delimiters and, now and then, doubled quotes inside), CRLF line ends.
func benchCSV() []byte {
	var b bytes.Buffer
	b.WriteString("id,created,currency,gross,fee,net,category,source,description,customer,email,charge,intent,invoice,method,brand,funding,country,payout,order\r\n")
	for i := range 100_000 {
		desc := fmt.Sprintf("Order %d", i)
		switch {
		case i%5 == 0:
			desc = fmt.Sprintf("\"Donation, order %d\"", i)
		case i%97 == 0:
			desc = fmt.Sprintf("\"Mug \"\"blue\"\", order %d\"", i)
		}
		fmt.Fprintf(&b, "txn_1Bench%08d,2025-03-01 %02d:%02d:%02d,usd,%d.%02d,0.%02d,%d.%02d,charge,ch_1Bench%08d,%s,cus_%06d,donor%d@example.org,ch_1Bench%08d,pi_1Bench%08d,,card,visa,credit,US,po_1Bench%04d,ord-%d\r\n",
			i, i%24, i%60, i%60, 5+i%900, i%100, i%100, 4+i%900, i%100, i, desc, i%5000, i, i, i, i/10000, i)
	}
	return b.Bytes()
}

func BenchmarkReader(b *testing.B) {
	ingesttest.Bench(b, benchCSV(), func(in io.Reader) error {
		n, err := readCount(in, false)
		if err == nil && n != 100_001 {
			err = fmt.Errorf("%d records", n)
		}
		return err
	})
}

// BenchmarkEncodingCSV reads the same bytes with encoding/csv, as Reader did
// before: Reader should be no slower.
func BenchmarkEncodingCSV(b *testing.B) {
	if n := ingesttest.BenchReadCSV(b, benchCSV()); n != 100_001 {
		b.Fatalf("%d records", n)
	}
}

func TestReaderJoined(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a,b c,\"d,e\",\"f\"\"g\"", "a,b c,\"d,e\",\"f\"\"g\""}, // as Join writes it: Raw itself
		{`"SB","x",,""`, "SB,x,,"},                               // quotes that are not needed
		{"a, b", `a," b"`},                                       // a leading space Join quotes
		{"a,\"b\r\nc\"", "a,\"b\nc\""},                           // CRLF inside quotes
		{"a,\\.", `a,"\."`},
	} {
		r, err := NewReader(strings.NewReader(tc.in), ',')
		if err != nil {
			t.Fatal(err)
		}
		rec, _, err := r.Read()
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if got := r.Joined(); got != tc.want || got != Join(rec, ',') {
			t.Errorf("%q: Joined() = %q, want %q", tc.in, got, tc.want)
		}
	}
}
