package matcher

import "reconcile"

// IsFinal says whether a finding closes its effect, so that later runs do
// not read it again unless new evidence names it: a confirmed effect, and a
// duplicated one whose every action is a compensation that was made (the
// compensations are then reconciled as effects of their own). A duplicate
// handed to a person (a refund made twice, which the job does not undo)
// stays open, and is reported every night, until a person resolves it.
func IsFinal(d *reconcile.Discrepancy) bool {
	switch d.Class {
	case reconcile.ClassConfirmed:
		return true
	case reconcile.ClassDuplicated:
		for _, x := range d.Actions {
			if x.Kind != reconcile.ActionCompensate || x.Outcome != reconcile.OutcomeApplied && x.Outcome != reconcile.OutcomeSkipped {
				return false
			}
		}
		return len(d.Actions) > 0
	}
	return false
}

// ConfirmingID is the external id an attempted effect is confirmed with when
// evidence confirms it: the payment intent for a charge made through one
// (what applications record for Stripe), else the transaction's own id. A
// refund's is its own: the intent it carries is its charge's, which every
// refund of that charge shares.
func ConfirmingID(tx *reconcile.Transaction) string {
	if tx.PaymentIntent != "" && tx.Kind == reconcile.KindCharge {
		return tx.PaymentIntent
	}
	return tx.ID
}
