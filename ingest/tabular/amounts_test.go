package tabular

import (
	"strings"
	"testing"

	"reconcile"
)

// TestAmountsDecimalComma reads each case's amounts in order through one
// Amounts, as a parser reads a file's rows, and checks every reading.
func TestAmountsDecimalComma(t *testing.T) {
	type read struct {
		column, s string
		exp       int
		want      int64
		err       string // a part of the error; "" when the amount is read
	}
	for _, tc := range []struct {
		name  string
		comma rune
		force bool
		reads []read
	}{
		{"a comma-delimited file reads a decimal point, as before", ',', false, []read{
			{"gross", "12.50", 2, 1250, ""},
			{"gross", "1,250.00", 2, 125000, ""},
			{"gross", "1.250", 2, 125, ""},
			{"gross", "12,50", 2, 0, "misplaced thousands separators"},
		}},
		{"a tab-delimited file reads a decimal point, as before", '\t', false, []read{
			{"gross", "1,250", 2, 125000, ""},
			{"gross", "12,50", 2, 0, "misplaced thousands separators"},
		}},
		{"decimal commas in a semicolon file", ';', false, []read{
			{"gross", "1.250,00", 2, 125000, ""},
			{"gross", "12,50", 2, 1250, ""},
			{"gross", "-0,01", 2, -1, ""},
			{"gross", "1.250", 2, 125000, ""}, // the column is settled: 1250
			{"gross", "7", 2, 700, ""},
		}},
		{"decimal points in a semicolon file", ';', false, []read{
			{"gross", "12.50", 2, 1250, ""},
			{"gross", "1.250", 2, 125, ""},
			{"gross", "1,250", 2, 125000, ""},
		}},
		{"values that tell nothing are read until a later one settles the column", ';', false, []read{
			{"gross", "12", 2, 1200, ""},
			{"gross", "-3", 2, -300, ""},
			{"gross", "0", 2, 0, ""},
			{"gross", "12,50", 2, 1250, ""},
			{"gross", "1,250", 2, 125, ""},
		}},
		{"an ambiguous first value is rejected with both readings and the flag", ';', false, []read{
			{"gross", "1.250", 2, 0, `"1.250" reads as 1.25 or as 1250 depending on the decimal separator, and no earlier amount in the column tells which; pass --decimal-comma if the file uses a decimal comma`},
			{"gross", "1,250", 2, 0, `"1,250" reads as 1250 or as 1.25`},
			{"gross", "12,50", 2, 1250, ""},
			{"gross", "1.250", 2, 125000, ""},
		}},
		{"an ambiguous value in a currency with three decimals", ';', false, []read{
			{"gross", "12.345", 3, 0, `"12.345" reads as 12.345 or as 12345`},
		}},
		{"a value against the column's decimal comma is rejected", ';', false, []read{
			{"gross", "1.250,00", 2, 125000, ""},
			{"gross", "12.50", 2, 0, `"12.50" reads only with a decimal point (as 12.5), but the column's earlier amount "1.250,00" has a decimal comma`},
		}},
		{"a value against the column's decimal point is rejected", ';', false, []read{
			{"gross", "12.50", 2, 1250, ""},
			{"gross", "3,75", 2, 0, `"3,75" reads only with a decimal comma (as 3.75), but the column's earlier amount "12.50" has a decimal point`},
		}},
		{"each column is settled by its own values", ';', false, []read{
			{"gross", "12,50", 2, 1250, ""},
			{"fee", "0", 2, 0, ""},
			{"fee", "1.250", 2, 0, `"1.250" reads as 1.25 or as 1250`},
			{"fee", "0.40", 2, 40, ""},
			{"gross", "1.250", 2, 125000, ""},
			{"fee", "1.250", 2, 125, ""},
		}},
		{"a value that is no number in either notation keeps ParseMinor's error", ';', false, []read{
			{"gross", "ten", 2, 0, `amount "ten" is not a number`},
			{"gross", "1.8137E+15", 2, 0, "scientific notation"},
			{"gross", "12,50", 2, 1250, ""},
			{"gross", "12,5050", 2, 0, `amount "12,5050" has more decimals than the currency allows`},
			{"gross", "12,505", 2, 0, `"12,505" reads only with a decimal point (as 12505), but the column's earlier amount "12,50" has a decimal comma`},
		}},
		{"forced, a semicolon file reads a decimal comma from the start", ';', true, []read{
			{"gross", "1.250", 2, 125000, ""},
			{"gross", "1,250", 2, 125, ""},
			{"gross", "12.50", 2, 0, "misplaced thousands separators"},
		}},
		{"forced, a comma-delimited file keeps its decimal point: nobody re-saved it", ',', true, []read{
			{"gross", "1.250", 3, 1250, ""},
			{"gross", "12.5", 2, 1250, ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Amounts{Comma: tc.comma, Force: tc.force}
			for _, r := range tc.reads {
				got, err := a.Parse(r.column, r.s, r.exp)
				switch {
				case r.err == "" && (err != nil || got != r.want):
					t.Errorf("Parse(%q, %q, %d) = %d, %v, want %d", r.column, r.s, r.exp, got, err, r.want)
				case r.err != "" && (err == nil || !strings.Contains(err.Error(), r.err)):
					t.Errorf("Parse(%q, %q, %d) = %d, %v, want an error saying %q", r.column, r.s, r.exp, got, err, r.err)
				}
			}
		})
	}
}

// FuzzAmounts checks that whatever a semicolon file's amounts are, each one
// read is what ParseMinor makes of it with one of the two separators, and
// that one reading two ways is never read before its column is settled.
func FuzzAmounts(f *testing.F) {
	for _, s := range []string{"12|1.250,00|1.250", "1.250|12,50|1,250", "12.50|3,75", "-0,01|0|ten", "1.8137E+15|1,5|12.345"} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, values string, exp int) {
		exp = (exp%4 + 4) % 4
		a := &Amounts{Comma: ';'}
		settled := false
		for _, s := range strings.Split(values, "|") {
			got, err := a.Parse("gross", s, exp)
			point, perr := reconcile.ParseMinor(s, exp, '.')
			comma, cerr := reconcile.ParseMinor(s, exp, ',')
			if err != nil {
				continue
			}
			if !(perr == nil && got == point) && !(cerr == nil && got == comma) {
				t.Fatalf("Parse(%q) = %d, want %d (decimal point, %v) or %d (decimal comma, %v)", s, got, point, perr, comma, cerr)
			}
			if !settled && perr == nil && cerr == nil && point != comma {
				t.Fatalf("Parse(%q) = %d before the column was settled, want it rejected: it reads as %d or %d", s, got, point, comma)
			}
			settled = settled || (perr == nil) != (cerr == nil)
		}
	})
}
