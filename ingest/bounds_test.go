package ingest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"reconcile/ingest"
	"reconcile/ingest/csvmap"
	"reconcile/ingest/tabular"
)

// readStdin reads data as standard input, under the URI "-".
func readStdin(t *testing.T, data []byte, opt *ingest.Options) (*ingest.Input, *collect, error) {
	t.Helper()
	srcs, err := ingest.Expand(context.Background(), []string{"-"}, bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	if opt == nil {
		opt = &ingest.Options{}
	}
	c := &collect{}
	in, err := ingest.Read(context.Background(), srcs[0], opt, c)
	return in, c, err
}

// bomb returns a gzip file, of a few kilobytes, that expands to head, then
// n MiB of 'x', then tail: one gzip member for each MiB, as gzip reads a
// concatenation of members as one file.
func bomb(t *testing.T, head string, n int, tail string) []byte {
	t.Helper()
	var b bytes.Buffer
	b.Write(gz(t, []byte(head)))
	mib := gz(t, bytes.Repeat([]byte("x"), 1<<20))
	for range n {
		b.Write(mib)
	}
	b.Write(gz(t, []byte(tail)))
	return b.Bytes()
}

// A gzip that expands to a CSV line longer than tabular.MaxLine gives a
// rejected row with its line and the bound; the reader skips the rest of
// the line rather than hold it, and the rows after it are read.
func TestGzipBombLineIsARejectedRow(t *testing.T) {
	lines := strings.SplitAfter(itemized, "\n")
	data := bomb(t, lines[0]+lines[1]+"txn_9,", tabular.MaxLine>>20+1, "\n"+lines[2])
	in, c, err := readStdin(t, data, nil)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if in.Rows != 3 || in.Evidence != 2 || in.Rejected != 1 {
		t.Errorf("rows, evidence, rejected = %d, %d, %d; want 3, 2, 1", in.Rows, in.Evidence, in.Rejected)
	}
	want := "line 3 is longer than 64 MiB, the bound on one line: it is not read, and only its first 4 KiB are kept as its raw text"
	if len(c.rejected) != 1 {
		t.Fatalf("%d rows rejected, want 1", len(c.rejected))
	}
	if r := c.rejected[0]; r.Line != 3 || r.Reason != want || len(r.Raw) != 4<<10 {
		t.Errorf("rejected line %d: %q, with %d bytes of raw text; want line 3: %q, with 4 KiB", r.Line, r.Reason, len(r.Raw), want)
	}
}

// An input that decompresses to more than MaxInputBytes is unreadable,
// named with the bound and the flag that sets it, whether it is a gzip or
// plain; one within the bound is read.
func TestInputOverMaxInputBytesIsUnreadable(t *testing.T) {
	lines := strings.SplitAfter(itemized, "\n")
	note := func(n int) string { // a row with a description of n bytes
		return "txn_9,2026-11-01 10:00:00,eur,1.00,0.00,1.00,charge,ch_9,ch_9," + strings.Repeat("x", n) + ",\n"
	}
	opt := &ingest.Options{MaxInputBytes: 1 << 20}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"gzip bomb", bomb(t, itemized, 8, "\n"), "-: more than 1 MiB once decompressed (--max-input-bytes): "},
		{"plain", []byte(itemized + note(2<<20)), "-: more than 1 MiB once decompressed (--max-input-bytes): "},
		{"gzip, past the rows", bomb(t, itemized+"\n", 1, "\n"), "-: more than 1 MiB once decompressed (--max-input-bytes): "},
		{"gzip within the bound", gz(t, []byte(lines[0]+note(1<<19))), ""},
	} {
		_, _, err := readStdin(t, tc.data, opt)
		var ie *ingest.InputError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v; want it read", tc.name, err)
		case tc.want != "" && (!errors.As(err, &ie) || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s: error %v; want an InputError starting %q", tc.name, err, tc.want)
		}
	}
}

// A header that names a column the parser reads twice refuses the input,
// naming the column and both places; a repeated column the parser does not
// read is kept as before.
func TestRepeatedColumnThatIsReadRefusesTheInput(t *testing.T) {
	file := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ams, _ := time.LoadLocation("Europe/Amsterdam")
	la, _ := time.LoadLocation("America/Los_Angeles")
	adyenOpt := &ingest.Options{AdyenZones: map[string]*time.Location{"ShopEU_ACCOUNT": ams}, AdyenDefaultZone: la}
	mf, err := os.Open("csvmap/testdata/acmebank.json")
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	m, err := csvmap.LoadMapping(mf)
	if err != nil {
		t.Fatal(err)
	}
	csvOpt := &ingest.Options{Format: "csv", Mapping: m}
	header := func(data, old, new string) string { // data with its first old, in the header, replaced
		return strings.Replace(data, old, new, 1)
	}
	extra := func(data string, from int, head, row string) string { // data with columns added from line from on
		lines := strings.SplitAfter(strings.TrimSuffix(data, "\n"), "\n")
		for i := from - 1; i < len(lines); i++ {
			add := row
			if i == from-1 {
				add = head
			}
			lines[i] = strings.TrimRight(lines[i], "\r\n") + add + "\n"
		}
		return strings.Join(lines, "")
	}
	adyen, stl, acme := file("adyen/testdata/settlement_detail.csv"), file("paypal/testdata/stl_comma.csv"), file("csvmap/testdata/acmebank.csv")
	for _, tc := range []struct {
		name, data string
		opt        *ingest.Options
		want       string
	}{
		{"stripe", header(itemized, ",net,", ",gross,"), nil,
			`stripe-itemized: line 1: the header names column "gross" twice (columns 4 and 6)`},
		{"stripe, an effect key", header(itemized, "refund_metadata[effect_key]", "Payment_Metadata[effect_key]"), nil,
			`stripe-itemized: line 1: the header names column "payment_metadata[effect_key]" twice (columns 10 and 11)`},
		{"adyen", header(adyen, "Reserved4", "Gross Credit (GC)"), adyenOpt,
			`adyen-settlement: line 1: the header names column "Gross Credit (GC)" twice (columns 12 and 24)`},
		{"paypal", header(stl, `"Credit Term"`, `"Gross Transaction Amount"`), nil,
			`paypal-stl: line 4: column header (CH): the header names column "Gross Transaction Amount" twice (columns 10 and 22)`},
		{"csvmap", extra(acme, 4, ";amount", ";"), csvOpt,
			`csv: line 4: the header names column "Amount" twice (columns 7 and 12)`},
		{"csvmap, a metadata column", extra(acme, 4, ";Value Date", ";"), csvOpt,
			`csv: line 4: the header names column "Value Date" twice (columns 2 and 12)`},
		{"stripe, not read", extra(itemized, 1, ",net", ","), nil, ""},
		{"adyen, not read", header(adyen, "Reserved5", "Reserved4"), adyenOpt, ""},
		{"paypal, not read", header(stl, `"Credit Term"`, `"Credit Promotional Fee"`), nil, ""},
		{"csvmap, not read", extra(acme, 4, ";Note;Note", ";;"), csvOpt, ""},
	} {
		in, _, err := readStdin(t, []byte(tc.data), tc.opt)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v; want it read", tc.name, err)
		case tc.want == "" && in.Evidence == 0:
			t.Errorf("%s: no evidence read: %+v", tc.name, in)
		case tc.want != "" && (err == nil || err.Error() != "-: "+tc.want):
			t.Errorf("%s: error %v; want %q", tc.name, err, "-: "+tc.want)
		}
	}
}

// A quote never closed makes the input unreadable at the bound, naming the
// line where it opened, rather than take the rest of the file for one
// field.
func TestQuoteNeverClosedIsUnreadable(t *testing.T) {
	lines := strings.SplitAfter(itemized, "\n")
	data := lines[0] + lines[1] + strings.Replace(lines[2], ",charge,", `,"charge,`, 1) + strings.Repeat(lines[1], tabular.MaxQuotedLines)
	_, _, err := readStdin(t, []byte(data), nil)
	want := "-: stripe-itemized: line 3: a quote opened on line 3 is never closed within 10000 lines (a quoted field may run over at most 10000 lines and hold at most 1 MiB)"
	var ie *ingest.InputError
	if !errors.As(err, &ie) || err.Error() != want {
		t.Errorf("Read = %v; want %q", err, want)
	}
}
