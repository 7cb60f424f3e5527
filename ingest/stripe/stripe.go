// Package stripe reads Stripe's own accounts of what happened to our money:
// the itemized balance reports downloaded from the dashboard or the Reporting
// API (CSV), and dumps of webhook events (JSON).
//
// Both parsers give every input row exactly one outcome through a
// reconcile.RowSink: evidence, a rejection with a reason, or an ignore with a
// reason. Amounts are converted to integer minor units with Stripe's own
// currency exponents and never pass through float64.
package stripe

import (
	"bytes"
	"context"
)

const provider = "stripe"

// checkEvery is how many rows a parser reads between checks of its context.
const checkEvery = 4096

var bom = []byte{0xEF, 0xBB, 0xBF}

// cancelled returns the context's error before the first row and every
// checkEvery rows after, so that a cancelled run stops within a few thousand
// rows without paying for a check on every one.
func cancelled(ctx context.Context, rows int) error {
	if rows%checkEvery != 0 {
		return nil
	}
	return ctx.Err()
}

// firstLine returns head without a byte-order mark, up to its first line end.
func firstLine(head []byte) []byte {
	head = bytes.TrimPrefix(head, bom)
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	return bytes.TrimRight(head, "\r")
}
