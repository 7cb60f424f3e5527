package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"reconcile"
	"reconcile/ledgerdb/ledgerdbtest"
)

// A refund a person made in the Stripe dashboard names our charge in its
// payment_metadata and nothing in its refund_metadata. It is not
// unexpected money: an ordinary night with such refunds pages nobody and
// exits 0, the refund shows with its charge's effect, and an extra charge
// a person already refunded in full is not refunded again: the provider
// shows it refunded, and the compensation is skipped as made.
func TestDashboardRefundsOfOurChargesAreNotUnexpected(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		piA, chA := h.charge("a", "shop:charge:a", 10000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, piA, dayAgo.Add(-72*time.Hour), chargeReq("shop:charge:a", 10000))
		partial := h.refund("", "", chA, 2500) // a goodwill refund by the support desk
		piB, _ := h.charge("b", "shop:charge:b", 7000)
		_, chB2 := h.charge("b-retry", "shop:charge:b", 7000)
		h.effect("shop:charge:b", "charge", reconcile.StatusConfirmed, piB, dayAgo.Add(-72*time.Hour), chargeReq("shop:charge:b", 7000))
		full := h.refund("", "", chB2, 7000) // the double charge, refunded by hand before the job saw it

		code, r, errOut := h.run([]string{h.report("itemized.csv", nil)})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		if code != 0 || r.Counts["unexpected"] != 0 {
			t.Errorf("exit %d with %d unexpected, want 0 and 0: %+v\n%s", code, r.Counts["unexpected"], r.Discrepancies, errOut)
		}
		h.money(2, 3) // the two refunds the person made, and no more
		if n := len(h.paged); n != 0 {
			t.Errorf("%d pages, want none: %v", n, h.paged)
		}
		class, reason, outcomes := h.finding(r, "shop:charge:b")
		if class != "duplicated" || !slices.Equal(outcomes, []string{"compensate:skipped"}) || !strings.Contains(reason, full) ||
			!slices.Contains(h.related(r, "shop:charge:b"), full) || made(r, "shop:charge:b") != full {
			t.Errorf("shop:charge:b: %s %v %q related %v, want duplicated, the compensation skipped as made by %s", class, outcomes, reason, h.related(r, "shop:charge:b"), full)
		}
		if code, out, errOut := reconcileCmd(t, "show", "shop:charge:a", "--ledger", l.URL); code != 0 || !strings.Contains(out, partial) {
			t.Errorf("show shop:charge:a exited %d without the dashboard refund %s:\n%s%s", code, partial, out, errOut)
		}
	})
}

// A refund line in the report for the extra charge, which the provider
// does not hold (a refund that failed after the report was cut, or a line
// added to the file), does not stand for the compensation: the job asks the
// provider, finds the charge not refunded, and refunds it once.
func TestAnExtraChargeIsRefundedOnTheProvidersWordNotTheReports(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, _ := h.charge("d", "shop:charge:d", 6000)
		_, ch := h.charge("d-retry", "shop:charge:d", 6000)
		h.effect("shop:charge:d", "charge", reconcile.StatusConfirmed, pi, dayAgo.Add(-72*time.Hour), chargeReq("shop:charge:d", 6000))
		report := h.report("itemized.csv", func(s string) string {
			for _, line := range strings.Split(s, "\n") {
				if f := strings.Split(line, ","); len(f) > 9 && f[2] == ch {
					f[0], f[4], f[5], f[7], f[9], f[10] = "txn_notheld", "re_notheld", "refund", "-60.00", "-60.00", "REFUND FOR CHARGE"
					return s + strings.Join(f, ",") + "\n"
				}
			}
			t.Fatalf("no line for %s in %s", ch, s)
			return ""
		})
		code, r, errOut := h.run([]string{report})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		h.money(1, 2)
		if rf := h.sb.Refunds(); len(rf) != 1 || rf[0].Charge != ch || rf[0].Amount != 6000 {
			t.Errorf("refunds at the provider %+v, want one of 60.00 on %s", rf, ch)
		}
		if _, reason, outcomes := h.finding(r, "shop:charge:d"); !slices.Equal(outcomes, []string{"compensate:applied"}) {
			t.Errorf("shop:charge:d: %v (%s), want the compensation applied", outcomes, reason)
		}
	})
}

// The application's row names the charge that was refunded in full (a
// person refunded it in the dashboard, or the job's own compensation did
// and the application then recorded that charge's intent): the charge to
// keep is the other one, and it is never refunded. When the report shows
// the refund, the job keeps the other charge and makes nothing; when only
// the provider knows of it (refunded after the report was cut), the refund
// the report would call for is not made: a person decides.
func TestTheChargeKeptIsNotOneRefundedInFull(t *testing.T) {
	for _, inReport := range []bool{true, false} {
		t.Run(fmt.Sprintf("refund in the report %v", inReport), func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				h := newHostile(t, l)
				h.charge("e", "shop:charge:e", 8000)
				retry, extra := h.charge("e-retry", "shop:charge:e", 8000)
				h.effect("shop:charge:e", "charge", reconcile.StatusConfirmed, retry, dayAgo.Add(-72*time.Hour), chargeReq("shop:charge:e", 8000))
				var report string
				if inReport {
					h.refund("", "", extra, 8000)
					report = h.report("itemized.csv", nil)
				} else {
					report = h.report("itemized.csv", nil)
					h.refund("", "", extra, 8000)
				}
				code, r, errOut := h.run([]string{report})
				if r == nil {
					t.Fatalf("run exited %d with no result: %s", code, errOut)
				}
				h.money(1, 2)
				_, reason, outcomes := h.finding(r, "shop:charge:e")
				for _, o := range outcomes {
					if o == "compensate:applied" {
						t.Errorf("shop:charge:e: %v (%s): the charge left was refunded too", outcomes, reason)
					}
				}
				if !inReport && (code != exitPerson || h.pagedAbout("shop:charge:e") != 1) {
					t.Errorf("exit %d, %d pages about shop:charge:e; want %d and one page: %v (%s)", code, h.pagedAbout("shop:charge:e"), exitPerson, outcomes, reason)
				}
			})
		})
	}
}

// The application refunded its order in full through a refund effect of its
// own, after the report was cut, and the order was charged twice: the
// refund is the order's, not the undoing of the duplicate, and the extra
// charge is still compensated (the customer owes nothing, as the two
// effects say).
func TestARefundEffectOfTheChargeKeptDoesNotStandForTheCompensation(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, ch := h.charge("f", "shop:charge:f", 5000)
		h.charge("f-retry", "shop:charge:f", 5000)
		h.effect("shop:charge:f", "charge", reconcile.StatusConfirmed, pi, dayAgo.Add(-72*time.Hour), chargeReq("shop:charge:f", 5000))
		report := h.report("itemized.csv", nil)
		re := h.refund("shop:refund:f", "shop:refund:f", ch, 5000)
		h.effect("shop:refund:f", "refund", reconcile.StatusConfirmed, re, dayAgo, fmt.Sprintf(`{"charge": %q, "amount": 5000, "currency": "eur", "metadata": {"effect_key": "shop:refund:f"}}`, ch))
		code, r, errOut := h.run([]string{report})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		h.money(2, 2)
		if _, reason, outcomes := h.finding(r, "shop:charge:f"); code != 0 || !slices.Equal(outcomes, []string{"compensate:applied"}) || len(h.paged) != 0 {
			t.Errorf("exit %d, shop:charge:f %v (%s), %d pages; want 0, the compensation applied, no page", code, outcomes, reason, len(h.paged))
		}
	})
}

// The customer charged twice took one charge back through their bank (a
// chargeback): refunding the other would give the money back twice, and
// refunding the one charged back cannot be done. Whichever charge was
// disputed, and whether or not the report shows the dispute, nothing is
// refunded: a person decides.
func TestAChargebackOfEitherChargeIsAPersons(t *testing.T) {
	for _, c := range []struct {
		name           string
		kept, inReport bool
	}{{"the charge kept, in the report", true, true}, {"the charge kept, after the report", true, false},
		{"the extra charge, in the report", false, true}, {"the extra charge, after the report", false, false}} {
		t.Run(c.name, func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				h := newHostile(t, l)
				pi, kept := h.charge("g", "shop:charge:g", 6500)
				_, extra := h.charge("g-retry", "shop:charge:g", 6500)
				h.effect("shop:charge:g", "charge", reconcile.StatusConfirmed, pi, dayAgo.Add(-72*time.Hour), chargeReq("shop:charge:g", 6500))
				disputed := extra
				if c.kept {
					disputed = kept
				}
				report := ""
				if !c.inReport {
					report = h.report("itemized.csv", nil)
				}
				if _, err := h.sb.Dispute(disputed); err != nil {
					t.Fatal(err)
				}
				if c.inReport {
					report = h.report("itemized.csv", nil)
				}
				code, r, errOut := h.run([]string{report})
				if r == nil {
					t.Fatalf("run exited %d with no result: %s", code, errOut)
				}
				h.money(0, 2)
				_, reason, outcomes := h.finding(r, "shop:charge:g")
				if code != exitPerson || h.pagedAbout("shop:charge:g") != 1 || slices.Contains(outcomes, "compensate:applied") {
					t.Errorf("exit %d, %d pages, shop:charge:g %v (%s); want %d, one page, nothing refunded", code, h.pagedAbout("shop:charge:g"), outcomes, reason, exitPerson)
				}
			})
		})
	}
}

// An extra charge a person refunded only in part is not refunded by the
// job (a second refund would fail or take the rest without a decision):
// a person decides.
func TestPartlyRefundedExtraChargeGoesToAPerson(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, _ := h.charge("c", "shop:charge:c", 9000)
		_, ch := h.charge("c-retry", "shop:charge:c", 9000)
		h.effect("shop:charge:c", "charge", reconcile.StatusConfirmed, pi, dayAgo.Add(-72*time.Hour), chargeReq("shop:charge:c", 9000))
		h.refund("", "", ch, 4000)

		code, r, errOut := h.run([]string{h.report("itemized.csv", nil)})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		h.money(1, 2)
		_, _, outcomes := h.finding(r, "shop:charge:c")
		if code != exitPerson || !slices.Equal(outcomes, []string{"escalate:escalated"}) || h.pagedAbout("shop:charge:c") != 1 {
			t.Errorf("exit %d, shop:charge:c actions %v, %d pages; want %d and one page", code, outcomes, h.pagedAbout("shop:charge:c"), exitPerson)
		}
	})
}

// related returns the ids a result's finding for key shows as related.
func (h *hostile) related(r *hostileResult, key string) []string {
	for _, d := range r.Discrepancies {
		if d.EffectKey == key {
			return d.Related
		}
	}
	return nil
}

// A refund the application recorded and never made, while a person
// refunded the same charge by hand in the dashboard (the support desk, once
// the application's call seemed to fail): redelivering it could refund the
// customer twice. A person decides.
func TestMissingRefundOfAChargeRefundedByHandGoesToAPerson(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, ch := h.charge("a", "shop:charge:a", 10000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo.Add(-72*time.Hour), chargeReq("shop:charge:a", 10000))
		h.effect("shop:refund:a", "refund", reconcile.StatusAttempted, "", dayAgo,
			fmt.Sprintf(`{"charge": %q, "amount": 3000, "currency": "eur", "metadata": {"effect_key": "shop:refund:a"}}`, ch))
		byHand := h.refund("", "", ch, 3000)

		code, r, errOut := h.run([]string{h.report("itemized.csv", nil)})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		h.money(1, 1)
		_, reason, outcomes := h.finding(r, "shop:refund:a")
		if code != exitPerson || !slices.Equal(outcomes, []string{"redeliver:escalated"}) || h.pagedAbout("shop:refund:a") != 1 {
			t.Errorf("exit %d, shop:refund:a %v (%s), %d pages; want %d, escalated, one page", code, outcomes, reason, h.pagedAbout("shop:refund:a"), exitPerson)
		}
		if !slices.Contains(h.related(r, "shop:charge:a"), byHand) && r.Counts["unexpected"] != 0 {
			t.Errorf("the refund made by hand is unexpected: %+v", r.Discrepancies)
		}
	})
}

// made returns what the compensation of a result's finding for key made.
func made(r *hostileResult, key string) string {
	for _, d := range r.Discrepancies {
		for _, x := range d.Actions {
			if d.EffectKey == key && x.Kind == "compensate" {
				return x.Made
			}
		}
	}
	return ""
}
