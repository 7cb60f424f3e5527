package reconcile

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"golang.org/x/text/currency"
)

// Money is an amount in integer minor units of a currency. It never passes
// through float64.
type Money struct {
	Minor    int64  // signed, in the currency's minor units
	Currency string // ISO 4217, upper case
}

// String formats m for people, with the currency's ISO exponent: "-14.20 EUR".
func (m Money) String() string {
	exp, err := Exponent("", m.Currency)
	if err != nil {
		return fmt.Sprintf("%d %s (minor units)", m.Minor, m.Currency)
	}
	return FormatMinor(m.Minor, exp) + " " + m.Currency
}

// FormatMinor writes minor units as a plain decimal with exp places.
func FormatMinor(minor int64, exp int) string {
	sign := ""
	u := uint64(minor)
	if minor < 0 {
		sign, u = "-", uint64(-minor) // -MinInt64 wraps to itself and stays right as uint64
	}
	s := fmt.Sprintf("%d", u)
	if exp == 0 {
		return sign + s
	}
	if len(s) <= exp {
		s = strings.Repeat("0", exp-len(s)+1) + s
	}
	return sign + s[:len(s)-exp] + "." + s[len(s)-exp:]
}

// NormalizeCurrency checks that s names an ISO 4217 currency and returns its
// code in upper case. Codes are accepted in any case and with surrounding
// spaces, as providers write them.
func NormalizeCurrency(s string) (string, error) {
	c := strings.ToUpper(strings.TrimSpace(s))
	if c == "" {
		return "", fmt.Errorf("empty currency")
	}
	if len(c) != 3 || c == "XXX" || c == "XTS" {
		return "", fmt.Errorf("unknown currency %q", s)
	}
	if _, err := currency.ParseISO(c); err != nil {
		return "", fmt.Errorf("unknown currency %q", s)
	}
	return c, nil
}

// stripeZeroDecimal and stripeThreeDecimal are Stripe's documented exceptions
// (docs: "Supported currencies", minor units in API amounts). Every other
// currency is two-decimal in Stripe's API, whatever ISO 4217 says (ISK, HUF
// and TWD included).
var (
	stripeZeroDecimal  = set("BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF")
	stripeThreeDecimal = set("BHD", "JOD", "KWD", "OMR", "TND")
	// adyenExponent lists where Adyen's documented decimals differ from ISO 4217.
	adyenExponent = map[string]int{"CLP": 2, "CVE": 0, "ISK": 2, "IDR": 0}
	// paypalExponent lists where PayPal's API decimals differ from ISO 4217.
	paypalExponent = map[string]int{"HUF": 0, "TWD": 0, "JPY": 0}
)

func set(codes ...string) map[string]bool {
	m := make(map[string]bool, len(codes))
	for _, c := range codes {
		m[c] = true
	}
	return m
}

// Exponent returns how many decimal places the provider uses for the currency:
// Stripe's own table for "stripe", Adyen's and PayPal's documented exceptions
// for theirs, and ISO 4217 (from the CLDR tables in golang.org/x/text) for any
// other provider, banks included. The currency must already be normalized.
func Exponent(provider, cur string) (int, error) {
	u, err := currency.ParseISO(cur)
	if err != nil || cur == "XXX" || cur == "XTS" {
		return 0, fmt.Errorf("unknown currency %q", cur)
	}
	switch provider {
	case "stripe":
		switch {
		case stripeZeroDecimal[cur]:
			return 0, nil
		case stripeThreeDecimal[cur]:
			return 3, nil
		}
		return 2, nil
	case "adyen":
		if e, ok := adyenExponent[cur]; ok {
			return e, nil
		}
	case "paypal":
		if e, ok := paypalExponent[cur]; ok {
			return e, nil
		}
	}
	scale, _ := currency.Standard.Rounding(u)
	return scale, nil
}

// ParseMinor converts a decimal amount in major units, as written in a report,
// to integer minor units with exp decimal places. decimalSep is '.' or ','; the
// other one is then accepted as a thousands separator between groups of three
// digits. A leading sign is allowed. It rejects scientific notation, more
// significant decimals than exp allows, and anything that is not a number.
func ParseMinor(s string, exp int, decimalSep byte) (int64, error) {
	switch v, r := parsePlain(s, exp, decimalSep); r {
	case plainRead:
		return v, nil
	case plainTooPrecise:
		return 0, tooPrecise(s, exp)
	}
	return parseMinor(s, exp, decimalSep)
}

// What parsePlain made of an amount.
const (
	plainRead       = iota // read: the value is the amount
	plainTooPrecise        // plain, but with more significant decimals than exp
	plainOther             // not plain: parseMinor decides
)

// parsePlain reads the amounts that reports mostly hold, an optional sign,
// digits and at most one decimal separator followed by digits, with no
// spaces or thousands separators and at most 18 digits once scaled, so that
// they cannot overflow. It reads them to the value parseMinor gives, and
// finds the same fault in those with too many decimals, without allocating;
// anything else it leaves to parseMinor.
func parsePlain(s string, exp int, sep byte) (int64, int) {
	if exp < 0 {
		return 0, plainOther
	}
	i, neg := 0, false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		i, neg = 1, s[0] == '-'
	}
	var v uint64
	n := 0 // digits in v, leading zeros included
	for ; i < len(s) && s[i]-'0' <= 9; i++ {
		v = v*10 + uint64(s[i]-'0')
		n++
	}
	digits, places, precise := n, 0, true
	if i < len(s) {
		if s[i] != sep {
			return 0, plainOther
		}
		i++
		start := i
		for ; i < len(s) && s[i]-'0' <= 9; i++ {
			switch d := s[i] - '0'; {
			case places < exp:
				v = v*10 + uint64(d)
				places++
				n++
			case d != 0:
				precise = false
			}
		}
		if i < len(s) || i == start {
			return 0, plainOther
		}
		if !precise {
			return 0, plainTooPrecise
		}
		digits += i - start
	}
	n += exp - places
	if digits == 0 || n > 18 {
		return 0, plainOther
	}
	for ; places < exp; places++ {
		v *= 10
	}
	if neg {
		return -int64(v), plainRead
	}
	return int64(v), plainRead
}

// tooPrecise is the error for an amount with more significant decimals than
// the currency has. It is built without fmt: a file read with the wrong
// currency gives it on every row.
func tooPrecise(s string, exp int) error {
	return errors.New("amount " + strconv.Quote(s) + " has more decimals than the currency allows (" + strconv.Itoa(exp) + ")")
}

// parseMinor is ParseMinor for every input, with its errors.
func parseMinor(s string, exp int, decimalSep byte) (int64, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty amount")
	}
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	if Mangled(s) {
		return 0, fmt.Errorf("amount %q is in scientific notation (a spreadsheet may have mangled it)", orig)
	}
	thousands := byte(',')
	if decimalSep == ',' {
		thousands = '.'
	}
	intPart, frac := s, ""
	if i := strings.IndexByte(s, decimalSep); i >= 0 {
		intPart, frac = s[:i], s[i+1:]
		if frac == "" {
			return 0, fmt.Errorf("amount %q ends in a decimal separator", orig)
		}
	}
	if strings.IndexByte(intPart, thousands) >= 0 {
		groups := strings.Split(intPart, string(thousands))
		if len(groups[0]) == 0 || len(groups[0]) > 3 {
			return 0, fmt.Errorf("amount %q has misplaced thousands separators", orig)
		}
		for _, g := range groups[1:] {
			if len(g) != 3 {
				return 0, fmt.Errorf("amount %q has misplaced thousands separators", orig)
			}
		}
		intPart = strings.Join(groups, "")
	}
	if intPart == "" {
		intPart = "0"
	}
	if !allDigits(intPart, "") || !allDigits(frac+"0", "") {
		return 0, fmt.Errorf("amount %q is not a number", orig)
	}
	if len(strings.TrimRight(frac, "0")) > exp {
		return 0, tooPrecise(orig, exp)
	}
	if len(frac) > exp {
		frac = frac[:exp] // only zeros were dropped, checked above
	}
	frac += strings.Repeat("0", exp-len(frac))
	var v uint64
	for _, c := range intPart + frac {
		d := uint64(c - '0')
		if v > (math.MaxInt64-d)/10 {
			return 0, fmt.Errorf("amount %q is out of range", orig)
		}
		v = v*10 + d
	}
	if neg {
		return -int64(v), nil
	}
	return int64(v), nil
}

// allDigits reports whether s is non-empty and holds only ASCII digits and
// bytes from also.
func allDigits(s, also string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && strings.IndexByte(also, s[i]) < 0 {
			return false
		}
	}
	return true
}

// Mangled reports whether s is what a spreadsheet makes of a long number it
// was not meant to touch, such as an id or an amount: "1.8137E+15". The
// original digits are lost, so the row cannot be trusted. The explicit
// exponent sign keeps alphanumeric references such as 8815E12345 apart.
func Mangled(s string) bool {
	e := strings.IndexAny(s, "eE") // most values have none: return before any work
	if e < 1 || e+2 >= len(s) || (s[e+1] != '+' && s[e+1] != '-') {
		return false
	}
	mant, exp := strings.TrimLeft(strings.TrimSpace(s[:e]), "+-"), strings.TrimSpace(s[e+2:])
	whole, frac, dot := strings.Cut(mant, ".")
	if !dot {
		whole, frac, dot = strings.Cut(mant, ",")
	}
	return allDigits(exp, "") && allDigits(whole, "") && (!dot || allDigits(frac, ""))
}

// Currencies answers NormalizeCurrency and Exponent for one provider,
// remembering the answers for the first 64 spellings it sees: a report holds
// a handful of currencies, and parsers ask on every row. It compares a
// spelling with those it has seen rather than hashing it for a map, which
// for a handful costs less.
type Currencies struct {
	Provider string
	seen     []currencyAnswer
}

type currencyAnswer struct {
	spelling string
	code     string
	exp      int
	err      error
}

// Lookup returns the upper-case code of the currency written s and the
// provider's exponent for it.
func (c *Currencies) Lookup(s string) (code string, exp int, err error) {
	for i := range c.seen {
		if a := &c.seen[i]; a.spelling == s {
			return a.code, a.exp, a.err
		}
	}
	a := currencyAnswer{spelling: s}
	a.code, a.err = NormalizeCurrency(s)
	if a.err == nil {
		a.exp, a.err = Exponent(c.Provider, a.code)
	}
	if len(c.seen) < 64 {
		c.seen = append(c.seen, a)
	}
	return a.code, a.exp, a.err
}

// AddMinor adds two amounts in minor units. A sum beyond int64 saturates
// at its bound instead of wrapping, which would turn two payments into a
// negative total; ok is false then, for the caller to say so.
func AddMinor(a, b int64) (sum int64, ok bool) {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64, false
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64, false
	}
	return s, true
}
