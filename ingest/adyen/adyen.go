// Package adyen reads Adyen's Settlement details report, the CSV that lists
// every booking of a settlement batch (payments, refunds, chargebacks, fees,
// payouts and balance transfers), into evidence.
package adyen

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"time"

	"reconcile"
	"reconcile/ingest/tabular"
)

const provider = "adyen"

// column is a documented column of the report.
type column int

// The documented columns. Undocumented ones are kept in Metadata by name.
const (
	colCompanyAccount column = iota
	colMerchantAccount
	colPspReference
	colMerchantRef
	colPaymentMethod
	colCreationDate
	colTimeZone
	colType
	colModRef
	colGrossCurrency
	colGrossDebit
	colGrossCredit
	colExchangeRate
	colNetCurrency
	colNetDebit
	colNetCredit
	colCommission
	colMarkup
	colSchemeFees
	colInterchange
	colVariant
	colModMerchantRef
	colBatchNumber
	numColumns
)

// columnNames are the columns' names as Adyen writes them in the header.
var columnNames = [numColumns]string{
	"Company Account", "Merchant Account", "Psp Reference", "Merchant Reference", "Payment Method",
	"Creation Date", "TimeZone", "Type", "Modification Reference", "Gross Currency", "Gross Debit (GC)",
	"Gross Credit (GC)", "Exchange Rate", "Net Currency", "Net Debit (NC)", "Net Credit (NC)",
	"Commission (NC)", "Markup (NC)", "Scheme Fees (NC)", "Interchange (NC)", "Payment Method Variant",
	"Modification Merchant Reference", "Batch Number",
}

func (c column) String() string { return columnNames[c] }

// feeColumns are the cost components Adyen deducts from the gross, in the net
// currency; their sum is the transaction's fee.
var feeColumns = []column{colCommission, colMarkup, colSchemeFees, colInterchange}

// metaKeys names the Metadata key of the documented columns that are kept
// on every row. Other documented columns become Evidence fields or stay in
// Raw only; undocumented columns (newer report versions append some, and the
// Reserved ones may carry values) are kept under their header names.
var metaKeys = map[column]string{
	colMerchantAccount: "merchant_account",
	colPspReference:    "psp_reference",
	colModRef:          "modification_reference",
	colBatchNumber:     "batch_number",
	colTimeZone:        "timezone",
}

// unread are the documented columns that no Evidence field is made from.
// A value a spreadsheet has mangled (1.2302025304E+022) in one of them, or
// in an undocumented column, does not reject the row: Metadata flags it
// under "mangled". In any other documented column (ids, references,
// amounts, dates) it rejects the row.
var unread = map[column]bool{
	colCompanyAccount: true,
	colPaymentMethod:  true,
	colExchangeRate:   true,
	colVariant:        true,
	colBatchNumber:    true,
}

// netKeys are kept only when the net currency differs from the amount's:
// then the fee cannot be folded into Fee, and they are the only record of
// what was settled in the net currency.
var netKeys = map[column]string{
	colExchangeRate: "exchange_rate",
	colNetCurrency:  "net_currency",
	colNetDebit:     "net_debit",
	colNetCredit:    "net_credit",
	colCommission:   "commission",
	colMarkup:       "markup",
	colSchemeFees:   "scheme_fees",
	colInterchange:  "interchange",
}

// kinds maps the report's Type (lower-cased) to a kind. Any other Type is
// KindOther: Adyen adds types, and a new one must not stop a run.
var kinds = map[string]reconcile.Kind{
	"settled":            reconcile.KindCharge,
	"settledbulk":        reconcile.KindCharge,
	"refunded":           reconcile.KindRefund,
	"refundedbulk":       reconcile.KindRefund,
	"refundedreversed":   reconcile.KindRefund,
	"chargeback":         reconcile.KindDispute,
	"secondchargeback":   reconcile.KindDispute,
	"chargebackreversed": reconcile.KindDispute,
	"fee":                reconcile.KindFee,
	"paymentcost":        reconcile.KindFee,
	"merchantpayout":     reconcile.KindPayout,
	"balancetransfer":    reconcile.KindTransfer,
	"invoicededuction":   reconcile.KindAdjustment,
	"depositcorrection":  reconcile.KindAdjustment,
	"manualcorrected":    reconcile.KindAdjustment,
}

// Options configures Parse.
type Options struct {
	// Zones gives the IANA time zone of each merchant account, keyed by the
	// Merchant Account column. Adyen writes Creation Date in the account's
	// local time and names its offset in the TimeZone column by an
	// abbreviation. A configured zone is read instead of the abbreviation,
	// which then only picks between the two instants of the hour that
	// repeats when daylight saving time ends. Without one, an abbreviation
	// that means one offset (CET, PDT, JST) gives the offset, even on a date
	// of the other half of the year, and a row whose abbreviation is
	// ambiguous (IST, CST), unknown or empty is rejected.
	Zones map[string]*time.Location
	// DefaultZone is the zone of merchant accounts that Zones does not list.
	DefaultZone *time.Location
	// Comma is the delimiter; 0 sniffs it from the header line.
	Comma rune
	// DecimalComma reads every amount of a semicolon-delimited report with
	// a decimal comma ("1.234,56"). Adyen itself writes a decimal point and no
	// thousands separator; a report that a spreadsheet in a European
	// locale saved again is semicolon-delimited, and its decimal commas are
	// read without this when its amounts tell (see tabular.Amounts).
	DecimalComma bool
}

// Detect reports whether head, the start of a file, is an Adyen settlement
// details report: its header has Psp Reference, Type and Merchant Account.
func Detect(name string, head []byte) bool {
	rd, err := tabular.NewReader(bytes.NewReader(head), 0)
	if err != nil {
		return false
	}
	rec, _, err := rd.Read()
	if err != nil {
		return false
	}
	h := tabular.NewHeader(rec)
	return h.Has(colPspReference.String()) && h.Has(colType.String()) && h.Has(colMerchantAccount.String())
}

// Parse reads a settlement details report from r and gives every row's
// outcome to sink. It returns an error, and stops, when the header lacks a
// required column, when the input cannot be read, or when sink fails.
func Parse(ctx context.Context, r io.Reader, opt Options, sink reconcile.RowSink) error {
	rd, err := tabular.NewReader(r, opt.Comma)
	if err != nil {
		return fmt.Errorf("line 1: %w", err)
	}
	var p *parser
	rows := tabular.Rows{Empty: "line 1: empty file: no header row", Header: "header", Reason: malformedReason}
	return rows.Read(ctx, rd, sink, func(rec []string) (int, error) {
		var err error
		if p, err = newParser(rec, opt); err != nil {
			return 0, err
		}
		p.amounts = tabular.Amounts{Comma: rd.Comma, Force: opt.DecimalComma}
		return p.width, nil
	}, func(rec []string, line int, raw string, sink reconcile.RowSink) error {
		if blank(rec) {
			return nil
		}
		return p.row(rec, line, raw, sink)
	})
}

// malformedReason explains a record that is not well-formed CSV. An
// unclosed quote swallows the lines after it, so the reason names them.
func malformedReason(pe *csv.ParseError) string {
	if pe.Line > pe.StartLine {
		return fmt.Sprintf("malformed CSV quoting (%v) in the row starting on this line; lines %d-%d were read as one row and none of them is used",
			pe.Err, pe.StartLine, pe.Line)
	}
	return fmt.Sprintf("malformed CSV quoting: %v (byte %d of the line)", pe.Err, pe.Column)
}

// blank reports whether rec is a line holding nothing but spaces.
func blank(rec []string) bool {
	return len(rec) == 1 && tabular.Trim(rec[0]) == ""
}

// empty reports whether every field of rec is empty, as in the ",,,,," rows
// that spreadsheets leave behind.
func empty(rec []string) bool {
	for _, v := range rec {
		if tabular.Trim(v) != "" {
			return false
		}
	}
	return true
}

// parser holds what the header tells about the columns.
type parser struct {
	opt   Options
	width int
	names []string        // header names as written
	at    [numColumns]int // position of each documented column, -1 when absent
	read  []bool          // by position: the column is read into Evidence fields
	kept  []keptColumn    // the columns Metadata may keep, in order
	// currencies remembers what currency columns have said, as written.
	currencies tabular.Memo[knownCurrency]
	kinds      tabular.Memo[reconcile.Kind] // Type as written → kind
	amounts    tabular.Amounts              // the decimal separator of each amount column
	kv         []string                     // scratch space for metadata
}

// keptColumn is a column that Metadata keeps on every row (under key), or
// only when the fees stay apart (under net).
type keptColumn struct {
	i        int
	key, net string
}

func newParser(header []string, opt Options) (*parser, error) {
	h := tabular.NewHeader(header)
	var missing []string
	for _, c := range []column{colMerchantAccount, colCreationDate, colType} {
		if !h.Has(c.String()) {
			missing = append(missing, c.String())
		}
	}
	gross := []string{colGrossCurrency.String(), colGrossDebit.String(), colGrossCredit.String()}
	net := []string{colNetCurrency.String(), colNetDebit.String(), colNetCredit.String()}
	if h.Require(gross...) != nil && h.Require(net...) != nil {
		missing = append(missing, strings.Join(gross, ", ")+" (or "+strings.Join(net, ", ")+")")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not a usable Adyen settlement details report: missing required column(s) %s",
			strings.Join(missing, ", "))
	}
	// Every documented column is read, or kept in Metadata under its key:
	// which of two of a name the report meant cannot be told. Undocumented
	// ones may repeat (the first is kept).
	documentedNames := make([]string, numColumns)
	for c := range numColumns {
		documentedNames[c] = c.String()
	}
	if err := h.Unique(documentedNames...); err != nil {
		return nil, err
	}
	p := &parser{opt: opt, width: len(h.Names), names: h.Names, read: make([]bool, len(h.Names))}
	meta, net := make([]string, len(h.Names)), make([]string, len(h.Names))
	documented := map[int]bool{}
	for c := range numColumns {
		i := h.Index(c.String())
		p.at[c] = i
		if i < 0 {
			continue
		}
		documented[i] = true
		p.read[i] = !unread[c]
		if key := metaKeys[c]; key != "" {
			meta[i] = key
		}
		net[i] = netKeys[c]
	}
	for i, name := range h.Names {
		if !documented[i] && h.Index(name) == i { // a repeated header name: the first column wins
			meta[i] = name
		}
		if meta[i] != "" || net[i] != "" {
			p.kept = append(p.kept, keptColumn{i: i, key: meta[i], net: net[i]})
		}
	}
	return p, nil
}

// get returns the trimmed value of a documented column, "" when the column
// is absent.
func (p *parser) get(rec []string, col column) string {
	if i := p.at[col]; uint(i) < uint(len(rec)) { // so written, get is inlined
		return tabular.Trim(rec[i])
	}
	return ""
}

// row gives one data row's outcome to sink. It returns an error only for a
// failure of the whole input or of sink.
func (p *parser) row(rec []string, line int, raw string, sink reconcile.RowSink) error {
	if empty(rec) {
		return sink.Ignore(line, "empty row: every field is empty")
	}
	if len(rec) != p.width {
		what := "short row"
		if len(rec) > p.width {
			what = "long row (a value may hold an unquoted delimiter, which shifts the columns)"
		}
		return sink.Reject(line, raw, fmt.Sprintf("%s: %d fields, the header has %d", what, len(rec), p.width))
	}
	var mangled []string
	if tabular.HasExponent(raw) { // else no field can be mangled
		for i, v := range rec {
			if !reconcile.Mangled(v) {
				continue
			}
			if !p.read[i] {
				mangled = append(mangled, p.names[i])
				continue
			}
			return sink.Reject(line, raw, fmt.Sprintf(
				"column %s holds %q, a number in scientific notation: a spreadsheet has mangled this value; "+
					"download the report from Adyen again and do not open and save it in a spreadsheet",
				p.names[i], strings.TrimSpace(v)))
		}
	}
	e, reason := p.evidence(rec, line)
	if reason != "" {
		return sink.Reject(line, raw, reason)
	}
	if mangled != nil {
		// The row's money and ids are intact; a person should still know
		// that a spreadsheet has been at the file.
		e.Metadata["mangled"] = strings.Join(mangled, ", ")
	}
	e.Raw = raw
	return sink.Evidence(e)
}
