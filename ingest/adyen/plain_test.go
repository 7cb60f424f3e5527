package adyen

import (
	"strings"
	"testing"
)

// FuzzPlainDecimal checks plainDecimal against the definition it replaced:
// an optional sign, then digits with at most one decimal point.
func FuzzPlainDecimal(f *testing.F) {
	for _, s := range []string{"", ".", "-.11", "+-1", "12.", "1.2.3", "1,5", "٣", "0012.50"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		w := strings.TrimPrefix(strings.TrimPrefix(v, "-"), "+")
		intPart, frac, _ := strings.Cut(w, ".")
		want := (intPart != "" || frac != "") && (intPart == "" || digits(intPart)) && (frac == "" || digits(frac))
		if got := plainDecimal(v); got != want {
			t.Fatalf("plainDecimal(%q) = %v, want %v", v, got, want)
		}
	})
}
