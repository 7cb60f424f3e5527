package paypal

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"reconcile"
	"reconcile/ingest/tabular"
)

// timeLayout is how STL writes Transaction Initiation Date.
const timeLayout = "2006/01/02 15:04:05 -0700"

// column is a column of SB rows that becomes an Evidence field.
type column int

// The columns read into Evidence fields. Others are kept in Metadata.
const (
	colTxID column = iota
	colInvoiceID
	colRefID
	colRefIDType
	colEventCode
	colInitiated
	colDebitCredit
	colGrossAmount
	colGrossCurrency
	colFeeDebitCredit
	colFeeAmount
	colFeeCurrency
	colCustomField
	numColumns
)

// columnNames are the columns' names as the CH row writes them.
var columnNames = [numColumns]string{
	"Transaction ID", "Invoice ID", "PayPal Reference ID", "PayPal Reference ID Type", "Transaction Event Code",
	"Transaction Initiation Date", "Transaction Debit or Credit", "Gross Transaction Amount",
	"Gross Transaction Currency", "Fee Debit or Credit", "Fee Amount", "Fee Currency", "Custom Field",
}

func (c column) String() string { return columnNames[c] }

var required = []column{colTxID, colEventCode, colInitiated, colDebitCredit, colGrossAmount, colGrossCurrency}

// metaKeys names the Metadata key of the documented columns kept as written.
// Columns that become Evidence fields map to ""; the fee columns are kept
// only when the fee cannot be folded into Fee. Other columns are kept under
// their own names.
var metaKeys = map[string]string{
	"invoice id":                  "invoice_id",
	"paypal reference id":         "paypal_reference_id",
	"paypal reference id type":    "paypal_reference_id_type",
	"transaction completion date": "transaction_completion_date",
	"custom field":                "custom_field",
	"consumer id":                 "consumer_id",
	"payment tracking id":         "payment_tracking_id",
	"store id":                    "store_id",
	"bank reference id":           "bank_reference_id",
	"transaction id":              "",
	"transaction event code":      "",
	"transaction initiation date": "",
	"transaction debit or credit": "",
	"gross transaction amount":    "",
	"gross transaction currency":  "",
	"fee debit or credit":         "",
	"fee amount":                  "",
	"fee currency":                "",
}

// columns maps SB fields by the CH row's names.
type columns struct {
	names []string        // as written, runs of spaces collapsed
	at    [numColumns]int // position of each column that becomes an Evidence field, -1 when absent
	meta  []metaCol       // the columns Metadata keeps, in order
	// currencies remembers the currency codes seen, as written, with
	// PayPal's exponents for them.
	currencies reconcile.Currencies
}

// metaCol is a column kept in Metadata under key.
type metaCol struct {
	i   int
	key string
}

// newColumns reads a CH row. Names are compared ignoring case and runs of
// spaces: some report versions write "Transaction  Debit or Credit".
func newColumns(rec []string) (*columns, error) {
	names := make([]string, len(rec))
	for i, n := range rec {
		names[i] = strings.Join(strings.Fields(n), " ")
	}
	h := tabular.NewHeader(names)
	var req []string
	for _, col := range required {
		req = append(req, col.String())
	}
	if err := h.Require(req...); err != nil {
		return nil, err
	}
	// Which of two columns of a name read into Evidence fields the report
	// meant cannot be told; other columns may repeat (the first is kept).
	if err := h.Unique(columnNames[:]...); err != nil {
		return nil, err
	}
	c := &columns{names: h.Names, currencies: reconcile.Currencies{Provider: provider}}
	for col := range numColumns {
		c.at[col] = h.Index(col.String())
	}
	for i, n := range h.Names {
		key, known := metaKeys[strings.ToLower(n)]
		if !known {
			key = n
		}
		if i > 0 && h.Index(n) == i && key != "" { // not the row type, nor a repeated name
			c.meta = append(c.meta, metaCol{i, key})
		}
	}
	return c, nil
}

// get returns the trimmed value of a column, "" when the column is absent.
func (c *columns) get(rec []string, col column) string {
	if i := c.at[col]; uint(i) < uint(len(rec)) { // so written, get is inlined
		return tabular.Trim(rec[i])
	}
	return ""
}

// amount is one amount of an SB row as read: its sign, its value in STL
// units (unsigned, in hundredths of the currency's unit), its currency and
// PayPal's exponent for it, or why it could not be read.
type amount struct {
	sign, v int64
	cur     string
	exp     int
	reason  string // "" when it could be read
}

// amounts reads an SB row's gross and, when it has one, its fee. A fee of
// zero may come without a flag or currency, and counts as none. The
// amounts are written to gross and fee, not returned: rows are many, and
// an amount is seven words.
func (c *columns) amounts(rec []string, gross, fee *amount) (hasFee bool) {
	c.part(gross, rec, colDebitCredit, colGrossAmount, colGrossCurrency, c.get(rec, colGrossAmount))
	raw := c.get(rec, colFeeAmount)
	if v, ok := stlAmount(raw); raw == "" || ok && v == 0 {
		return false
	}
	c.part(fee, rec, colFeeDebitCredit, colFeeAmount, colFeeCurrency, raw)
	return true
}

// part reads into a one amount of an SB row, raw as written in amtCol, its
// CR/DR flag and its currency.
func (c *columns) part(a *amount, rec []string, flagCol, amtCol, curCol column, raw string) {
	v, ok := stlAmount(raw)
	switch {
	case raw == "":
		*a = amount{reason: fmt.Sprintf("%s is empty", amtCol)}
		return
	case !ok:
		*a = amount{reason: fmt.Sprintf("%s %q is not an STL amount: unsigned digits, 12.34 written as 1234", amtCol, raw)}
		return
	}
	flag := c.get(rec, flagCol)
	if flag != "CR" && flag != "DR" {
		flag = strings.ToUpper(flag)
	}
	var sign int64
	switch {
	case flag == "CR":
		sign = 1
	case flag == "DR":
		sign = -1
	case flag == "" && v == 0:
		sign = 1
	case flag == "":
		*a = amount{reason: fmt.Sprintf("%s is empty for an amount of %s", flagCol, raw)}
		return
	default:
		*a = amount{reason: fmt.Sprintf("%s is %q, want CR or DR", flagCol, c.get(rec, flagCol))}
		return
	}
	cur, exp, err := c.currencies.Lookup(c.get(rec, curCol))
	if err != nil {
		*a = amount{reason: fmt.Sprintf("%s: %v", curCol, err)}
		return
	}
	*a = amount{sign: sign, v: v, cur: cur, exp: exp}
}

// minor converts an STL amount to minor units of cur. STL writes every
// amount with two implied decimals whatever the currency ("100,00 yen and
// $100.00 USD are both represented as 10000"), so a currency without minor
// units must end in 00 and one with three gains a digit.
func minor(v int64, cur string, exp int) (int64, string) {
	switch {
	case exp < 2:
		d := pow10(2 - exp)
		if v%d != 0 {
			return 0, fmt.Sprintf("%d is %s %s, but PayPal uses %d decimals for %s", v, reconcile.FormatMinor(v, 2), cur, exp, cur)
		}
		return v / d, ""
	case exp > 2:
		m := pow10(exp - 2)
		if v > math.MaxInt64/m {
			return 0, fmt.Sprintf("%d is out of range in %s", v, cur)
		}
		return v * m, ""
	}
	return v, ""
}

func pow10(n int) int64 {
	p := int64(1)
	for ; n > 0; n-- {
		p *= 10
	}
	return p
}

// evidence maps an SB row of the right width, whose amounts have been read,
// or returns why it cannot.
func (c *columns) evidence(rec []string, line int, raw string, gross, fee *amount, hasFee bool) (*reconcile.Evidence, string) {
	// mangled names the columns not read that a spreadsheet has mangled.
	var mangled []string
	if tabular.HasExponent(raw) { // else no field can be mangled
		for i, v := range rec {
			if !reconcile.Mangled(v) {
				continue
			}
			if !c.read(i) {
				mangled = append(mangled, c.names[i])
				continue
			}
			return nil, fmt.Sprintf("column %s holds %q, a number in scientific notation: a spreadsheet has mangled this value; "+
				"download the report from PayPal again and do not open and save it in a spreadsheet", c.names[i], strings.TrimSpace(v))
		}
	}
	txid := c.get(rec, colTxID)
	if txid == "" {
		return nil, "Transaction ID is empty"
	}
	code := upper(c.get(rec, colEventCode))
	if code == "" {
		return nil, "Transaction Event Code is empty"
	}
	if gross.reason != "" {
		return nil, gross.reason
	}
	minorUnits, reason := minor(gross.v, gross.cur, gross.exp)
	if reason != "" {
		return nil, fmt.Sprintf("%s %s", colGrossAmount, reason)
	}
	date := c.get(rec, colInitiated)
	t, err := parseTime(date)
	if err != nil {
		return nil, fmt.Sprintf("%s %q is not a date like 2006/01/02 15:04:05 -0700", colInitiated, date)
	}
	if y := t.Year(); y < 1970 || y > 9999 {
		return nil, fmt.Sprintf("%s %q is out of range: no settlement happened then", colInitiated, date)
	}
	e := &reconcile.Evidence{
		Provider: provider,
		TxID:     txid,
		Kind:     kindOf(code, gross.sign < 0),
		RawKind:  code,
		Amount:   reconcile.Money{Minor: gross.sign * minorUnits, Currency: gross.cur},
		Time:     t.UTC(),
		Line:     line,
		Metadata: c.metadata(rec),
	}
	if len(mangled) > 0 {
		// The value is kept as written under its column's key; this says it
		// is not the value PayPal wrote.
		e.Metadata["mangled"] = strings.Join(mangled, ", ")
	}
	if hasFee {
		if fee.reason != "" {
			return nil, fee.reason
		}
		if fee.cur == gross.cur {
			v, reason := minor(fee.v, fee.cur, fee.exp)
			if reason != "" {
				return nil, fmt.Sprintf("%s %s", colFeeAmount, reason)
			}
			e.Fee = -fee.sign * v // a debited fee is a cost, which Fee counts as positive
		} else {
			// Fee is in Amount's currency; this one cannot be, so it stays as written.
			for _, col := range []column{colFeeDebitCredit, colFeeAmount, colFeeCurrency} {
				e.Metadata[strings.ToLower(strings.ReplaceAll(col.String(), " ", "_"))] = c.get(rec, col)
			}
		}
	}
	if strings.EqualFold(c.get(rec, colRefIDType), "TXN") {
		e.ParentTxID = c.get(rec, colRefID)
	}
	e.EffectKey = c.get(rec, colInvoiceID)
	if e.EffectKey == "" {
		e.EffectKey = c.get(rec, colCustomField)
	}
	return e, ""
}

// read reports whether field i of an SB row is read into an Evidence
// field (an id, a reference, the code, a date, an amount, a flag or a
// currency), as opposed to kept in Metadata as written.
func (c *columns) read(i int) bool {
	for _, at := range c.at {
		if at == i {
			return true
		}
	}
	return false
}

// parseTime reads s as time.Parse(timeLayout, s) does, to the same instant
// (though in UTC, not at the offset), and without time.Parse for the times
// as STL writes them.
func parseTime(s string) (time.Time, error) {
	if t, rest, ok := tabular.ParseDateTime(s, '/', ' ', time.UTC); ok && len(rest) == 6 && rest[0] == ' ' {
		if off, ok := tabular.ParseOffset(rest[1:], false); ok {
			return t.Add(-time.Duration(off) * time.Second), nil
		}
	}
	return time.Parse(timeLayout, s)
}

// metadata keeps the row's non-empty values that are not Evidence fields.
func (c *columns) metadata(rec []string) map[string]string {
	m := make(map[string]string, 8)
	for _, col := range c.meta {
		if col.i < len(rec) && rec[col.i] != "" { // most are empty: no call to Trim for them
			if v := tabular.Trim(rec[col.i]); v != "" {
				m[col.key] = v
			}
		}
	}
	return m
}

// upper is strings.ToUpper, without its call for the short codes STL
// writes in upper-case ASCII already.
func upper(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'a' <= c && c <= 'z' || c >= utf8.RuneSelf {
			return strings.ToUpper(s)
		}
	}
	return s
}

// kindOf maps a transaction event code (T-code) and the direction of its
// gross to a kind, by PayPal's table of event codes. The first three
// characters name PayPal's category; a few codes inside a category do
// something else. A payment code (T00xx) debited is a payment we sent (a
// payment to someone, a mass payment): money out, never a charge. Unknown
// and malformed codes are KindOther.
func kindOf(code string, debit bool) reconcile.Kind {
	switch code {
	case "T1101": // reversal of a withdrawal to the bank
		return reconcile.KindPayout
	case "T1104", "T1114", "T1115": // reversal of a bank deposit; a mass payment we sent, reversed or refunded
		return reconcile.KindTransfer
	case "T1105": // release of an account hold
		return reconcile.KindAdjustment
	case "T1108", "T1109": // fee reversal, fee refund
		return reconcile.KindFee
	case "T1110", "T1111": // hold for a dispute investigation, and its release
		return reconcile.KindAdjustment
	case "T1200", "T1203", "T1204": // general, charge-off and incentive adjustments
		return reconcile.KindAdjustment
	}
	if len(code) != 5 {
		return reconcile.KindOther
	}
	switch code[:3] {
	case "T00": // payments received or, debited, sent
		if debit {
			return reconcile.KindTransfer
		}
		return reconcile.KindCharge
	case "T01": // fees not tied to one payment's gross
		return reconcile.KindFee
	case "T02", "T03", "T20", "T22": // currency conversion, bank deposit into PayPal, transfers between our balances
		return reconcile.KindTransfer
	case "T04": // withdrawal to a bank account, and its reversal
		return reconcile.KindPayout
	case "T08", "T09", "T15", "T19", "T21": // bonuses, incentives, holds, account corrections, reserves
		return reconcile.KindAdjustment
	case "T11": // reversals and refunds of payments received
		return reconcile.KindRefund
	case "T12": // chargebacks and their reversals
		return reconcile.KindDispute
	}
	return reconcile.KindOther
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
