package matcher

import (
	"slices"
	"strings"

	"reconcile"
)

// relater finds the charge effect that a refund or dispute no effect made
// belongs to (DESIGN section 5): a refund a person made in the provider's
// dashboard, an Adyen chargeback of one of our payments.
type relater struct {
	effects    []Effect
	byKey      map[string]int
	byExternal map[externalID]int
	// charges maps the ids of the charge transactions linked to each
	// effect (ch_, pi_, an Adyen PSP reference) to the effect.
	charges map[externalID]int
	// want are the ids that refunds and disputes name as their charge's;
	// wantID the same ids alone: most linked ids are none of them, and a
	// string hashes faster.
	want   map[externalID]bool
	wantID map[string]bool
}

// newRelater prepares to index the linked charges by the ids that a
// refund or dispute among txs names, and by those only: a partition holds
// tens of thousands of charges and a few refunds. Those that end up loose
// (linked to nothing) are among them.
func newRelater(effects []Effect, byKey map[string]int, byExternal map[externalID]int, txs []reconcile.Transaction) *relater {
	r := &relater{effects: effects, byKey: byKey, byExternal: byExternal, charges: map[externalID]int{},
		want: map[externalID]bool{}, wantID: map[string]bool{}}
	for i := range txs {
		tx := &txs[i]
		if tx.Kind != reconcile.KindRefund && tx.Kind != reconcile.KindDispute {
			continue
		}
		for _, id := range [2]string{tx.ParentTxID, tx.PaymentIntent} {
			if id != "" {
				r.want[externalID{tx.Provider, id, reconcile.KindCharge}] = true
				r.wantID[id] = true
			}
		}
	}
	return r
}

// linked notes that tx links to effect e: a charge's ids that a refund or
// dispute names then lead to e, or to the first effect (in key order) that
// such a charge links to. Called as each transaction links, while it is
// at hand, rather than once every effect is linked.
func (r *relater) linked(e int, tx *reconcile.Transaction) {
	if len(r.wantID) == 0 || tx.Kind != reconcile.KindCharge {
		return
	}
	_, mod, _ := strings.Cut(tx.ID, "/")
	for _, id := range [4]string{tx.ID, tx.PaymentIntent, tx.ParentTxID, mod} { // providerIDs, without its slice
		if !r.wantID[id] {
			continue
		}
		x := externalID{tx.Provider, id, reconcile.KindCharge}
		if i, taken := r.charges[x]; r.want[x] && (!taken || e < i) {
			r.charges[x] = e
		}
	}
}

// chargeOf returns the effect whose charge tx modifies: the one its records
// name as the refunded payment's effect key, or by effect key, else the one
// whose charge (or the ledger's external id) is tx's parent or payment
// intent. A transaction in conflict belongs to nobody.
func (r *relater) chargeOf(tx *reconcile.Transaction) (int, bool) {
	if tx.Conflict != "" || (tx.Kind != reconcile.KindRefund && tx.Kind != reconcile.KindDispute) {
		return 0, false
	}
	if i, ok := r.chargeNamed(tx.ParentKey, tx.Provider); ok {
		return i, true
	}
	for _, k := range tx.EffectKeys {
		if i, ok := r.chargeNamed(k, tx.Provider); ok {
			return i, true
		}
	}
	for _, id := range []string{tx.ParentTxID, tx.PaymentIntent} {
		if id == "" {
			continue
		}
		x := externalID{tx.Provider, id, reconcile.KindCharge}
		if i, ok := r.charges[x]; ok {
			return i, true
		}
		if i, ok := r.byExternal[x]; ok {
			return i, true
		}
	}
	return 0, false
}

// chargeNamed finds the charge effect of provider that key names.
func (r *relater) chargeNamed(key, provider string) (int, bool) {
	i, ok := r.byKey[key]
	if !ok || key == "" || r.effects[i].Provider != provider {
		return 0, false
	}
	kind, _ := ExpectedKind(r.effects[i].Step)
	return i, kind == reconcile.KindCharge
}

// copied returns the transactions as values, nil when there are none.
func copied(txs []*reconcile.Transaction) []reconcile.Transaction {
	if len(txs) == 0 {
		return nil
	}
	slices.SortFunc(txs, compareTx) // refunds and disputes were found in two passes
	out := make([]reconcile.Transaction, len(txs))
	for i, tx := range txs {
		out[i] = *tx
	}
	return out
}

// refundedBy sums, by magnitude, the refunds of charge tx among refunds (a
// person's and the compensations', by the charge they name), and returns
// their ids; with byHand, only a person's (those that name no effect). Only
// refunds a settlement report shows count: anyone who can write a line into
// a webhook dump could invent one.
func refundedBy(tx *reconcile.Transaction, refunds map[externalID][]*reconcile.Transaction, byHand bool) (int64, []string) {
	var sum int64
	var ids []string
	parents := []string{tx.ID}
	if tx.ParentTxID != "" && tx.ParentTxID != tx.ID {
		parents = append(parents, tx.ParentTxID) // an Adyen booking's PSP reference
	}
	for _, parent := range parents {
		for _, r := range refunds[externalID{tx.Provider, parent, reconcile.KindCharge}] {
			if r.Failed || !r.Corroborated || r.Amount.Currency != tx.Amount.Currency || byHand && len(r.EffectKeys) > 0 {
				continue
			}
			sum, _ = reconcile.AddMinor(sum, abs(r.Amount.Minor)) // saturated, it still covers the charge
			ids = append(ids, r.ID)
		}
	}
	return sum, ids
}
