package tabular

import (
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type row struct {
	Line   int
	Fields []string
}

func readAll(t *testing.T, in string) ([]row, rune) {
	t.Helper()
	r, err := NewReader(strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	for {
		rec, line, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, r.Comma
		}
		if err != nil {
			rows = append(rows, row{Line: line, Fields: []string{"ERROR"}})
			continue
		}
		rows = append(rows, row{line, append([]string(nil), rec...)})
	}
}

func TestReaderHandlesProviderQuirks(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		comma rune
		want  []row
	}{
		{"bom and crlf", "\xEF\xBB\xBFid,amount\r\nch_1,25.00\r\n", ',',
			[]row{{1, []string{"id", "amount"}}, {2, []string{"ch_1", "25.00"}}}},
		{"semicolon and decimal comma", "id;amount\nch_1;\"1.250,00\"\n", ';',
			[]row{{1, []string{"id", "amount"}}, {2, []string{"ch_1", "1.250,00"}}}},
		{"tab", "id\tamount\nch_1\t5\n", '\t',
			[]row{{1, []string{"id", "amount"}}, {2, []string{"ch_1", "5"}}}},
		{"quoted commas, doubled quotes and a multi-line field", "id,desc\nch_1,\"a, \"\"b\"\"\nc\"\nch_2,x\n", ',',
			[]row{{1, []string{"id", "desc"}}, {2, []string{"ch_1", "a, \"b\"\nc"}}, {4, []string{"ch_2", "x"}}}},
		{"blank lines are not rows", "id\n\nch_1\n", ',',
			[]row{{1, []string{"id"}}, {3, []string{"ch_1"}}}},
		{"header only", "id,amount\n", ',', []row{{1, []string{"id", "amount"}}}},
		{"empty", "", ',', nil},
		{"bad quote is reported on its line, reading goes on", "id,x\nch_1,\"a\"b\nch_2,y\n", ',',
			[]row{{1, []string{"id", "x"}}, {2, []string{"ERROR"}}, {3, []string{"ch_2", "y"}}}},
	}
	for _, tc := range tests {
		got, comma := readAll(t, tc.in)
		if comma != tc.comma {
			t.Errorf("%s: delimiter %q, want %q", tc.name, comma, tc.comma)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: rows (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestHeader(t *testing.T) {
	h := NewHeader([]string{" Psp Reference ", "Gross Credit (GC)", "payment_metadata[effect_key]"})
	rec := []string{"8815", " 12.00 "}
	if got := h.Get(rec, "psp reference"); got != "8815" {
		t.Errorf("Get(psp reference) = %q", got)
	}
	if got := h.Get(rec, "Gross Credit (GC)"); got != "12.00" {
		t.Errorf("Get(Gross Credit (GC)) = %q", got)
	}
	if got := h.Get(rec, "payment_metadata[effect_key]"); got != "" {
		t.Errorf("Get on a short record = %q, want empty", got)
	}
	if err := h.Require("Psp Reference", "Type", "Merchant Account"); err == nil || !strings.Contains(err.Error(), "Type, Merchant Account") {
		t.Errorf("Require = %v, want both missing columns named", err)
	}
}

func TestJoinQuotesWhatNeedsIt(t *testing.T) {
	if got := Join([]string{"a", "b,c", `d"e`}, ','); got != `a,"b,c","d""e"` {
		t.Errorf("Join = %q", got)
	}
}

// FuzzJoin checks that Join writes exactly what encoding/csv's Writer
// writes; the fields are the input split at '|'.
func FuzzJoin(f *testing.F) {
	for _, s := range []string{"a|b", "", "|", `Mug, "blue"|x`, " lead|\\.|\t|\u00a0nbsp|a\r\nb|;", "ü|\"\""} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, semicolon bool) {
		comma := ','
		if semicolon {
			comma = ';'
		}
		rec := strings.Split(s, "|")
		var b strings.Builder
		w := csv.NewWriter(&b)
		w.Comma = comma
		w.Write(rec)
		w.Flush()
		if got, want := Join(rec, comma), strings.TrimSuffix(b.String(), "\n"); got != want {
			t.Fatalf("Join(%q) = %q, want %q", rec, got, want)
		}
	})
}

// FuzzTrim checks that Trim is strings.TrimSpace.
func FuzzTrim(f *testing.F) {
	for _, s := range []string{"", "a", " a", "a ", "\tEUR\r", "\u00a0x", "x\u00a0", "\u2003", "ü", "\x7f", "!~", "12.50"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Trim(s), strings.TrimSpace(s); got != want {
			t.Fatalf("Trim(%q) = %q, want %q", s, got, want)
		}
	})
}

func TestMemoRemembersTheFirstFew(t *testing.T) {
	var m Memo[int]
	for i := range memoSize + 5 {
		m.Put(strings.Repeat("x", i+1), i)
	}
	if v, ok := m.Get("xxx"); !ok || v != 2 {
		t.Errorf(`Get("xxx") = %d, %v, want 2, true`, v, ok)
	}
	if v, ok := m.Get(strings.Repeat("x", memoSize+1)); ok {
		t.Errorf("Get of the value after the first %d = %d, true; want it forgotten", memoSize, v)
	}
}
