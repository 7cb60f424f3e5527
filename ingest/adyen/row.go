package adyen

import (
	"fmt"
	"strings"
	"time"

	"reconcile"
	"reconcile/ingest/tabular"
)

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

// evidence maps a row of the right width, or returns the reason it is
// rejected.
func (p *parser) evidence(rec []string, line int) (*reconcile.Evidence, string) {
	typ := p.get(rec, colType)
	if typ == "" {
		return nil, "Type is empty"
	}
	account := p.get(rec, colMerchantAccount)
	if account == "" {
		return nil, "Merchant Account is empty"
	}
	date := p.get(rec, colCreationDate)
	if date == "" {
		return nil, "Creation Date is empty"
	}
	abbrev := p.get(rec, colTimeZone)
	zone, reason := p.zone(account, abbrev)
	if reason != "" {
		return nil, reason
	}
	t, err := localTime(date, abbrev, zone)
	if err != nil {
		return nil, fmt.Sprintf("Creation Date %q is not a date and time like 2006-01-02 15:04:05", date)
	}

	amount, reason := p.amount(rec)
	if reason != "" {
		return nil, reason
	}
	fee, folded, reason := p.fee(rec, amount.Currency)
	if reason != "" {
		return nil, reason
	}

	kind := p.kind(typ)
	e := &reconcile.Evidence{
		Provider: provider,
		Kind:     kind,
		RawKind:  typ,
		Amount:   amount,
		Fee:      fee,
		Time:     t.UTC(),
		Line:     line,
		Metadata: p.metadata(rec, !folded),
	}
	psp, mod := p.get(rec, colPspReference), p.get(rec, colModRef)
	merchantRef, modMerchantRef := p.get(rec, colMerchantRef), p.get(rec, colModMerchantRef)
	if psp != "" {
		if mod == "" {
			// PSP/"" would give a payment and its refund the same identity.
			return nil, fmt.Sprintf("Modification Reference is empty on a row with Psp Reference %s, so the row cannot be told apart from the payment's other bookings", psp)
		}
		e.TxID = psp + "/" + mod
		e.ParentTxID = psp
	}
	switch {
	case kind == reconcile.KindCharge:
		e.EffectKey = merchantRef
	case psp != "":
		// A modification: its own reference, if we gave one, names our refund
		// or compensation; the merchant reference names the payment it modifies.
		e.EffectKey = modMerchantRef
		e.ParentEffectKey = merchantRef
	default:
		// A batch line (fee, payout, transfer) names no payment; its text is
		// all there is to tell a person what it was.
		e.Description = joinNonEmpty("; ", mod, modMerchantRef)
	}
	return e, ""
}

// localTime reads a Creation Date in zone. In the hour that repeats when
// daylight saving time ends, a local time names two instants; the report's
// abbreviation picks one when it matches either. It is not trusted beyond
// that: reports have been seen to write PST in June.
func localTime(date, abbrev string, zone *time.Location) (time.Time, error) {
	t, rest, ok := tabular.ParseDateTime(date, '-', ' ', zone)
	if !ok || rest != "" {
		var err error
		if t, err = time.ParseInLocation(time.DateTime, date, zone); err != nil {
			return time.Time{}, err
		}
	}
	if name, _ := t.Zone(); abbrev == "" || strings.EqualFold(name, abbrev) {
		return t, nil
	}
	for _, d := range []time.Duration{-time.Hour, time.Hour} {
		alt := t.Add(d)
		if name, _ := alt.Zone(); strings.EqualFold(name, abbrev) && alt.Format(time.DateTime) == date {
			return alt, nil
		}
	}
	return t, nil
}

// kind maps a Type to its kind, remembering the answers for the first few
// spellings seen.
func (p *parser) kind(typ string) reconcile.Kind {
	if k, ok := p.kinds.Get(typ); ok {
		return k
	}
	k, ok := kinds[strings.ToLower(typ)]
	if !ok {
		k = reconcile.KindOther
	}
	p.kinds.Put(typ, k)
	return k
}

// amount reads the row's signed gross. Batch lines (fees, payouts, transfers)
// carry only net values, so the net pair stands in when the gross pair is empty.
func (p *parser) amount(rec []string) (reconcile.Money, string) {
	curCol, debitCol, creditCol := colGrossCurrency, colGrossDebit, colGrossCredit
	if p.get(rec, colGrossDebit) == "" && p.get(rec, colGrossCredit) == "" {
		curCol, debitCol, creditCol = colNetCurrency, colNetDebit, colNetCredit
		if p.get(rec, colNetDebit) == "" && p.get(rec, colNetCredit) == "" {
			return reconcile.Money{}, fmt.Sprintf("no amount: %s, %s, %s and %s are all empty",
				colGrossDebit, colGrossCredit, colNetDebit, colNetCredit)
		}
	}
	cur, exp, reason := p.currency(rec, curCol)
	if reason != "" {
		return reconcile.Money{}, reason
	}
	debit, reason := p.decimal(rec, debitCol, cur, exp)
	if reason != "" {
		return reconcile.Money{}, reason
	}
	credit, reason := p.decimal(rec, creditCol, cur, exp)
	if reason != "" {
		return reconcile.Money{}, reason
	}
	if debit != 0 && credit != 0 {
		return reconcile.Money{}, fmt.Sprintf("both %s (%s) and %s (%s) are filled; exactly one of them should be",
			debitCol, p.get(rec, debitCol), creditCol, p.get(rec, creditCol))
	}
	return reconcile.Money{Minor: credit - debit, Currency: cur}, ""
}

// fee sums the cost components when they are in the amount's currency, and
// says whether it could. In another currency they cannot be added to this
// amount; Metadata keeps them.
func (p *parser) fee(rec []string, cur string) (int64, bool, string) {
	if p.get(rec, colNetCurrency) == "" {
		return 0, false, ""
	}
	netCur, exp, reason := p.currency(rec, colNetCurrency)
	if reason != "" || netCur != cur {
		return 0, false, reason
	}
	var fee int64
	for _, col := range feeColumns {
		v, reason := p.decimal(rec, col, netCur, exp)
		if reason != "" {
			return 0, false, reason
		}
		fee += v
	}
	return fee, true, ""
}

// currency reads a currency column and Adyen's exponent for it.
func (p *parser) currency(rec []string, col column) (string, int, string) {
	raw := p.get(rec, col)
	if c, ok := p.currencies.Get(raw); ok {
		return c.code, c.exp, ""
	}
	cur, err := reconcile.NormalizeCurrency(raw)
	if err != nil {
		return "", 0, fmt.Sprintf("%s: %v", col, err)
	}
	exp, err := reconcile.Exponent(provider, cur)
	if err != nil {
		return "", 0, fmt.Sprintf("%s: %v", col, err)
	}
	p.currencies.Put(raw, knownCurrency{cur, exp})
	return cur, exp, ""
}

// knownCurrency is a currency code already checked, with its exponent.
type knownCurrency struct {
	code string
	exp  int
}

// decimal reads an amount column in minor units; empty is zero.
func (p *parser) decimal(rec []string, col column, cur string, exp int) (int64, string) {
	v := p.get(rec, col)
	if v == "" {
		return 0, ""
	}
	switch {
	case p.amounts.Comma == ';' || p.amounts.Force:
		// Saved again by a spreadsheet, maybe with a decimal comma: the
		// column's amounts tell (tabular.Amounts).
		if !numeral(v) {
			return 0, fmt.Sprintf("%s (%s): amount %q is not a number", col, cur, v)
		}
	case strings.IndexByte(v, ',') >= 0:
		// Adyen writes 1234.56; a comma is either a decimal comma or a
		// thousands separator, and guessing wrong is off by a factor of 1000.
		return 0, fmt.Sprintf("%s: amount %q holds a comma; Adyen writes amounts like 1234.56", col, v)
	case !plainDecimal(v):
		// ParseMinor would call "ten" scientific notation, for its 'e',
		// and "1.2.3" a number with too many decimals.
		return 0, fmt.Sprintf("%s (%s): amount %q is not a number", col, cur, v)
	}
	m, err := p.amounts.Parse(col.String(), v, exp)
	if err != nil {
		return 0, fmt.Sprintf("%s (%s): %v", col, cur, err)
	}
	return m, ""
}

// plainDecimal reports whether v is an optional sign, digits and at most
// one decimal point, the way Adyen writes amounts (".11" included).
func plainDecimal(v string) bool {
	v = strings.TrimPrefix(strings.TrimPrefix(v, "-"), "+")
	n, dots := 0, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			n++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return n > 0 && dots <= 1
}

// numeral reports whether v is an optional sign and digits with '.' and
// ',' among them, as a spreadsheet writes amounts ("1.250,00"). Where the
// separators may stand is for ParseMinor to say.
func numeral(v string) bool {
	v = strings.TrimPrefix(strings.TrimPrefix(v, "-"), "+")
	n := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			n++
		case c != '.' && c != ',':
			return false
		}
	}
	return n > 0
}

// metadata keeps the row's non-empty values that are not Evidence fields,
// and the net values too when the fee stays apart.
func (p *parser) metadata(rec []string, withNet bool) map[string]string {
	kv := p.kv[:0]
	for _, c := range p.kept {
		key := c.key
		if key == "" && withNet {
			key = c.net
		}
		if key == "" || rec[c.i] == "" { // most reserved columns are empty: no call to Trim for them
			continue
		}
		if v := tabular.Trim(rec[c.i]); v != "" {
			kv = append(kv, key, v)
		}
	}
	p.kv = kv
	m := make(map[string]string, len(kv)/2) // sized once: growing maps was a sixth of the parse
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}
