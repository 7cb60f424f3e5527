package tabular

import (
	"bytes"
	"strings"
	"testing"

	"reconcile"
)

// FuzzIndex checks index1 and index2 against a byte at a time.
func FuzzIndex(f *testing.F) {
	f.Add([]byte("abc,def\"ghi,,\x80\x01,"), 0, byte(','))
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"), 3, byte(1))
	f.Fuzz(func(t *testing.T, b []byte, i int, x byte) {
		if i < 0 || i > len(b) {
			return
		}
		want := len(b)
		if j := bytes.IndexByte(b[i:], x); j >= 0 {
			want = i + j
		}
		if got := index1(b, i, x); got != want {
			t.Fatalf("index1(%q, %d, %q) = %d, want %d", b, i, x, got, want)
		}
		want = len(b)
		for k := i; k < len(b); k++ {
			if b[k] == x || b[k] == '"' {
				want = k
				break
			}
		}
		if got := index2(b, i, x, '"'); got != want {
			t.Fatalf("index2(%q, %d, %q, '\"') = %d, want %d", b, i, x, got, want)
		}
	})
}

// FuzzHasExponent checks that reconcile.Mangled is true only for text that
// HasExponent is true for, which is what the parsers rely on to skip it.
func FuzzHasExponent(f *testing.F) {
	for _, s := range []string{"1.8137E+15", " -2.44e-11 ", "8815E12345", "e+", "+E+1", "1,5E+3", "txn_1Bench-1", "ĕ+1", "1e\u00a0+1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if reconcile.Mangled(s) && !HasExponent(s) {
			t.Fatalf("Mangled(%q) but not HasExponent", s)
		}
		want := false
		for i := 1; i < len(s); i++ {
			if (s[i] == '+' || s[i] == '-') && (s[i-1] == 'e' || s[i-1] == 'E') {
				want = true
			}
		}
		if HasExponent(s) != want {
			t.Fatalf("HasExponent(%q) = %v", s, !want)
		}
	})
}

func TestHasExponentEveryPlace(t *testing.T) {
	for n := 0; n <= 20; n++ {
		for i := 0; i+1 < n; i++ {
			for _, pair := range []string{"e+", "E-", "e-", "E+", "f+", "e*", "+e", "E,"} {
				b := []byte(strings.Repeat("1", n))
				copy(b[i:], pair)
				want := (pair[0] == 'e' || pair[0] == 'E') && (pair[1] == '+' || pair[1] == '-')
				if got := HasExponent(string(b)); got != want {
					t.Errorf("HasExponent(%q) = %v", b, got)
				}
			}
		}
	}
}
