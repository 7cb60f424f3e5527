package tabular

import (
	"fmt"
	"strings"

	"reconcile"
)

// Amounts reads the amounts of one input, in the notation its columns are
// written in. Providers write a decimal point ("1250.00"). A report re-saved
// by a spreadsheet in a European locale is semicolon-delimited and writes a
// decimal comma ("1.250,00"); "1.250" then means 1250, where a decimal point
// reads 1.25, so guessing wrong is off by a factor of a thousand.
//
// The notation is settled per input and per column, by the column's first
// amount that reads in one notation only ("12,50", or "12.50"). Per input,
// since a spreadsheet re-save converts every amount column of the file the
// same way, and another file may not have been re-saved at all. Per column,
// since each column is judged on its own values: a column that is all
// whole amounts ("12", "-3") never tells, and need not, since its values
// read the same either way, while a value of another column proves nothing
// about it (a column the spreadsheet kept as text keeps the provider's
// decimal point). An amount that reads both ways to different values
// ("1.250") before its column is settled is rejected, never guessed.
//
// The zero value reads every amount with a decimal point. An Amounts is not
// safe for concurrent use.
type Amounts struct {
	// Comma is the input's delimiter. Only a semicolon-delimited input may
	// use a decimal comma: with a comma as delimiter, amounts are written
	// with a decimal point, as today.
	Comma rune
	// Force reads every amount of a semicolon-delimited input with a
	// decimal comma (the --decimal-comma flag). Other inputs of the same
	// run keep their decimal point: a file nobody re-saved would otherwise
	// have its three-decimal amounts read a thousand times too large.
	Force bool

	settled []notation
}

// notation is the decimal separator a column was settled on, and the amount
// that settled it, for the reason a later amount that disagrees is rejected.
type notation struct {
	column string
	sep    byte
	by     string
}

// Parse reads s, an amount of the named column, in minor units with exp
// decimals, as reconcile.ParseMinor does with the column's decimal
// separator. Its errors do not name the column: callers name it, as they
// do for ParseMinor's.
func (a *Amounts) Parse(column, s string, exp int) (int64, error) {
	switch {
	case a.Comma != ';':
		return reconcile.ParseMinor(s, exp, '.')
	case a.Force:
		return reconcile.ParseMinor(s, exp, ',')
	}
	for i := range a.settled {
		if n := &a.settled[i]; n.column == column {
			return a.settledParse(n, s, exp)
		}
	}
	point, perr := reconcile.ParseMinor(s, exp, '.')
	comma, cerr := reconcile.ParseMinor(s, exp, ',')
	switch {
	case perr == nil && cerr == nil && point == comma:
		return point, nil // "12": the same either way, and tells nothing
	case perr == nil && cerr == nil:
		return 0, fmt.Errorf("%q reads as %s or as %s depending on the decimal separator, and no earlier amount in the column tells which; "+
			"pass --decimal-comma if the file uses a decimal comma", s, decimal(point, exp), decimal(comma, exp))
	case perr == nil:
		a.settle(column, '.', s)
		return point, nil
	case cerr == nil:
		a.settle(column, ',', s)
		return comma, nil
	}
	return 0, perr
}

// settledParse reads s in the notation its column was settled on. An amount
// that reads only in the other notation says the column is not written one
// way, and is rejected with both.
func (a *Amounts) settledParse(n *notation, s string, exp int) (int64, error) {
	v, err := reconcile.ParseMinor(s, exp, n.sep)
	if err == nil {
		return v, nil
	}
	other := byte('.')
	if n.sep == '.' {
		other = ','
	}
	if w, oerr := reconcile.ParseMinor(s, exp, other); oerr == nil {
		return 0, fmt.Errorf("%q reads only with %s (as %s), but the column's earlier amount %q has %s",
			s, sepName(other), decimal(w, exp), n.by, sepName(n.sep))
	}
	return 0, err
}

func (a *Amounts) settle(column string, sep byte, by string) {
	// by is a substring of the line; a copy does not keep the line alive.
	a.settled = append(a.settled, notation{column: column, sep: sep, by: strings.Clone(by)})
}

func sepName(sep byte) string {
	if sep == ',' {
		return "a decimal comma"
	}
	return "a decimal point"
}

// decimal writes minor units as a plain number with a decimal point and no
// trailing zeros, "1250" and "1.25", as the readings of an amount are told
// apart.
func decimal(v int64, exp int) string {
	s := reconcile.FormatMinor(v, exp)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	return s
}
