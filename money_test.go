package reconcile

import (
	"math"
	"strings"
	"testing"
)

func TestParseMinor(t *testing.T) {
	tests := []struct {
		in   string
		exp  int
		sep  byte
		want int64
	}{
		{"25", 2, '.', 2500},
		{"-0.5", 2, '.', -50},
		{"0.95", 2, '.', 95},
		{"+14200.00", 2, '.', 1420000},
		{" 1,234.56 ", 2, '.', 123456},
		{"1.250,00", 2, ',', 125000},
		{"-1.250,5", 2, ',', -125050},
		{"1000", 0, '.', 1000},
		{"1000.00", 0, '.', 1000}, // trailing zeros are exact
		{"1.234", 3, '.', 1234},
		{"12.5", 3, '.', 12500},
		{".5", 2, '.', 50},
		{"9223372036854775807", 0, '.', math.MaxInt64},
	}
	for _, tc := range tests {
		got, err := ParseMinor(tc.in, tc.exp, tc.sep)
		if err != nil || got != tc.want {
			t.Errorf("ParseMinor(%q, %d, %q) = %d, %v; want %d", tc.in, tc.exp, tc.sep, got, err, tc.want)
		}
	}
}

func TestParseMinorRejects(t *testing.T) {
	tests := []struct {
		in  string
		exp int
		sep byte
	}{
		{"", 2, '.'},
		{"abc", 2, '.'},
		{"1.8137E+15", 2, '.'},
		{"1e3", 2, '.'},
		{"12.345", 2, '.'}, // more decimals than EUR allows
		{"100.5", 0, '.'},  // JPY has none
		{"12.", 2, '.'},
		{"1,23.00", 2, '.'},
		{"1,2345.00", 2, '.'},
		{",123.00", 2, '.'},
		{"1.2.3", 2, '.'},
		{"--5", 2, '.'},
		{"5-", 2, '.'},
		{"9223372036854775808", 0, '.'},
		{"92233720368547758.08", 2, '.'},
		{"1 000", 2, '.'},
		{"NaN", 2, '.'},
	}
	for _, tc := range tests {
		if got, err := ParseMinor(tc.in, tc.exp, tc.sep); err == nil {
			t.Errorf("ParseMinor(%q, %d, %q) = %d, want an error", tc.in, tc.exp, tc.sep, got)
		}
	}
}

func TestParseMinorSaysWhatIsWrong(t *testing.T) {
	for in, want := range map[string]string{
		"1.8137E+15": "scientific notation",
		"2e+5":       "scientific notation",
		"2e5":        "not a number",
		"ten":        "not a number",
		"12.3.4":     "not a number",
		"12.345":     "more decimals",
		"1,23.00":    "thousands separators",
	} {
		_, err := ParseMinor(in, 2, '.')
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMinor(%q) error = %v, want it to say %q", in, err, want)
		}
	}
}

func FuzzParseMinor(f *testing.F) {
	for _, s := range []string{"25", "-0.5", "1,234.56", "1.250,00", "1.8137E+15", "0.001"} {
		f.Add(s, 2, true)
	}
	f.Fuzz(func(t *testing.T, s string, exp int, dot bool) {
		if exp < 0 || exp > 4 {
			return
		}
		sep := byte('.')
		if !dot {
			sep = ','
		}
		v, err := ParseMinor(s, exp, sep)
		if err != nil {
			return
		}
		// What parsed must print back to a string that parses to the same value.
		back, err := ParseMinor(FormatMinor(v, exp), exp, '.')
		if err != nil || back != v {
			t.Errorf("ParseMinor(%q) = %d, but its formatted form %q parses to %d, %v", s, v, FormatMinor(v, exp), back, err)
		}
	})
}

// TestParsePlainAgrees checks the fast path against the long way on the
// amounts it takes and on the ones it must leave to it.
func TestParsePlainAgrees(t *testing.T) {
	for _, in := range []string{
		"25", "-0.5", "0.95", "+14200.00", ".5", "-.5", "0", "-0", "007.10", "1000.00", "100.5", "12.345",
		"12.340", "12.", ".", "-", "+", "", " 1", "1 ", "1,000.00", "1.2.3", "1e5", "123456789012345678",
		"1234567890123456.78", "12345678901234567.8", "99999999999999999999", "9223372036854775807",
	} {
		for exp := -1; exp <= 4; exp++ {
			for _, sep := range []byte{'.', ','} {
				checkPlain(t, in, exp, sep)
			}
		}
	}
	for _, in := range []string{"25", "-0.5", "+14200.00", ".5", "12.340"} {
		if _, r := parsePlain(in, 2, '.'); r != plainRead {
			t.Errorf("parsePlain(%q, 2, '.') leaves a plain amount to the long way", in)
		}
	}
}

func FuzzParsePlain(f *testing.F) {
	for _, s := range []string{"25", "-0.5", "1,234.56", "1.250,00", "0.001", "12.3400", ".5"} {
		f.Add(s, 2, true)
	}
	f.Fuzz(func(t *testing.T, s string, exp int, dot bool) {
		if exp < -1 || exp > 20 {
			return
		}
		sep := byte('.')
		if !dot {
			sep = ','
		}
		checkPlain(t, s, exp, sep)
	})
}

// checkPlain fails when parsePlain reads s, or finds it too precise, and
// the long way does not agree.
func checkPlain(t *testing.T, s string, exp int, sep byte) {
	t.Helper()
	v, r := parsePlain(s, exp, sep)
	want, err := parseMinor(s, exp, sep)
	switch {
	case r == plainRead && (err != nil || v != want):
		t.Errorf("parsePlain(%q, %d, %q) = %d, but parseMinor gives %d, %v", s, exp, sep, v, want, err)
	case r == plainTooPrecise && (err == nil || err.Error() != tooPrecise(s, exp).Error()):
		t.Errorf("parsePlain(%q, %d, %q) finds too many decimals, but parseMinor gives %d, %v", s, exp, sep, want, err)
	}
}

func TestExponent(t *testing.T) {
	tests := []struct {
		provider, cur string
		want          int
	}{
		{"stripe", "EUR", 2},
		{"stripe", "JPY", 0},
		{"stripe", "KRW", 0},
		{"stripe", "VND", 0},
		{"stripe", "KWD", 3},
		{"stripe", "ISK", 2}, // two-decimal in Stripe's API, zero in ISO
		{"stripe", "HUF", 2},
		{"adyen", "CLP", 2}, // Adyen differs from ISO
		{"adyen", "CVE", 0},
		{"adyen", "JPY", 0},
		{"adyen", "KWD", 3},
		{"paypal", "HUF", 0},
		{"paypal", "TWD", 0},
		{"bank", "EUR", 2},
		{"bank", "JPY", 0},
		{"bank", "BHD", 3},
		{"bank", "ISK", 0},
	}
	for _, tc := range tests {
		got, err := Exponent(tc.provider, tc.cur)
		if err != nil || got != tc.want {
			t.Errorf("Exponent(%s, %s) = %d, %v; want %d", tc.provider, tc.cur, got, err, tc.want)
		}
	}
	if _, err := Exponent("stripe", "ZZZ"); err == nil {
		t.Errorf("Exponent(stripe, ZZZ) succeeded, want an error")
	}
}

func TestNormalizeCurrency(t *testing.T) {
	for in, want := range map[string]string{"eur": "EUR", " Jpy ": "JPY", "KWD": "KWD"} {
		if got, err := NormalizeCurrency(in); err != nil || got != want {
			t.Errorf("NormalizeCurrency(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "  ", "EURO", "E", "ZZZ", "XXX", "€"} {
		if got, err := NormalizeCurrency(in); err == nil {
			t.Errorf("NormalizeCurrency(%q) = %q, want an error", in, got)
		}
	}
}

func TestFormatMinor(t *testing.T) {
	tests := []struct {
		minor int64
		exp   int
		want  string
	}{
		{1420000, 2, "14200.00"},
		{-50, 2, "-0.50"},
		{5, 3, "0.005"},
		{1000, 0, "1000"},
		{math.MinInt64, 2, "-92233720368547758.08"},
	}
	for _, tc := range tests {
		if got := FormatMinor(tc.minor, tc.exp); got != tc.want {
			t.Errorf("FormatMinor(%d, %d) = %q, want %q", tc.minor, tc.exp, got, tc.want)
		}
	}
	if got := (Money{Minor: -1420, Currency: "EUR"}).String(); got != "-14.20 EUR" {
		t.Errorf("Money.String() = %q", got)
	}
}

func TestEffectKey(t *testing.T) {
	if got := EffectKey("run_8f3c1a", "charge", 0); got != "run_8f3c1a:charge:0" {
		t.Errorf("EffectKey = %q, want run_8f3c1a:charge:0", got)
	}
	if EffectKey("r", "charge", 1) == EffectKey("r", "charge", 0) {
		t.Errorf("EffectKey ignores seq")
	}
}

func TestMangled(t *testing.T) {
	for _, s := range []string{"1.8137E+15", "4.55557E+15", "9.2598E+07", "1,5E+10", " 1E+5 ", "-1.2e-3", "1.2302025304E+022", "4E+10", "1.5e+3"} {
		if !Mangled(s) {
			t.Errorf("Mangled(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"8815E12345", "QX7TK2PLM4ZA9B01", "E+15", "1.8137E+", "1.2.3E+4", "ch_1E+5", "", "12.50", "2e5", "1.E+5", "GDC9ZZ4L2MONEY42", "1.0"} {
		if Mangled(s) {
			t.Errorf("Mangled(%q) = true, want false", s)
		}
	}
}

func TestAddMinorSaturates(t *testing.T) {
	for _, tc := range []struct {
		a, b, want int64
		ok         bool
	}{
		{1, 2, 3, true}, {-5, 3, -2, true},
		{math.MaxInt64, 1, math.MaxInt64, false}, {math.MaxInt64/2 + 1, math.MaxInt64/2 + 1, math.MaxInt64, false},
		{math.MinInt64, -1, math.MinInt64, false}, {math.MaxInt64, math.MinInt64, -1, true},
	} {
		if got, ok := AddMinor(tc.a, tc.b); got != tc.want || ok != tc.ok {
			t.Errorf("AddMinor(%d, %d) = %d, %v; want %d, %v", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}
