package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ingest"
)

// itemized is a small Stripe itemized report: two charges, a refund, a fee,
// and a row whose amount is rejected.
const itemized = "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,payment_metadata[effect_key],refund_metadata[effect_key]\n" +
	"txn_1,2026-11-01 10:00:00,eur,142.00,4.26,137.74,charge,ch_1,ch_1,run_1:charge:0,\n" +
	"txn_2,2026-11-01 11:00:00,eur,10.00,0.30,9.70,charge,ch_2,ch_2,run_1:charge:1,\n" +
	"txn_3,2026-11-01 12:00:00,eur,-10.00,0.00,-10.00,refund,re_1,ch_2,run_1:charge:1,run_1:charge:1:compensate:ch_2\n" +
	"txn_4,2026-11-01 13:00:00,jpy,1500.5,0,1500.5,charge,ch_3,ch_3,run_1:charge:2,\n" +
	"txn_5,2026-11-01 14:00:00,eur,-0.50,0.00,-0.50,fee,,,,\n"

type collect struct {
	evidence []reconcile.Evidence
	rejected []reconcile.Rejected
}

func (c *collect) Evidence(e *reconcile.Evidence) error {
	c.evidence = append(c.evidence, *e)
	return nil
}
func (c *collect) Reject(r *reconcile.Rejected) error {
	c.rejected = append(c.rejected, *r)
	return nil
}

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func read(t *testing.T, path string, opt *ingest.Options) (*ingest.Input, *collect, error) {
	t.Helper()
	srcs, err := ingest.Expand(context.Background(), []string{path}, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	if len(srcs) != 1 {
		t.Fatalf("Expand(%s) = %d sources", path, len(srcs))
	}
	if opt == nil {
		opt = &ingest.Options{}
	}
	c := &collect{}
	in, err := ingest.Read(context.Background(), srcs[0], opt, c)
	return in, c, err
}

func TestReadAccountsForEveryRow(t *testing.T) {
	path := write(t, t.TempDir(), "balance.itemized.csv", []byte(itemized))
	in, c, err := read(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in.Format != "stripe-itemized" || in.Rows != 5 || in.Evidence != 4 || in.Rejected != 1 || in.Ignored != 0 {
		t.Errorf("Read = format %s rows %d evidence %d rejected %d ignored %d; want stripe-itemized 5 4 1 0",
			in.Format, in.Rows, in.Evidence, in.Rejected, in.Ignored)
	}
	if in.Rows != in.Evidence+in.Rejected+in.Ignored {
		t.Errorf("rows %d != evidence + rejected + ignored", in.Rows)
	}
	want := []ingest.Total{
		{Provider: "stripe", Currency: "EUR", Kind: reconcile.KindCharge, Count: 2, AmountMinor: 15200, FeeMinor: 456},
		{Provider: "stripe", Currency: "EUR", Kind: reconcile.KindFee, Count: 1, AmountMinor: -50},
		{Provider: "stripe", Currency: "EUR", Kind: reconcile.KindRefund, Count: 1, AmountMinor: -1000},
	}
	if diff := cmp.Diff(want, in.Totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if len(c.rejected) != 1 || c.rejected[0].Line != 5 || c.rejected[0].URI != path || !strings.Contains(c.rejected[0].Reason, "1500.5") {
		t.Errorf("rejected = %+v; want line 5 of %s naming the amount", c.rejected, path)
	}
	for _, e := range c.evidence {
		if e.URI != path || e.Line < 2 {
			t.Errorf("evidence %s has provenance %s:%d", e.TxID, e.URI, e.Line)
		}
	}
	srcs, _ := ingest.Expand(context.Background(), []string{path}, nil, nil)
	if h, err := srcs[0].Hash(context.Background()); err != nil || h != in.Hash || len(h) != 64 {
		t.Errorf("Source.Hash = %q, %v; Read's hash %q", h, err, in.Hash)
	}
}

func TestGzipIsReadTransparently(t *testing.T) {
	dir := t.TempDir()
	plain, pc, err := read(t, write(t, dir, "a.csv", []byte(itemized)), nil)
	if err != nil {
		t.Fatal(err)
	}
	zipped, zc, err := read(t, write(t, dir, "b.csv.gz", gz(t, []byte(itemized))), nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Rows != zipped.Rows || plain.Evidence != zipped.Evidence || !cmp.Equal(plain.Totals, zipped.Totals) || len(pc.evidence) != len(zc.evidence) {
		t.Errorf("gzip read differs: %+v vs %+v", plain, zipped)
	}
	if plain.Hash == zipped.Hash {
		t.Errorf("the hash should cover the bytes as stored, so the two differ")
	}
}

func TestUnreadableInputsFailWholeWithTheFileNamed(t *testing.T) {
	dir := t.TempDir()
	full := gz(t, []byte(strings.Repeat(itemized, 50)))
	tests := []struct {
		name string
		data []byte
		opt  *ingest.Options
		want string
	}{
		{"truncated.csv.gz", full[:len(full)/2], nil, "truncated"},
		{"garbage.gz", []byte{0x1f, 0x8b, 0, 1, 2}, nil, "gzip"},
		{"notes.txt", []byte("Dear finance,\nplease find attached\n"), nil, "unrecognized format"},
		{"missing-cols.csv", []byte("reporting_category,gross,currency\ncharge,1.00,eur\n"), nil, "missing required column"},
		{"forced.csv", []byte(itemized), &ingest.Options{Format: "excel"}, "unknown format"},
	}
	for _, tc := range tests {
		path := write(t, dir, tc.name, tc.data)
		_, _, err := read(t, path, tc.opt)
		var ie *ingest.InputError
		if !errors.As(err, &ie) || ie.URI != path || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want an InputError naming the file and saying %q", tc.name, err, tc.want)
		}
	}
}

func TestEmptyAndHeaderOnlyInputsHaveNoRows(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"empty.csv":  "",
		"blank.csv":  "\n\n",
		"header.csv": strings.SplitAfter(itemized, "\n")[0],
		"bom.csv":    "\xEF\xBB\xBF" + strings.SplitAfter(itemized, "\n")[0],
	} {
		in, _, err := read(t, write(t, dir, name, []byte(data)), nil)
		if err != nil || in.Rows != 0 {
			t.Errorf("%s: Read = %+v, %v; want no rows and no error", name, in, err)
		}
	}
}

func TestExpandFindsFilesDirectoriesAndGlobs(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "2026/11/a.csv", nil)
	b := write(t, dir, "2026/11/b.csv.gz", nil)
	c := write(t, dir, "2026/12/c.csv", nil)
	write(t, dir, "2026/.hidden/x.csv", nil)
	write(t, dir, "2026/11/.DS_Store", nil)
	ctx := context.Background()
	uris := func(args ...string) []string {
		t.Helper()
		srcs, err := ingest.Expand(ctx, args, nil, nil)
		if err != nil {
			t.Fatalf("Expand(%q): %v", args, err)
		}
		var out []string
		for _, s := range srcs {
			out = append(out, s.URI)
		}
		return out
	}
	if diff := cmp.Diff([]string{a, b, c}, uris(filepath.Join(dir, "2026"))); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{a, c}, uris(filepath.Join(dir, "2026", "*", "*.csv"))); diff != "" {
		t.Errorf("glob (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{c, a}, uris(c, a, c)); diff != "" {
		t.Errorf("files in the order given, once each (-want +got):\n%s", diff)
	}
	for _, bad := range []string{filepath.Join(dir, "nope.csv"), filepath.Join(dir, "*.xml")} {
		_, err := ingest.Expand(ctx, []string{bad}, nil, nil)
		var ie *ingest.InputError
		if !errors.As(err, &ie) || ie.URI != bad {
			t.Errorf("Expand(%s) error = %v, want an InputError naming it", bad, err)
		}
	}
}

func TestStdinIsAnInput(t *testing.T) {
	srcs, err := ingest.Expand(context.Background(), []string{"-"}, strings.NewReader(itemized), nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := ingest.Read(context.Background(), srcs[0], &ingest.Options{}, &collect{})
	if err != nil || in.URI != "-" || in.Evidence != 4 {
		t.Errorf("Read(stdin) = %+v, %v", in, err)
	}
}

// A date no payment can have (a parser that took year 0) is rejected, not
// passed on to a ledger that cannot store it.
func TestDatesOutOfRangeAreRejected(t *testing.T) {
	data := strings.Replace(itemized, "2026-11-01 11:00:00", "0000-01-01 00:00:00", 1)
	in, c, err := read(t, write(t, t.TempDir(), "old.csv", []byte(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if in.Rows != 5 || in.Evidence != 3 || in.Rejected != 2 || len(c.rejected) != 2 {
		t.Fatalf("Read = rows %d evidence %d rejected %d; want 5, 3, 2", in.Rows, in.Evidence, in.Rejected)
	}
	if r := c.rejected[0]; r.Line != 3 || !strings.Contains(r.Reason, "out of range") {
		t.Errorf("rejected %+v; want line 3, out of range", r)
	}
}
