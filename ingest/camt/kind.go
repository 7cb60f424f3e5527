package camt

import (
	"strings"

	"reconcile"
)

// kindOf maps an entry's bank transaction code (ISO 20022 external code set:
// domain, family, sub-family) and its direction to a Kind. The statement is
// our own bank account's, so:
//
//   - sub-family CHRG, FEES or COMM in any domain (ACMT/MDOP/CHRG,
//     PMNT/RCDT/CHRG, ...): fee, the bank's own charges;
//   - sub-family INTR, ADJT, CAJT or DAJT: adjustment (interest and
//     corrections);
//   - PMNT with a received family (RCDT, RRCT real-time, RCHQ cheques): charge,
//     money a payer sent us; as a debit it can only be a return or correction,
//     so adjustment;
//   - PMNT with an issued family (ICDT, IRCT, ICHQ): payout, a transfer we
//     issued; as a credit it is a returned transfer, so adjustment;
//   - PMNT/IDDT, direct debits we collected: charge as a credit; as a debit it
//     is a returned or refunded collection (a SEPA R-transaction), which
//     behaves like a chargeback, so dispute: calling it a payout would say we
//     sent money we never sent;
//   - PMNT with any other family (RDDT direct debits taken from us, CCRD and
//     MCRD cards, counter and miscellaneous operations): by direction, credit
//     → charge, debit → payout;
//   - ACMT (account management) otherwise: adjustment;
//   - CAMT (cash management: sweeping, pooling between our accounts):
//     transfer;
//   - no domain (only a proprietary code, or no code) and XTND: by direction;
//   - any other domain (SECU securities, FORX foreign exchange, LDAS loans,
//     TRAD trade services, ...): other, since they are not payments.
//
// A reversal (RvslInd) is an adjustment whatever its code; build sets that.
func kindOf(c bankCode, credit bool) reconcile.Kind {
	up := func(s string) string { return strings.ToUpper(strings.TrimSpace(s)) }
	domain, family, sub := up(c.Domain), up(c.Family), up(c.SubFamily)
	byDirection := reconcile.KindPayout
	if credit {
		byDirection = reconcile.KindCharge
	}
	switch sub {
	case "CHRG", "FEES", "COMM":
		return reconcile.KindFee
	case "INTR", "ADJT", "CAJT", "DAJT":
		return reconcile.KindAdjustment
	}
	switch domain {
	case "PMNT":
		switch family {
		case "RCDT", "RRCT", "RCHQ":
			if credit {
				return reconcile.KindCharge
			}
			return reconcile.KindAdjustment
		case "ICDT", "IRCT", "ICHQ":
			if !credit {
				return reconcile.KindPayout
			}
			return reconcile.KindAdjustment
		case "IDDT":
			if !credit {
				return reconcile.KindDispute
			}
		}
		return byDirection
	case "ACMT":
		return reconcile.KindAdjustment
	case "CAMT":
		return reconcile.KindTransfer
	case "", "XTND":
		return byDirection
	}
	return reconcile.KindOther
}
