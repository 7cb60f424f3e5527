package stripe

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"reconcile"
	"reconcile/ingest/tabular"
)

// ItemizedOptions configures ParseItemized. The zero value reads a report
// as Stripe writes it, with local times in UTC.
type ItemizedOptions struct {
	// Location is the time zone the report was run in (a dashboard setting),
	// used for the local-time "created" column when there is no
	// "created_utc". Nil means UTC.
	Location *time.Location
	// DecimalComma reads every amount of a semicolon-delimited report with
	// a decimal comma ("1.234,56"). Stripe itself always writes a decimal point;
	// a report that a spreadsheet in a European locale saved again is
	// semicolon-delimited, and its decimal commas are read without this
	// when its amounts tell (see tabular.Amounts).
	DecimalComma bool
}

// categoryKinds maps the reporting categories we know to kinds. The set is
// open at Stripe's end: anything else becomes KindOther with its name kept.
var categoryKinds = map[string]reconcile.Kind{
	"charge":                   reconcile.KindCharge,
	"charge_failure":           reconcile.KindCharge, // a charge that later failed (ACH, SEPA): same ch_, marked Failed
	"refund":                   reconcile.KindRefund,
	"refund_failure":           reconcile.KindRefund, // the refund's money coming back: positive, marked Failed
	"dispute":                  reconcile.KindDispute,
	"dispute_reversal":         reconcile.KindDispute,
	"fee":                      reconcile.KindFee,
	"network_cost":             reconcile.KindFee,
	"payout":                   reconcile.KindPayout,
	"payout_reversal":          reconcile.KindPayout,
	"transfer":                 reconcile.KindTransfer,
	"transfer_reversal":        reconcile.KindTransfer,
	"topup":                    reconcile.KindTransfer,
	"topup_reversal":           reconcile.KindTransfer,
	"adjustment":               reconcile.KindAdjustment,
	"other_adjustment":         reconcile.KindAdjustment,
	"partial_capture_reversal": reconcile.KindAdjustment, // shares the charge's id: as a charge it would look like a duplicate
}

// failedCategories are the categories that say an earlier transaction with
// the same source id did not happen after all.
var failedCategories = map[string]bool{"charge_failure": true, "refund_failure": true}

// itemizedColumns holds the position of each column we read, -1 when absent.
type itemizedColumns struct {
	width                                       int
	txn, source, charge, intent                 int
	createdUTC, created                         int
	currency, gross, fee, category, description int
	payout, account                             int
	paymentKey, refundKey, transferKey          int
	ids                                         []metaColumn // id columns a spreadsheet may mangle
	meta                                        []metaColumn
	kept                                        []metaColumn // what metadata keeps: three columns, then meta
}

// metaColumn is a named column at position i.
type metaColumn struct {
	name string
	i    int
}

// mapItemized finds the columns of an itemized report by name and names
// every required one that is missing.
func mapItemized(h *tabular.Header) (*itemizedColumns, error) {
	c := &itemizedColumns{
		width:       len(h.Names),
		txn:         h.Index("balance_transaction_id"),
		source:      h.Index("source_id"),
		charge:      h.Index("charge_id"),
		intent:      h.Index("payment_intent_id"),
		createdUTC:  h.Index("created_utc"),
		created:     h.Index("created"),
		currency:    h.Index("currency"),
		gross:       h.Index("gross"),
		fee:         h.Index("fee"),
		category:    h.Index("reporting_category"),
		description: h.Index("description"),
		payout:      h.Index("automatic_payout_id"),
		account:     h.Index("connected_account_id"),
		paymentKey:  h.Index("payment_metadata[effect_key]"),
		refundKey:   h.Index("refund_metadata[effect_key]"),
		transferKey: h.Index("transfer_metadata[effect_key]"),
	}
	var missing []string
	for _, req := range []struct {
		name string
		i    int
	}{
		{"currency", c.currency},
		{"gross", c.gross},
		{"reporting_category", c.category},
		{"created_utc or created", max(c.createdUTC, c.created)},
		{"balance_transaction_id or source_id", max(c.txn, c.source)},
	} {
		if req.i < 0 {
			missing = append(missing, req.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not a Stripe itemized report: missing required column(s) %s", strings.Join(missing, ", "))
	}
	// Which of two columns of a name the report meant cannot be told. Other
	// metadata columns may repeat: they are kept, each under its name.
	if err := h.Unique("balance_transaction_id", "source_id", "charge_id", "payment_intent_id", "created_utc", "created",
		"currency", "gross", "fee", "reporting_category", "description", "automatic_payout_id", "connected_account_id",
		"payment_metadata[effect_key]", "refund_metadata[effect_key]", "transfer_metadata[effect_key]"); err != nil {
		return nil, err
	}
	for _, n := range []string{"balance_transaction_id", "source_id", "charge_id", "payment_intent_id",
		"payment_metadata[effect_key]", "refund_metadata[effect_key]", "transfer_metadata[effect_key]"} {
		if i := h.Index(n); i >= 0 {
			c.ids = append(c.ids, metaColumn{name: n, i: i})
		}
	}
	for i, n := range h.Names {
		if strings.Contains(n, "_metadata[") && strings.HasSuffix(n, "]") {
			c.meta = append(c.meta, metaColumn{name: n, i: i})
		}
	}
	for _, f := range []metaColumn{{"balance_transaction_id", c.txn}, {"automatic_payout_id", c.payout}, {"connected_account_id", c.account}} {
		if f.i >= 0 {
			c.kept = append(c.kept, f)
		}
	}
	c.kept = append(c.kept, c.meta...)
	return c, nil
}

// DetectItemized reports whether a file looks like a Stripe itemized
// balance report: its header names reporting_category, gross and currency,
// or the file is called *itemized* and its header has a gross column.
func DetectItemized(name string, head []byte) bool {
	line := firstLine(head)
	cols := map[string]bool{}
	for _, f := range strings.Split(string(line), string(tabular.Sniff(line))) {
		cols[strings.ToLower(strings.Trim(strings.TrimSpace(f), `"`))] = true
	}
	if cols["reporting_category"] && cols["gross"] && cols["currency"] {
		return true
	}
	return strings.Contains(strings.ToLower(name), "itemized") && cols["gross"]
}

// ParseItemized reads a Stripe itemized report ("Balance change from
// activity", "Payout reconciliation", "Ending balance reconciliation") and
// sends one outcome per data row to sink. Columns are found by name, in any
// order. A missing required column, a header that is not CSV or a read error
// stops the parse with an error naming the line.
func ParseItemized(ctx context.Context, r io.Reader, opt ItemizedOptions, sink reconcile.RowSink) error {
	loc := opt.Location
	if loc == nil {
		loc = time.UTC
	}
	rd, err := tabular.NewReader(r, 0)
	if err != nil {
		return fmt.Errorf("line 1: %w", err)
	}
	p := &itemizedParser{loc: loc, currencies: reconcile.Currencies{Provider: provider},
		amounts: tabular.Amounts{Comma: rd.Comma, Force: opt.DecimalComma}}
	rows := tabular.Rows{
		Empty:  "line 1: empty file: a Stripe itemized report starts with a header row",
		Header: "header row",
	}
	return rows.Read(ctx, rd, sink, func(rec []string) (int, error) {
		cols, err := mapItemized(tabular.NewHeader(rec))
		if err != nil {
			return 0, err
		}
		p.cols = cols
		return cols.width, nil
	}, p.row)
}

// itemizedParser holds what every row of one report is read with.
type itemizedParser struct {
	cols       *itemizedColumns
	loc        *time.Location
	currencies reconcile.Currencies
	amounts    tabular.Amounts // the decimal separator of each amount column
	kv         []string        // scratch for metadata: key, value, ...
}

// row turns one data record into its outcome.
func (p *itemizedParser) row(rec []string, line int, raw string, sink reconcile.RowSink) error {
	c := p.cols
	if blank(rec) {
		return sink.Ignore(line, "empty row: every field is blank")
	}
	if len(rec) < c.width {
		return sink.Reject(line, raw, fmt.Sprintf("short row: %d fields where the header has %d", len(rec), c.width))
	}
	if len(rec) > c.width && !blank(rec[c.width:]) {
		return sink.Reject(line, raw, fmt.Sprintf("long row: %d fields where the header has %d (a delimiter inside an unquoted field?)", len(rec), c.width))
	}
	get := func(i int) string {
		if i < 0 {
			return ""
		}
		return tabular.Trim(rec[i])
	}
	for _, id := range c.ids {
		if v := get(id.i); tabular.HasExponent(v) && reconcile.Mangled(v) { // HasExponent is the cheap half
			return sink.Reject(line, raw, fmt.Sprintf("column %s: %q is in scientific notation: a spreadsheet mangled the id; export the report again without opening it in a spreadsheet", id.name, v))
		}
	}
	cur, exp, err := p.currencies.Lookup(get(c.currency))
	if err != nil {
		return sink.Reject(line, raw, "column currency: "+err.Error())
	}
	gross, err := p.amount("gross", get(c.gross), exp)
	if err != nil {
		return sink.Reject(line, raw, fmt.Sprintf("column gross: %v", err))
	}
	var fee int64
	if v := get(c.fee); v != "" {
		if fee, err = p.amount("fee", v, exp); err != nil {
			return sink.Reject(line, raw, fmt.Sprintf("column fee: %v", err))
		}
	}
	at, reason := p.time(rec)
	if reason != "" {
		return sink.Reject(line, raw, reason)
	}

	category := get(c.category)
	norm := strings.ToLower(category)
	kind, ok := categoryKinds[norm]
	if !ok {
		kind = reconcile.KindOther
	}
	e := &reconcile.Evidence{
		Provider:      provider,
		TxID:          get(c.source),
		Kind:          kind,
		RawKind:       category,
		Amount:        reconcile.Money{Minor: gross, Currency: cur},
		Fee:           fee,
		Time:          at,
		Failed:        failedCategories[norm],
		PaymentIntent: get(c.intent),
		Description:   get(c.description),
		Line:          line,
		Raw:           raw,
	}
	charge := get(c.charge)
	if e.TxID == "" && kind == reconcile.KindCharge {
		e.TxID = charge
	}
	if charge != e.TxID {
		e.ParentTxID = charge
	}
	// payment_metadata is the charge's, refund_metadata and
	// transfer_metadata the row's own when it is a refund or transfer.
	switch kind {
	case reconcile.KindCharge:
		e.EffectKey = get(c.paymentKey)
	case reconcile.KindRefund:
		e.EffectKey, e.ParentEffectKey = get(c.refundKey), get(c.paymentKey)
	case reconcile.KindTransfer:
		e.EffectKey = get(c.transferKey)
	default:
		e.ParentEffectKey = get(c.paymentKey)
	}
	e.Metadata = p.metadata(rec)
	return sink.Evidence(e)
}

// time reads the row's creation time, or says why it cannot.
func (p *itemizedParser) time(rec []string) (time.Time, string) {
	c := p.cols
	if c.createdUTC >= 0 {
		if v := tabular.Trim(rec[c.createdUTC]); v != "" {
			t, err := parseReportTime(v, time.UTC)
			if err != nil {
				return t, fmt.Sprintf("column created_utc: %q is not a date and time like 2006-01-02 15:04:05", v)
			}
			return t, ""
		}
	}
	if c.created < 0 {
		return time.Time{}, "column created_utc is empty"
	}
	v := tabular.Trim(rec[c.created])
	if v == "" {
		return time.Time{}, "column created is empty"
	}
	t, err := parseReportTime(v, p.loc)
	if err != nil {
		return t, fmt.Sprintf("column created: %q is not a date and time like 2006-01-02 15:04:05", v)
	}
	return t, ""
}

// metadata keeps the metadata columns under their full names, and the row's
// balance transaction, payout and connected account, which have no field of
// their own in Evidence. It returns nil when there is nothing to keep.
func (p *itemizedParser) metadata(rec []string) map[string]string {
	kv := p.kv[:0]
	for _, mc := range p.cols.kept {
		if v := tabular.Trim(rec[mc.i]); v != "" {
			kv = append(kv, mc.name, v)
		}
	}
	p.kv = kv
	if len(kv) == 0 {
		return nil
	}
	m := make(map[string]string, len(kv)/2) // sized once: growing it cost more than filling it
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// amount reads the amount s of the named column with the column's decimal
// separator, except that text that is no number at all ("ten") is called
// that, not scientific notation or too many decimals.
func (p *itemizedParser) amount(column, s string, exp int) (int64, error) {
	t := strings.TrimLeft(tabular.Trim(s), "+-")
	if !numeral(t) && !reconcile.Mangled(t) {
		return 0, fmt.Errorf("amount %q is not a number", s)
	}
	return p.amounts.Parse(column, s, exp)
}

// numeral reports whether t holds only digits, '.' and ','. How many
// separators are where is for ParseMinor to say.
func numeral(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; (c < '0' || c > '9') && c != '.' && c != ',' {
			return false
		}
	}
	return true
}

// reportLayouts are the ways a report's times are written: Stripe's own, and
// ISO 8601 as other tools re-save them. A layout without a zone is read in
// the report's time zone.
var reportLayouts = []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", time.RFC3339}

func parseReportTime(s string, loc *time.Location) (time.Time, error) {
	if len(s) == 19 {
		// The first two layouts, read without time.Parse.
		if t, _, ok := tabular.ParseDateTime(s, '-', s[10], loc); ok && (s[10] == ' ' || s[10] == 'T') {
			return t.UTC(), nil
		}
	}
	var err error
	for _, l := range reportLayouts {
		var t time.Time
		if t, err = time.ParseInLocation(l, s, loc); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, err
}

// blank reports whether every field is empty or spaces, as in the trailing
// ",,,," rows a spreadsheet leaves behind.
func blank(rec []string) bool {
	for _, f := range rec {
		if tabular.Trim(f) != "" {
			return false
		}
	}
	return true
}
