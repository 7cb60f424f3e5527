package driver

import (
	"encoding/json"

	"reconcile"
	"reconcile/matcher"
)

// PlainRequest is the request a driver hands over in a ScopedEffect: an
// object of the request's "amount" and "currency" members, given as JSON
// text (nil when the request lacks one), or whole, the request as it is,
// when it is not a JSON object.
func PlainRequest(amount, currency, whole *string) []byte {
	if whole != nil {
		return []byte(*whole)
	}
	b := make([]byte, 0, 48)
	b = append(b, `{"amount":`...)
	b = appendJSON(b, amount)
	b = append(b, `,"currency":`...)
	b = appendJSON(b, currency)
	return append(b, '}')
}

// ReducedRequest is PlainRequest of a whole request: its amount and
// currency when it is a JSON object (a member named twice counts as its
// last, as in jsonb), else the request itself, for the matcher to reject.
// A request that names nothing else already is one, and is kept as it is
// (the matcher reads it as it would read its reduction), without the
// cost of decoding it.
func ReducedRequest(request []byte) []byte {
	if matcher.IsPlainRequest(request) {
		return request
	}
	if amount, currency, ok := members(request); ok {
		return plainOf(amount, currency)
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(request, &all) != nil || all == nil {
		return request
	}
	return plainOf(all["amount"], all["currency"])
}

// plainOf is PlainRequest of two members' raw values (nil: absent).
func plainOf(amount, currency []byte) []byte {
	str := func(m []byte) *string {
		if m == nil {
			return nil
		}
		s := string(m)
		return &s
	}
	return PlainRequest(str(amount), str(currency), nil)
}

func appendJSON(b []byte, v *string) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return append(b, *v...)
}

// FindingRow is a discrepancy as the finding table stores it.
type FindingRow struct {
	Transactions []byte // JSON
	Actions      []byte // JSON
}

// EncodeFinding turns a discrepancy's transactions and actions into JSON.
func EncodeFinding(d *reconcile.Discrepancy) (FindingRow, error) {
	txs, err := json.Marshal(d.Transactions)
	if err != nil {
		return FindingRow{}, err
	}
	acts, err := json.Marshal(d.Actions)
	return FindingRow{Transactions: txs, Actions: acts}, err
}

// DecodeFinding fills a discrepancy's transactions and actions from JSON.
func DecodeFinding(d *reconcile.Discrepancy, txs, acts []byte) error {
	if err := json.Unmarshal(txs, &d.Transactions); err != nil {
		return err
	}
	return json.Unmarshal(acts, &d.Actions)
}
