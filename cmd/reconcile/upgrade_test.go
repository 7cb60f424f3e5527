package main

import (
	"os"
	"testing"
	"time"

	"reconcile"
	"reconcile/ledgerdb/ledgerdbtest"
)

// A ledger whose refund rows the job confirmed with their charge's payment
// intent (before refunds took their own id) gets, from its migration, the
// id of the refund that names each row; a refund row the application wrote
// with its refund's id, and a charge row, keep theirs.
func TestAnUpgradeGivesRefundRowsTheirOwnIDs(t *testing.T) {
	migration := map[string]string{"sqlite": "../../ledgerdb/sqlite/migrations/012_refund_ids.sql",
		"postgres": "../../ledgerdb/postgres/migrations/026_refund_ids.sql"}
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, ch := h.charge("a", "shop:charge:a", 9000)
		byJob := h.refund("shop:refund:1", "shop:refund:1", ch, 1000)
		byApp := h.refund("shop:refund:2", "shop:refund:2", ch, 2000)
		at := time.Now().Add(-time.Hour)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, at, chargeReq("shop:charge:a", 9000))
		h.effect("shop:refund:1", "refund", reconcile.StatusConfirmed, pi, at, `{"charge": "`+ch+`", "amount": 1000, "currency": "eur"}`)
		h.effect("shop:refund:2", "refund", reconcile.StatusConfirmed, byApp, at, `{"charge": "`+ch+`", "amount": 2000, "currency": "eur"}`)
		if code, _, errOut := reconcileCmd(t, "ingest", "--ledger", l.URL, h.report("itemized.csv", nil)); code != 0 {
			t.Fatalf("ingest exited %d: %s", code, errOut)
		}
		statement, err := os.ReadFile(migration[l.Driver])
		if err != nil {
			t.Fatal(err)
		}
		appDB(t, l)(string(statement))
		for key, want := range map[string]string{"shop:charge:a": pi, "shop:refund:1": byJob, "shop:refund:2": byApp} {
			if _, id := h.status(key); id != want {
				t.Errorf("%s has external id %s after the upgrade, want %s", key, id, want)
			}
		}
	})
}
