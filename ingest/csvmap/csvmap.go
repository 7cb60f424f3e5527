// Package csvmap reads a CSV that has no parser of its own, guided by a small
// JSON mapping file that names the provider, the columns and how to read
// amounts, signs, dates and kinds.
//
// A mapping for a bank export with a three-line preamble, semicolons, decimal
// commas, a debit/credit column and German dates:
//
//	{
//	  "comment": "Acme Bank account export, Online Banking > Export > CSV",
//	  "provider": "acmebank",
//	  "delimiter": ";",
//	  "decimal": ",",
//	  "skip_rows": 3,
//	  "time_layout": "02.01.2006",
//	  "time_zone": "Europe/Berlin",
//	  "columns": {
//	    "time": "Booking Date",
//	    "tx_id": "Reference",
//	    "effect_key": "Our Reference",
//	    "parent_tx_id": "Original Reference",
//	    "kind": "Type",
//	    "amount": "Amount",
//	    "direction": "D/C",
//	    "currency": "Currency",
//	    "fee": "Fee",
//	    "description": "Memo"
//	  },
//	  "debit_values": ["D"],
//	  "credit_values": ["C"],
//	  "kinds": {"CREDIT TRANSFER": "charge", "RETURN": "refund", "FEE": "fee",
//	            "PAYOUT": "payout", "BALANCE": "ignore"},
//	  "metadata": {"value_date": "Value Date"}
//	}
//
// which reads:
//
//	Account statement;Acme Bank AG
//	Account;DE00 1234 5678 9012 3456 78
//	Period;01.03.2024 - 31.03.2024
//	Booking Date;Value Date;Reference;Our Reference;Original Reference;Type;Amount;D/C;Currency;Fee;Memo
//	04.03.2024;05.03.2024;AB-1001;run_7a1b2c:charge:0;;CREDIT TRANSFER;1.250,00;C;EUR;0,35;Invoice 4411
//
// Only "provider", "columns.time", an amount ("columns.amount", or
// "columns.debit" and "columns.credit") and a currency ("columns.currency"
// or a fixed "currency") are required. The fields:
//
//   - provider: the provider name on the evidence; it also picks the
//     currency exponents ("stripe", "adyen" and "paypal" have their own).
//   - delimiter: ",", ";", "|" or "tab"; sniffed from the header when absent.
//   - decimal: "." (default) or ","; the other one is then a thousands
//     separator. Amounts may also be written "(12.00)" or "12.00-" for a
//     negative amount.
//   - skip_rows: lines before the header row.
//   - time_layout: a Go layout, Go's reference time Mon Jan 2 15:04:05 2006
//     written the way the file writes dates ("02.01.2006", "01/02/2006
//     15:04"); absent, ISO dates and times are accepted. time_zone (IANA,
//     default UTC) applies to times written without an offset; a date alone
//     is midnight in that zone.
//   - columns: header names (case and surrounding spaces do not matter).
//     amount is signed, unless direction names a column whose debit_values
//     mean money out (credit_values, when given, are the only values that
//     mean money in; anything else is rejected). debit and credit are a pair
//     of columns instead of amount. A debit is money out whatever its sign
//     (banks often write "-12.00" there); a credit keeps its sign, so a
//     negative credit is a correction that took money out. fee is a cost,
//     whatever its sign.
//   - negate: true flips every amount (for a file written from the payer's
//     side).
//   - kind: the kind of every row when there is no kind column; kinds maps
//     the values of the kind column to charge, refund, dispute, fee, payout,
//     transfer, adjustment, other or ignore; unlisted values are other.
//   - statuses: maps the values of columns.status to pending, failed,
//     ignore or final; unlisted values are final.
//   - metadata: more columns to keep, metadata key → column.
//   - comment: free text, since JSON has no comments.
//
// Unknown fields are errors, so that a misspelt field is not silently
// ignored. Every data row gets one outcome: evidence, a rejection naming the
// column and the value, or an ignored row with its reason. A column the
// mapping names but the file lacks stops the parse with an error listing them
// all.
package csvmap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"reconcile"
	"reconcile/ingest/tabular"
)

// Options tunes Parse.
type Options struct {
	// Mapping says how to read the file; it is required. LoadMapping reads
	// one from JSON.
	Mapping *Mapping
}

// Detect reports false: a mapped CSV is only read when a mapping is given.
func Detect(name string, head []byte) bool { return false }

// Parse reads a CSV as opt.Mapping says and gives every data row its outcome
// through sink. It returns an error, and nothing else, when there is no
// usable mapping, no header, or a column the mapping names is missing.
func Parse(ctx context.Context, r io.Reader, opt Options, sink reconcile.RowSink) error {
	if opt.Mapping == nil {
		return errors.New("no mapping: csvmap needs Options.Mapping (see LoadMapping)")
	}
	m := *opt.Mapping // check resolves fields; work on a copy so a shared mapping is never written
	if err := m.check(); err != nil {
		return err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte("\ufeff")) {
		br.Discard(3)
	}
	for i := range m.SkipRows {
		if err := skipLine(br); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("line %d: the file ends within the %d lines of skip_rows, before the header", i+1, m.SkipRows)
			}
			return fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	tr, err := tabular.NewReader(br, m.comma)
	if err != nil {
		return fmt.Errorf("line %d: %w", m.SkipRows+1, err)
	}
	p := &parser{m: &m, currencies: reconcile.Currencies{Provider: m.Provider}}
	rows := tabular.Rows{
		Empty:  fmt.Sprintf("line %d: no header row: the file is empty", m.SkipRows+1),
		Header: "header",
		Reason: func(pe *csv.ParseError) string {
			return fmt.Sprintf("malformed CSV at character %d: %v", pe.Column, pe.Err)
		},
		Offset: m.SkipRows,
	}
	return rows.Read(ctx, tr, sink, p.header, p.row)
}

// col is a mapped column: its header name and position, -1 when unmapped.
type col struct {
	name  string
	i     int
	label string // `column "name"`, for rejection reasons
}

// reason is the rejection reason for c's value, which err describes. It is
// built without fmt, and with the column's name quoted once: a file read
// with the wrong currency gives one on every row.
func (c *col) reason(err error) string {
	return c.label + ": " + err.Error()
}

// get returns the trimmed value of c in rec, "" when c is unmapped.
func (c *col) get(rec []string) string {
	if c.i < 0 || rec[c.i] == "" {
		return ""
	}
	return tabular.Trim(rec[c.i])
}

type parser struct {
	m      *Mapping
	fields int // fields in the header

	txID, amount, debit, credit, direction, currency, when, kind, status, fee col
	effectKey, parentEffectKey, paymentIntent, parentTxID, description        col
	meta                                                                      []metaCol
	currencies                                                                reconcile.Currencies
	kinds, statuses                                                           tabular.Memo[string] // value as written → what the mapping says
}

// lookup returns what m, keyed by lower-cased values, says of v, "" when
// it does not list v.
func lookup(memo *tabular.Memo[string], m map[string]string, v string) string {
	got, ok := memo.Get(v)
	if !ok {
		got = m[strings.ToLower(v)]
		memo.Put(v, got)
	}
	return got
}

// metaCol is a column kept in Metadata under key.
type metaCol struct {
	key string
	col
}

// header finds every column the mapping names in the header record, and
// returns how many fields it has.
func (p *parser) header(rec []string) (int, error) {
	h := tabular.NewHeader(rec)
	p.fields = len(rec)
	var names []string
	for _, c := range p.m.namedColumns() {
		names = append(names, c.name)
	}
	if err := h.Require(names...); err != nil {
		return 0, fmt.Errorf("%w (the header has: %s)", err, strings.Join(h.Names, ", "))
	}
	// Every column the mapping names is read: which of two of a name the
	// file meant cannot be told. Columns it does not name may repeat.
	if err := h.Unique(names...); err != nil {
		return 0, err
	}
	find := func(name string) col {
		if name == "" {
			return col{i: -1}
		}
		name = strings.TrimSpace(name)
		return col{name: name, i: h.Index(name), label: "column " + strconv.Quote(name)}
	}
	c := &p.m.Columns
	p.txID, p.amount, p.debit, p.credit = find(c.TxID), find(c.Amount), find(c.Debit), find(c.Credit)
	p.direction, p.currency, p.when, p.kind = find(c.Direction), find(c.Currency), find(c.Time), find(c.Kind)
	p.status, p.fee, p.effectKey = find(c.Status), find(c.Fee), find(c.EffectKey)
	p.parentEffectKey, p.paymentIntent = find(c.ParentEffectKey), find(c.PaymentIntent)
	p.parentTxID, p.description = find(c.ParentTxID), find(c.Description)
	p.meta = make([]metaCol, 0, len(p.m.Metadata))
	for k, name := range p.m.Metadata {
		p.meta = append(p.meta, metaCol{k, find(name)})
	}
	return p.fields, nil
}

// row gives one record its outcome.
func (p *parser) row(rec []string, line int, raw string, sink reconcile.RowSink) error {
	ev, ignore, reject := p.build(rec, tabular.HasExponent(raw))
	switch {
	case ignore != "":
		return sink.Ignore(line, ignore)
	case reject != "":
		return sink.Reject(line, raw, reject)
	}
	ev.Line, ev.Raw = line, raw
	return sink.Evidence(ev)
}

// build turns a record into evidence, or says why it is ignored or rejected.
// exponent is tabular.HasExponent of the row's text: without an 'e' or 'E'
// before a sign no id can be mangled.
func (p *parser) build(rec []string, exponent bool) (ev *reconcile.Evidence, ignore, reject string) {
	if allEmpty(rec) {
		return nil, "empty row", ""
	}
	if len(rec) < p.fields {
		return nil, "", fmt.Sprintf("short row: %d fields where the header has %d", len(rec), p.fields)
	}
	if len(rec) > p.fields && !allEmpty(rec[p.fields:]) {
		return nil, "", fmt.Sprintf("long row: %d fields where the header has %d (a delimiter inside an unquoted value?)", len(rec), p.fields)
	}
	m := p.m

	kind, rawKind := m.kind, ""
	if p.kind.i >= 0 {
		rawKind = p.kind.get(rec)
		kind = reconcile.KindOther
		switch k := lookup(&p.kinds, m.kinds, rawKind); k {
		case "ignore":
			return nil, fmt.Sprintf("%s %q is mapped to ignore", p.kind.name, rawKind), ""
		case "":
		default:
			kind = reconcile.Kind(k)
		}
	}
	var pending, failed bool
	if p.status.i >= 0 {
		s := p.status.get(rec)
		switch lookup(&p.statuses, m.statuses, s) {
		case "ignore":
			return nil, fmt.Sprintf("%s %q is mapped to ignore", p.status.name, s), ""
		case "pending":
			pending = true
		case "failed":
			failed = true
		}
	}

	var ids [5]string
	for i, c := range [...]*col{&p.txID, &p.effectKey, &p.parentEffectKey, &p.paymentIntent, &p.parentTxID} {
		v := c.get(rec)
		if exponent && reconcile.Mangled(v) {
			return nil, "", fmt.Sprintf("column %q: %q is in scientific notation: a spreadsheet mangled the id and the original is lost", c.name, v)
		}
		ids[i] = v
	}

	cur := p.currency.get(rec)
	if cur == "" {
		cur = m.currency
	}
	if cur == "" {
		return nil, "", fmt.Sprintf("column %q is empty: no currency", p.currency.name)
	}
	cur, exp, err := p.currencies.Lookup(cur)
	if err != nil {
		return nil, "", p.currency.reason(err)
	}
	minor, reason := p.amountOf(rec, exp)
	if reason != "" {
		return nil, "", reason
	}
	if m.Negate {
		minor = -minor
	}
	var fee int64
	if v := p.fee.get(rec); v != "" {
		if fee, err = parseAmount(v, exp, m.decimal); err != nil {
			return nil, "", p.fee.reason(err)
		}
		fee = abs(fee)
	}

	v := p.when.get(rec)
	if v == "" {
		return nil, "", fmt.Sprintf("column %q is empty: no date", p.when.name)
	}
	when, err := parseTime(v, m.TimeLayout, m.loc)
	if err != nil {
		return nil, "", p.when.reason(err)
	}

	var meta map[string]string
	for i := range p.meta {
		c := &p.meta[i]
		if v := c.get(rec); v != "" {
			if meta == nil {
				meta = make(map[string]string, len(p.meta))
			}
			meta[c.key] = v
		}
	}
	return &reconcile.Evidence{
		Provider:        m.Provider,
		TxID:            ids[0],
		Kind:            kind,
		RawKind:         rawKind,
		Amount:          reconcile.Money{Minor: minor, Currency: cur},
		Fee:             fee,
		Time:            when,
		Pending:         pending,
		Failed:          failed,
		EffectKey:       ids[1],
		ParentEffectKey: ids[2],
		PaymentIntent:   ids[3],
		ParentTxID:      ids[4],
		Description:     p.description.get(rec),
		Metadata:        meta,
	}, "", ""
}

// amountOf reads the signed amount from the amount column (with its
// direction column) or from the debit and credit pair. A debit is money out
// whatever its sign, since many banks write debits with a redundant minus; a
// credit keeps the sign it is written with, since a negative credit is a
// correction that took money out.
func (p *parser) amountOf(rec []string, exp int) (int64, string) {
	m := p.m
	if p.amount.i >= 0 {
		v := p.amount.get(rec)
		if v == "" {
			return 0, fmt.Sprintf("column %q is empty: no amount", p.amount.name)
		}
		minor, err := parseAmount(v, exp, m.decimal)
		if err != nil {
			return 0, p.amount.reason(err)
		}
		if p.direction.i < 0 {
			return minor, ""
		}
		d := p.direction.get(rec)
		switch {
		case containsFold(m.DebitValues, d):
			return -abs(minor), ""
		case len(m.CreditValues) == 0 || containsFold(m.CreditValues, d):
			return minor, ""
		}
		return 0, fmt.Sprintf("column %q: %q is neither a debit value (%s) nor a credit value (%s)", p.direction.name, d, strings.Join(m.DebitValues, ", "), strings.Join(m.CreditValues, ", "))
	}
	dv, cv := p.debit.get(rec), p.credit.get(rec)
	var d, c int64
	var err error
	if dv != "" {
		if d, err = parseAmount(dv, exp, m.decimal); err != nil {
			return 0, p.debit.reason(err)
		}
	}
	if cv != "" {
		if c, err = parseAmount(cv, exp, m.decimal); err != nil {
			return 0, p.credit.reason(err)
		}
	}
	switch {
	case dv == "" && cv == "":
		return 0, fmt.Sprintf("columns %q and %q are both empty: no amount", p.debit.name, p.credit.name)
	case d != 0 && c != 0:
		return 0, fmt.Sprintf("columns %q and %q both have an amount (%s, %s)", p.debit.name, p.credit.name, dv, cv)
	}
	return c - abs(d), ""
}

// parseAmount reads a decimal amount in major units as minor units. Besides
// what reconcile.ParseMinor accepts it takes the accountants' negative forms
// "(12.00)" and "12.00-".
func parseAmount(s string, exp int, decimal byte) (int64, error) {
	neg := false
	if t, ok := strings.CutPrefix(s, "("); ok {
		if t, ok = strings.CutSuffix(t, ")"); ok {
			s, neg = t, true
		}
	} else if t, ok := strings.CutSuffix(s, "-"); ok && !strings.HasPrefix(t, "-") {
		s, neg = t, true
	}
	if neg && (strings.HasPrefix(strings.TrimSpace(s), "-") || strings.HasPrefix(strings.TrimSpace(s), "+")) {
		return 0, fmt.Errorf("amount %q has two signs", s)
	}
	v, err := reconcile.ParseMinor(s, exp, decimal)
	if err != nil {
		return 0, err
	}
	if neg {
		v = -v
	}
	return v, nil
}

// isoLayouts are tried, in order, when the mapping gives no time layout.
var isoLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	time.DateOnly,
}

// parseTime reads v with layout (or the ISO layouts), in loc when v has no
// offset, and returns it in UTC.
func parseTime(v, layout string, loc *time.Location) (time.Time, error) {
	if layout != "" {
		t, err := time.ParseInLocation(layout, v, loc)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q does not match the time layout %q", v, layout)
		}
		return t.UTC(), nil
	}
	if (len(v) == 19 || len(v) == 20 && v[19] == 'Z') && (v[10] == 'T' || v[10] == ' ') {
		// What the ISO layouts read most often, without time.Parse: a
		// time without an offset is in loc, one with Z in UTC.
		at := loc
		if len(v) == 20 {
			at = time.UTC
		}
		if t, _, ok := tabular.ParseDateTime(v, '-', v[10], at); ok {
			return t.UTC(), nil
		}
	}
	for _, l := range isoLayouts {
		if t, err := time.ParseInLocation(l, v, loc); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO date or time such as 2024-03-31 or 2024-03-31T14:05:00Z (set time_layout for other forms)", v)
}

func allEmpty(rec []string) bool {
	for _, f := range rec {
		if tabular.Trim(f) != "" {
			return false
		}
	}
	return true
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(strings.TrimSpace(v), s) {
			return true
		}
	}
	return false
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// skipLine reads past one line without holding it: a preamble line is
// bounded like any other (tabular.MaxLine).
func skipLine(br *bufio.Reader) error {
	n := 0
	for {
		b, err := br.ReadSlice('\n')
		n += len(b)
		switch {
		case n > tabular.MaxLine:
			return fmt.Errorf("a line of the skip_rows preamble is longer than %s", tabular.FormatBytes(tabular.MaxLine))
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		}
		return err
	}
}
