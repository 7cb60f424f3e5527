package csvmap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"reconcile"
)

// Mapping tells Parse how to read one provider's CSV. Load it with
// LoadMapping, which checks it; the package documentation has an example.
type Mapping struct {
	// Comment is free text for the people who keep the mapping (JSON has no
	// comments).
	Comment  string `json:"comment"`
	Provider string `json:"provider"`
	// Delimiter is ",", ";", "|" or "\t" (also written "tab"); sniffed from
	// the header line when empty.
	Delimiter string `json:"delimiter"`
	// Decimal is the decimal separator of amounts, "." (the default) or ",".
	// The other one is accepted as a thousands separator: "1.250,00".
	Decimal string `json:"decimal"`
	// SkipRows is the number of lines before the header (a bank's preamble).
	SkipRows int `json:"skip_rows"`
	// TimeLayout is a Go time layout ("02.01.2006", "2006-01-02 15:04").
	// When empty, ISO forms are accepted: 2006-01-02, with a time after a T
	// or a space, with or without an offset.
	TimeLayout string `json:"time_layout"`
	// TimeZone is the IANA zone of times written without an offset; UTC
	// when empty.
	TimeZone string `json:"time_zone"`
	// Currency is used when the file has no currency column, or when the
	// column is empty on a row.
	Currency string  `json:"currency"`
	Columns  Columns `json:"columns"`
	// Negate flips every amount, for files written from the other party's
	// side.
	Negate bool `json:"negate"`
	// DebitValues are the values of columns.direction that mean money out;
	// when CreditValues is empty every other value means money in.
	DebitValues  []string `json:"debit_values"`
	CreditValues []string `json:"credit_values"`
	// Kind is the kind of every row when there is no kind column.
	Kind string `json:"kind"`
	// Kinds maps the values of columns.kind (compared without regard to
	// case) to a kind: charge, refund, dispute, fee, payout, transfer,
	// adjustment, other, or ignore to skip the row with a reason. Values not
	// listed are other.
	Kinds map[string]string `json:"kinds"`
	// Statuses maps the values of columns.status to pending, failed, ignore
	// or final. Values not listed are final.
	Statuses map[string]string `json:"statuses"`
	// Metadata copies more columns into the evidence: metadata key → column.
	Metadata map[string]string `json:"metadata"`

	// Resolved by check.
	comma    rune
	decimal  byte
	loc      *time.Location
	currency string
	kind     reconcile.Kind
	kinds    map[string]string
	statuses map[string]string
}

// Columns names the CSV columns, by their header text (compared without
// regard to case or surrounding spaces). Only Time and either Amount or
// Debit and Credit are required.
type Columns struct {
	TxID   string `json:"tx_id"`
	Amount string `json:"amount"` // signed, unless Direction is set
	// Debit and Credit are an unsigned pair, instead of Amount: the one
	// that is filled in gives the amount and its sign.
	Debit     string `json:"debit"`
	Credit    string `json:"credit"`
	Direction string `json:"direction"` // says debit or credit for an unsigned Amount
	Currency  string `json:"currency"`
	Time      string `json:"time"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	Fee       string `json:"fee"`

	EffectKey       string `json:"effect_key"`
	ParentEffectKey string `json:"parent_effect_key"`
	PaymentIntent   string `json:"payment_intent"`
	ParentTxID      string `json:"parent_tx_id"`
	Description     string `json:"description"`
}

// FieldError is a problem with one field of a mapping.
type FieldError struct {
	Field string // "columns.amount", "kinds[\"SALE\"]", ...
	Msg   string
}

func (e *FieldError) Error() string { return "mapping field " + e.Field + ": " + e.Msg }

// kinds is every kind a mapping may name, and the word that skips a row.
var kinds = map[string]bool{
	string(reconcile.KindCharge): true, string(reconcile.KindRefund): true,
	string(reconcile.KindDispute): true, string(reconcile.KindFee): true,
	string(reconcile.KindPayout): true, string(reconcile.KindTransfer): true,
	string(reconcile.KindAdjustment): true, string(reconcile.KindOther): true,
	"ignore": true,
}

var statuses = map[string]bool{"pending": true, "failed": true, "ignore": true, "final": true}

var providerName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// LoadMapping reads a mapping from JSON and checks it. Unknown fields are
// errors, so that a misspelt field is not silently ignored. The error names
// every field that is wrong.
func LoadMapping(r io.Reader) (*Mapping, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read mapping: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	m := &Mapping{}
	if err := dec.Decode(m); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("mapping line %d: %w", lineAt(data, se.Offset), err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("mapping line %d: field %s: %w", lineAt(data, te.Offset), te.Field, err)
		}
		return nil, fmt.Errorf("mapping: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("mapping line %d: more than one JSON object", lineAt(data, dec.InputOffset()))
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}

func lineAt(data []byte, off int64) int {
	return bytes.Count(data[:min(int(off), len(data))], []byte("\n")) + 1
}

// check validates the mapping and resolves its derived fields. It returns
// every problem found, each a *FieldError, joined.
func (m *Mapping) check() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	c := &m.Columns

	if !providerName.MatchString(m.Provider) {
		bad("provider", "%q must be a lower-case name such as \"acmebank\"", m.Provider)
	}
	switch d := m.Delimiter; {
	case d == "":
	case d == "tab" || d == "\t":
		m.comma = '\t'
	case utf8.RuneCountInString(d) == 1 && !strings.ContainsAny(d, "\"\r\n") && d != string(utf8.RuneError):
		m.comma, _ = utf8.DecodeRuneInString(d)
	default:
		bad("delimiter", "%q must be one character such as \",\", \";\" or \"tab\"", d)
	}
	switch m.Decimal {
	case "", ".":
		m.decimal = '.'
	case ",":
		m.decimal = ','
	default:
		bad("decimal", "%q must be \".\" or \",\"", m.Decimal)
	}
	if m.SkipRows < 0 {
		bad("skip_rows", "%d must not be negative", m.SkipRows)
	}
	if m.TimeLayout != "" {
		ref := time.Date(2024, 11, 23, 0, 0, 0, 0, time.UTC)
		t, err := time.Parse(m.TimeLayout, ref.Format(m.TimeLayout))
		if err != nil || t.Year() != ref.Year() || t.YearDay() != ref.YearDay() {
			bad("time_layout", "%q is not a Go time layout with a year, month and day; write Go's reference time Mon Jan 2 15:04:05 2006 in the file's form, e.g. \"02.01.2006\" or \"2006-01-02 15:04\"", m.TimeLayout)
		}
	}
	m.loc = time.UTC
	if m.TimeZone != "" {
		loc, err := time.LoadLocation(m.TimeZone)
		if err != nil {
			bad("time_zone", "%q is not an IANA time zone such as \"Europe/Berlin\"", m.TimeZone)
		} else {
			m.loc = loc
		}
	}
	if m.Currency != "" {
		cur, err := reconcile.NormalizeCurrency(m.Currency)
		if err != nil {
			bad("currency", "%v", err)
		}
		m.currency = cur
	}

	for _, col := range m.namedColumns() {
		if strings.TrimSpace(col.name) == "" {
			bad(col.field, "column name is blank")
		}
	}
	if c.Time == "" {
		bad("columns.time", "is required: the column with the date of each row")
	}
	switch {
	case c.Amount != "" && (c.Debit != "" || c.Credit != ""):
		bad("columns.amount", "name either an amount column or a debit and a credit column, not both")
	case c.Amount == "" && c.Debit == "" && c.Credit == "":
		bad("columns.amount", "is required (or columns.debit and columns.credit)")
	case c.Amount == "" && (c.Debit == "" || c.Credit == ""):
		bad("columns.debit", "columns.debit and columns.credit go together")
	}
	if c.Direction != "" {
		if c.Amount == "" {
			bad("columns.direction", "only applies to columns.amount")
		}
		if len(m.DebitValues) == 0 {
			bad("debit_values", "is required with columns.direction: the values that mean money out, such as [\"D\", \"DR\"]")
		}
	} else if len(m.DebitValues) > 0 || len(m.CreditValues) > 0 {
		bad("debit_values", "needs columns.direction")
	}
	if c.Currency == "" && m.Currency == "" {
		bad("currency", "is required when there is no columns.currency")
	}

	m.kind = reconcile.KindOther
	if m.Kind != "" {
		if !kinds[m.Kind] || m.Kind == "ignore" {
			bad("kind", "%q is not one of %s", m.Kind, kindList())
		}
		m.kind = reconcile.Kind(m.Kind)
	}
	if len(m.Kinds) > 0 && c.Kind == "" {
		bad("kinds", "needs columns.kind")
	}
	m.kinds = make(map[string]string, len(m.Kinds))
	for _, raw := range sortedKeys(m.Kinds) {
		k := m.Kinds[raw]
		if !kinds[k] {
			bad(fmt.Sprintf("kinds[%q]", raw), "%q is not one of %s, ignore", k, kindList())
		}
		m.kinds[strings.ToLower(strings.TrimSpace(raw))] = k
	}
	if len(m.Statuses) > 0 && c.Status == "" {
		bad("statuses", "needs columns.status")
	}
	m.statuses = make(map[string]string, len(m.Statuses))
	for _, raw := range sortedKeys(m.Statuses) {
		s := m.Statuses[raw]
		if !statuses[s] {
			bad(fmt.Sprintf("statuses[%q]", raw), "%q is not one of pending, failed, ignore, final", s)
		}
		m.statuses[strings.ToLower(strings.TrimSpace(raw))] = s
	}
	for _, k := range sortedKeys(m.Metadata) {
		if strings.TrimSpace(k) == "" {
			bad("metadata", "a key is blank")
		}
	}
	return errors.Join(errs...)
}

type namedColumn struct{ field, name string }

// namedColumns lists every column the mapping names, with its field.
func (m *Mapping) namedColumns() []namedColumn {
	c := &m.Columns
	all := []namedColumn{
		{"columns.tx_id", c.TxID}, {"columns.amount", c.Amount}, {"columns.debit", c.Debit},
		{"columns.credit", c.Credit}, {"columns.direction", c.Direction}, {"columns.currency", c.Currency},
		{"columns.time", c.Time}, {"columns.kind", c.Kind}, {"columns.status", c.Status},
		{"columns.fee", c.Fee}, {"columns.effect_key", c.EffectKey},
		{"columns.parent_effect_key", c.ParentEffectKey}, {"columns.payment_intent", c.PaymentIntent},
		{"columns.parent_tx_id", c.ParentTxID}, {"columns.description", c.Description},
	}
	for _, k := range sortedKeys(m.Metadata) {
		all = append(all, namedColumn{fmt.Sprintf("metadata[%q]", k), m.Metadata[k]})
	}
	return slices.DeleteFunc(all, func(c namedColumn) bool { return c.name == "" })
}

func kindList() string {
	return "charge, refund, dispute, fee, payout, transfer, adjustment, other"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
