package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"reconcile"
	"reconcile/job"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/stripeapi/sandbox"
)

// Nights of `run --apply` on the provider's own nightly reports, while an
// application goes on charging through the sandbox, and writing its rows
// with plain SQL, as applications do: most charges once, some retried under
// a fresh key at once, some a night or two later (a late duplicate of an
// effect an earlier night closed), some recorded and never sent (some of
// those paid by bank debit: the job's redelivery is processing until the
// bank settles or returns it the next night), some paid by bank debit that
// the bank returns the next night and the application charges again by
// card, some sent and never recorded as made, some recorded before the report was cut and
// sent after the run, some taken back by the customer's bank, some
// abandoned by the application while the charge went through; orders
// refunded in full and charged again; refunds made, and refunds recorded
// but never sent (the job's redelivery of some of them fails at the
// customer's bank the next night). Each night's report holds only that night's activity, the
// job's refunds and redeliveries of the night before among it; beside it,
// on some nights, the application's webhook log (every event so far) and
// last night's report again, on some ingested on their own first; now and
// then a report comes a night late, with the next. The provider fails once
// a night on one of the job's calls, and in a binary built with failpoints
// half of the runs are killed at one and run again. After two quiet nights
// (an ordinary charge each, no failure), the sandbox's own record says
// every charge effect is paid exactly once (none for an order the
// application refunded or abandoned, or whose debit was returned; its extra charges refunded once each,
// or taken back by the bank) and every refund effect made once; the ledger
// holds every effect closed (confirmed, duplicated and compensated, or
// resolved by a person); and each page was one a person had to decide (a
// duplicate refunded in part by hand, a compensation in doubt, a charge
// taken back, a debit returned, a refund failed), paged once and answered the next morning by the person on
// call. RECONCILE_NIGHTS_SEEDS sets how many worlds.
func TestNightsOfApplyPayEachEffectOnce(t *testing.T) {
	seeds := uint64(4)
	if n, err := strconv.ParseUint(os.Getenv("RECONCILE_NIGHTS_SEEDS"), 10, 64); err == nil {
		seeds = n
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				applyNights(t, l, seed)
			})
			t.Run("postgres-distributed", func(t *testing.T) {
				t.Parallel()
				applyNights(t, ledgerdbtest.New(t, "postgres"), seed, "--distribute", "--workers", "2", "--partition-size", "4")
			})
		})
	}
}

// trader is the application of these nights: what it charged and recorded.
type trader struct {
	*hostile
	clockMu   sync.Mutex
	now       time.Time           // the sandbox's clock
	set       time.Time           // when it was set, by the wall clock
	charges   map[string]int64    // charge effect key → amount
	refunds   map[string]string   // refund effect key → the charge it refunds
	late      map[int][]string    // night → charge effects retried under a fresh key that night
	inflight  map[int][]string    // night → charge effects sent that night, recorded the night before
	decide    map[int][]decision  // night → duplicates a person decides that morning
	decided   []string            // the effects a person resolved
	repoint   map[int][][2]string // night → effects whose row the application points at their retry that morning
	repointed map[string]bool
	returned  map[string]bool   // charge effects the application refunded in full
	subjects  map[string]string // escalation key → what it is about
	resolved  map[string]bool   // what the person on call resolved
	abandoned map[string]bool   // charge effects the application abandoned, charged all the same
	debits    map[string]bool   // charge effects paid by bank debit: the job redelivers them, and the bank settles or returns them
	banked    map[string]bool   // the debits the bank settled or returned
	unsent    map[string]bool   // refund effects recorded and never sent: the job redelivers them
	rebill    map[int][]string  // night → charge effects paid by bank debit that the bank returns that night, and the application charges by card
	sepa      map[string]bool   // the charge effects the application pays by bank debit
	bounced   map[string]bool   // of those, the ones the customer's bank could not take
	cur       map[string]string // charge effect key → its currency
	exec      func(query string, args ...any)
	stamps    int
	n         int // effects made
	answered  int // pages the person on call answered
	runs      int // runs started
}

func (s *trader) clock() time.Time {
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	return s.now
}

// at moves the sandbox's clock.
func (s *trader) at(t time.Time) {
	s.clockMu.Lock()
	s.now, s.set = t, time.Now()
	s.clockMu.Unlock()
}

func applyNights(t *testing.T, l *ledgerdbtest.Ledger, seed uint64, args ...string) {
	s := &trader{hostile: newHostile(t, l), charges: map[string]int64{}, refunds: map[string]string{}, late: map[int][]string{},
		inflight: map[int][]string{}, decide: map[int][]decision{}, cur: map[string]string{},
		repoint: map[int][][2]string{}, repointed: map[string]bool{}, returned: map[string]bool{}, subjects: map[string]string{}, resolved: map[string]bool{}, abandoned: map[string]bool{},
		debits: map[string]bool{}, banked: map[string]bool{}, unsent: map[string]bool{}, bounced: map[string]bool{},
		rebill: map[int][]string{}, sepa: map[string]bool{}}
	s.sb = sandbox.New(sandbox.Options{Now: s.clock})
	rng := rand.New(rand.NewPCG(seed, 15))
	const nights = 8 // mischief on the first four, late retries until the sixth, then two quiet nights
	start := time.Now().Add(-time.Duration(nights+1) * 24 * time.Hour).Truncate(time.Hour).UTC()
	var kept []paid // charges of effects confirmed with them: refunds name them
	var cut time.Time
	var last string          // last night's report
	var undelivered []string // reports that did not come
	for night := range nights {
		day := start.Add(time.Duration(night) * 24 * time.Hour)
		tick := func() time.Time { s.at(s.clock().Add(time.Minute)); return s.clock() }
		s.at(day)
		for _, key := range s.late[night] {
			s.pay("late-"+key+fmt.Sprint(night), key)
		}
		for _, key := range s.inflight[night] { // the call, then the row, as the application makes them
			pi, _ := s.pay(key, key)
			s.exec(`UPDATE effect SET status = 'confirmed', external_id = $1, confirmed_at = $2 WHERE key = $3 AND status = 'attempted'`,
				pi, s.stamp(s.clock()), key)
		}
		for _, p := range s.sb.Payments() { // the banks settle or return the debits the job made
			if key := p.Metadata["effect_key"]; s.debits[key] && p.Status == "processing" && !s.banked[key] {
				s.banked[key] = true
				if rng.IntN(2) == 0 {
					err := s.sb.Return(p.ID)
					s.returned[key] = true // the customer paid nothing: a person asks them again
					if err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := s.sb.Settle(p.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, key := range s.rebill[night] { // the debit comes back; the application charges the card
			for _, p := range s.sb.Payments() {
				if p.Metadata["effect_key"] == key && p.Status == "processing" {
					if err := s.sb.Return(p.ID); err != nil {
						t.Fatal(err)
					}
				}
			}
			s.pay("card-"+key, key)
		}
		for _, rf := range s.sb.Refunds() { // now and then a customer's bank cannot take the job's refund
			if key := rf.Metadata["effect_key"]; s.unsent[key] && !s.bounced[key] && rf.Status == "succeeded" && rng.IntN(3) == 0 {
				s.bounced[key] = true
				if err := s.sb.FailRefund(rf.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, r := range s.repoint[night] {
			s.exec(`UPDATE effect SET external_id = $1 WHERE key = $2`, r[1], r[0])
			s.repointed[r[0]] = true
		}
		s.onCall(t)
		for _, d := range s.decide[night] { // paged: refunds the rest by hand, and says so
			if !slices.Contains(s.triggers(), d.key+":escalate:duplicated") {
				s.decide[night+1] = append(s.decide[night+1], d) // not yet
				continue
			}
			s.refund("", "", d.extra, d.rest)
			s.runs++
			if code, _, errOut := s.command("resolve", d.key, "--as", "compensated", "--note", "refunded the rest of "+d.extra+" by hand",
				"--ledger", s.l.URL, "--pager-webhook", s.pages); code != 0 {
				t.Fatalf("resolve %s exited %d: %s", d.key, code, errOut)
			}
			s.decided = append(s.decided, d.key)
		}
		if night < 4 {
			for range 12 {
				s.n++
				key := fmt.Sprintf("shop_%d:charge:%d", night, s.n)
				cur := currencies[rng.IntN(len(currencies))]
				amount := int64(500+rng.IntN(50)*100) * cur.scale
				s.charges[key], s.cur[key] = amount, cur.code
				created := tick()
				switch r := rng.IntN(14); {
				case r == 0: // recorded, then the application crashed before the call
					s.effect(key, "charge", reconcile.StatusAttempted, "", created, s.req(key))
				case r == 13: // paid by bank debit, which the bank returns the next night: the application charges the card
					s.sepa[key] = true
					pi, _ := s.pay(key, key)
					s.effect(key, "charge", reconcile.StatusConfirmed, pi, created, s.req(key))
					s.rebill[night+1] = append(s.rebill[night+1], key)
				case r == 12: // the same, paid by bank debit: the job's redelivery is processing for a night
					s.debits[key] = true
					s.effect(key, "charge", reconcile.StatusAttempted, "", created, s.req(key))
				case r == 1: // made, then the application crashed before it wrote the answer
					s.effect(key, "charge", reconcile.StatusAttempted, "", created, s.req(key))
					s.pay(key, key)
				case r == 10: // the call timed out, the order was abandoned, and the charge went through
					s.effect(key, "charge", reconcile.StatusAttempted, "", created, s.req(key))
					s.pay(key, key)
					s.exec(`UPDATE effect SET status = 'abandoned' WHERE key = $1`, key)
					s.returned[key], s.abandoned[key] = true, true // the person paged refunds it
				default:
					pi, ch := s.pay(key, key)
					s.effect(key, "charge", reconcile.StatusConfirmed, pi, created, s.req(key))
					if r < 7 { // the application refunds the charge its row names
						kept = append(kept, paid{ch, cur})
					}
					switch r {
					case 2: // retried under a fresh key at once
						s.pay("retry-"+key, key)
					case 3: // retried the next night
						s.late[night+1] = append(s.late[night+1], key)
					case 4: // retried the next night and the one after
						s.late[night+1] = append(s.late[night+1], key)
						s.late[night+2] = append(s.late[night+2], key)
					case 5: // retried at once, and the retry refunded in full by a person in the dashboard
						_, extra := s.pay("retry-"+key, key)
						s.refund("", "", extra, amount)
					case 6: // retried at once, the retry refunded in part by a person, who decides the next day
						_, extra := s.pay("retry-"+key, key)
						s.refund("", "", extra, amount/2)
						s.decide[night+1] = append(s.decide[night+1], decision{key, extra, amount - amount/2})
					case 7: // retried at once, and the next morning the application records the retry's intent
						retry, _ := s.pay("retry-"+key, key)
						s.repoint[night+1] = append(s.repoint[night+1], [2]string{key, retry})
					case 8: // the order refunded in full by a refund effect, and a retry the next night
						rk := key + ":refund"
						s.refunds[rk] = ch
						s.returned[key] = true
						req := fmt.Sprintf(`{"charge": %q, "amount": %d, "currency": %q, "metadata": {"effect_key": %q}}`, ch, amount, cur.code, rk)
						s.effect(rk, "refund", reconcile.StatusConfirmed, s.refund(rk, rk, ch, amount), tick(), req)
						s.late[night+1] = append(s.late[night+1], key)
					case 9: // retried at once, and the customer's bank takes the first charge back
						s.pay("retry-"+key, key)
						if _, err := s.sb.Dispute(ch); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			for range 2 { // refunds of earlier charges, one made and one only recorded
				if len(kept) < 4 {
					break
				}
				ch := kept[rng.IntN(len(kept)-2)]
				part := 100 * ch.cur.scale
				s.n++
				key := fmt.Sprintf("shop_%d:refund:%d", night, s.n)
				req := fmt.Sprintf(`{"charge": %q, "amount": %d, "currency": %q, "metadata": {"effect_key": %q}}`, ch.charge, part, ch.cur.code, key)
				created := tick()
				s.refunds[key] = ch.charge
				if rng.IntN(2) == 0 {
					s.effect(key, "refund", reconcile.StatusAttempted, "", created, req)
					s.unsent[key] = true
					continue
				}
				s.effect(key, "refund", reconcile.StatusConfirmed, s.refund(key, key, ch.charge, part), created, req)
			}
			// A charge recorded before the report's last line and sent after
			// the run: the job may redeliver it first, under its key.
			s.n++
			key := fmt.Sprintf("shop_%d:charge:%d", night, s.n)
			s.charges[key] = 900
			s.cur[key] = "eur"
			s.effect(key, "charge", reconcile.StatusAttempted, "", tick(), s.req(key))
			s.inflight[night+1] = append(s.inflight[night+1], key)
		}
		// A last charge, so that the report covers charges, and every effect
		// of the night: a shop charges every day.
		s.n++
		key := fmt.Sprintf("shop_%d:charge:%d", night, s.n)
		s.charges[key] = 700
		created := tick()
		s.cur[key] = "eur"
		pi, _ := s.pay(key, key)
		s.effect(key, "charge", reconcile.StatusConfirmed, pi, created, s.req(key))
		report := s.write(fmt.Sprintf("night%d.itemized.csv", night), s.since(cut))
		inputs := append(undelivered, report)
		undelivered = nil
		if night < nights-3 && rng.IntN(6) == 0 { // the report comes a night late, with the next one
			undelivered = inputs
			cut = s.clock().Add(time.Hour)
			s.at(cut)
			t.Logf("night %d: no report", night+1)
			continue
		}
		if rng.IntN(2) == 0 { // the application's webhook log, every event so far
			var b strings.Builder
			if err := s.sb.ExportEvents(&b); err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, s.write(fmt.Sprintf("events%d.jsonl", night), b.String()))
		}
		if last != "" && rng.IntN(3) == 0 { // last night's report, given again
			inputs = append(inputs, last)
		}
		last = report
		if rng.IntN(3) == 0 { // ingested on their own before the run
			s.runs++
			if code, _, errOut := s.command(append([]string{"ingest", "--ledger", s.l.URL}, inputs...)...); code != 0 {
				t.Fatalf("night %d: ingest exited %d: %s", night+1, code, errOut)
			}
		}
		cut = s.clock().Add(time.Hour) // the run, and its provider calls, an hour after the night's last line
		s.at(cut)
		if night < nights-2 { // the provider fails once on the night's first refund or payment
			op := []string{sandbox.OpRefund, sandbox.OpCreatePaymentIntent}[rng.IntN(2)]
			kind := []string{sandbox.FaultError500, sandbox.FaultDropAfter, sandbox.FaultUnavailable, sandbox.FaultRateLimit}[rng.IntN(4)]
			s.sb.Inject(sandbox.Fault{Op: op, Kind: kind, Times: 1})
			t.Logf("night %d: %s on %s", night+1, kind, op)
		}
		crashAt := ""
		if job.Failpoints && night < nights-2 && rng.IntN(2) == 0 {
			points := crashPoints
			if slices.Contains(args, "--distribute") {
				points = append(points, "worker:matched")
			}
			crashAt = points[rng.IntN(len(points))]
		}
		code, r, errOut := s.runLater(inputs, crashAt, args)
		for r == nil && code == -1 && crashAt != "" { // killed: the next attempt starts past its leases
			t.Logf("night %d: killed at %s", night+1, crashAt)
			crashAt = ""
			code, r, errOut = s.runLater(inputs, "", args)
		}
		s.sb.ClearFaults()                               // one the job did not meet is not the application's
		if code != 0 && code != exitPerson || r == nil { // a person looks at a retry refunded in part
			t.Fatalf("night %d exited %d: %s", night+1, code, errOut)
		}
		for _, d := range r.Discrepancies {
			t.Logf("night %d: %s %s %v (%s)", night+1, d.Class, d.EffectKey, d.Actions, d.Reason)
		}
		if night == nights-1 { // the last actions' lines come back, nothing is left to do
			for _, d := range r.Discrepancies {
				if (s.debits[d.EffectKey] && s.returned[d.EffectKey] || s.bounced[d.EffectKey]) && d.Class == string(reconcile.ClassMissing) {
					continue // the job's debit returned, or its refund failed, this morning: the person on call decides below
				}
				for _, x := range d.Actions {
					if d.Class != string(reconcile.ClassDuplicated) || x.Kind != "compensate" || x.Outcome != "skipped" {
						t.Errorf("night %d, the last, still finds %s %s: %s %s", night+1, d.Class, d.EffectKey, x.Kind, x.Outcome)
					}
				}
				if d.Class != string(reconcile.ClassDuplicated) {
					t.Errorf("night %d, the last, still finds %s %s (%s)", night+1, d.Class, d.EffectKey, d.Reason)
				}
			}
		}
	}
	s.onCall(t) // the morning after the last night
	s.check(t)
}

// currencies are those of the charges: scale makes an amount of each about
// the same money, in Stripe's minor units (none for the yen, three decimals
// for the Bahraini dinar, whose last one Stripe wants zero).
var currencies = []coin{{"eur", 1}, {"usd", 1}, {"jpy", 1}, {"bhd", 10}}

type coin struct {
	code  string
	scale int64
}

// paid is a charge, in its currency.
type paid struct {
	charge string
	cur    coin
}

// pay charges an effect's amount in its currency through the sandbox, as
// the application does, under the idempotency key idem.
func (s *trader) pay(idem, key string) (pi, ch string) {
	method := "pm_card_visa"
	if s.sepa[key] && !strings.HasPrefix(idem, "card-") {
		method = "pm_sepa_debit"
	}
	out := s.post("/v1/payment_intents", idem, url.Values{"amount": {fmt.Sprint(s.charges[key])}, "currency": {s.cur[key]}, "confirm": {"true"},
		"payment_method": {method}, "customer": {"cus_" + key}, "metadata[effect_key]": {key}})
	return out["id"].(string), out["latest_charge"].(string)
}

// req is the request the application records for a charge effect.
func (s *trader) req(key string) string {
	method := "pm_card_visa"
	if s.debits[key] || s.sepa[key] {
		method = "pm_sepa_debit"
	}
	return fmt.Sprintf(`{"amount": %d, "currency": %q, "customer": "cus_%s", "payment_method": %q, "metadata": {"effect_key": %q}}`,
		s.charges[key], s.cur[key], key, method, key)
}

// effect writes an application's row as an application does: plain SQL,
// its timestamps in one of the forms drivers write (on SQLite, text).
func (s *trader) effect(key, step string, status reconcile.Status, extID string, created time.Time, request string) {
	s.t.Helper()
	if s.exec == nil {
		s.exec = appDB(s.t, s.l)
	}
	var ext, confirmed any
	if extID != "" {
		ext, confirmed = extID, s.stamp(created)
	}
	s.exec(`INSERT INTO effect (key, run_id, step, provider, status, external_id, request, created_at, confirmed_at)
		VALUES ($1, 'shop', $2, 'stripe', $3, $4, $5, $6, $7)`, key, step, string(status), ext, request, s.stamp(created), confirmed)
}

// stamp writes t as the application's driver might, in turn.
func (s *trader) stamp(t time.Time) string {
	s.stamps++
	east := time.FixedZone("", 90*60)
	forms := []string{t.UTC().Format(time.DateTime), t.UTC().Format("2006-01-02T15:04:05.000Z"), t.In(east).Format("2006-01-02 15:04:05.999999-07:00")}
	return forms[s.stamps%len(forms)]
}

// decision is a duplicate whose extra charge a person refunded in part:
// paged, the person refunds the rest and resolves it.
type decision struct {
	key, extra string
	rest       int64
}

// crashPoints are where a night's run may be killed.
var crashPoints = []string{"compensate:claimed", "compensate:called", "redeliver:claimed", "redeliver:called", "run:acted"}

// runLater runs `run --apply` over inputs, killed at crashAt when it is
// set, with args, and with the runs' clock a little later than the last run's: past a
// killed run's leases (of a second), as a night is past the one before.
func (s *trader) runLater(inputs []string, crashAt string, args []string) (int, *hostileResult, string) {
	s.runs++
	s.env = []string{"RECONCILE_TEST_CRASH_AT=" + crashAt, s.later()}
	return s.run(inputs, append([]string{"--lag", "0", "--lease", "1s", "--provider-timeout", "500ms"}, args...)...)
}

// later is the clock offset of the next command: the sandbox's clock as it
// was set, plus the time since (the commands before took it), and two
// seconds more for each command, past a killed run's leases however long
// it ran.
func (s *trader) later() string {
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	return "RECONCILE_TEST_CLOCK_OFFSET=" + (s.now.Sub(s.set) + time.Duration(s.runs)*2*time.Second).String()
}

// command runs another reconcile command in a child process, on the runs'
// clock.
func (s *trader) command(args ...string) (int, string, string) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1", s.later())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		s.t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// since is the sandbox's itemized report of what happened at or after from.
func (s *trader) since(from time.Time) string {
	var b strings.Builder
	if err := s.sb.ExportItemizedSince(&b, from); err != nil {
		s.t.Fatal(err)
	}
	return b.String()
}

// check reads the sandbox's and the ledger's own records.
func (s *trader) check(t *testing.T) {
	t.Helper()
	paid := map[string][]sandbox.Payment{}
	for _, p := range s.sb.Payments() {
		if p.Status == "succeeded" {
			paid[p.Metadata["effect_key"]] = append(paid[p.Metadata["effect_key"]], p)
		}
	}
	undone := map[string]int{}     // charge → compensations that refunded it
	refunded := map[string]int64{} // charge → refunded by anyone
	made := map[string]int{}       // refund effect key → refunds made under it
	for _, rf := range s.sb.Refunds() {
		if rf.Metadata["compensates"] != "" {
			undone[rf.Charge]++
		}
		refunded[rf.Charge] += rf.Amount
		made[rf.Metadata["effect_key"]]++
	}
	var keys []string
	for key := range s.charges {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		_, kept := s.status(key)
		left := 0
		for _, p := range paid[key] {
			switch {
			case undone[p.ChargeID] > 1:
				t.Errorf("%s: charge %s refunded %d times by compensations", key, p.ChargeID, undone[p.ChargeID])
			case undone[p.ChargeID] == 1 && p.ID == kept && !s.repointed[key]: // pointed at after it was refunded
				t.Errorf("%s: the charge the ledger keeps (%s) was refunded", key, p.ID)
			case refunded[p.ChargeID] < p.Amount && !p.Disputed:
				left++
			}
		}
		if want := map[bool]int{false: 1, true: 0}[s.returned[key]]; left != want {
			t.Errorf("%s: %d charges at the provider not undone, of %d; want %d", key, left, len(paid[key]), want)
		}
	}
	for key := range s.refunds {
		if made[key] != 1 {
			t.Errorf("%s: %d refunds made under it, want 1", key, made[key])
		}
	}
	all := append(keys, slices.Collect(maps.Keys(s.refunds))...)
	for _, rf := range s.sb.Refunds() {
		if rf.Metadata["compensates"] != "" {
			all = append(all, rf.Metadata["effect_key"])
		}
	}
	states, err := s.store().EffectStateGetMany(t.Context(), all)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range all {
		want := reconcile.ClassConfirmed
		if len(paid[key]) > 1 {
			want = reconcile.ClassDuplicated
		}
		st, ok := states[key]
		if (slices.Contains(s.decided, key) || s.resolved[key]) && st.Class == reconcile.ClassResolved {
			continue // the rest refunded by hand may have reached no report yet
		}
		if !ok || st.Class != want || !st.Final {
			t.Errorf("%s at the end: %s final %v (%v), want %s and final", key, st.Class, st.Final, ok, want)
		}
	}
	paged := map[string]int{}
	for _, key := range s.triggers() {
		paged[key]++
	}
	for _, key := range s.decided {
		if paged[key+":escalate:duplicated"] != 1 {
			t.Errorf("%s: paged %d times, want once", key, paged[key+":escalate:duplicated"])
		}
		delete(paged, key+":escalate:duplicated")
	}
	for key, n := range paged {
		if effect, ok := strings.CutSuffix(key, ":escalate:mismatched"); ok && s.abandoned[effect] && n == 1 {
			continue
		}
		if effect, _, ok := strings.Cut(key, ":escalate:"); ok && (s.debits[effect] && s.returned[effect] || s.bounced[effect]) && n == 1 {
			continue
		}
		if n != 1 || !strings.HasSuffix(key, ":escalate:escalated") || !strings.Contains(key, ":compensate:") {
			t.Errorf("paged %d times about %s: want only a decision on each duplicate refunded in part, and on each compensation in doubt", n, key)
		}
	}
}

// triggers are the escalations paged, in order.
func (s *trader) triggers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for _, p := range s.paged {
		var page struct {
			Event      string `json:"event"`
			Escalation struct {
				Key, Subject string
			} `json:"escalation"`
		}
		if err := json.Unmarshal([]byte(p), &page); err != nil {
			s.t.Fatalf("page %s: %v", p, err)
		}
		if page.Event == "trigger" {
			keys = append(keys, page.Escalation.Key)
			s.subjects[page.Escalation.Key] = page.Escalation.Subject
		}
	}
	return keys
}

// onCall is the person the night's pages reach, the next morning: about a
// compensation in doubt (the provider failed on the job's refund, which
// the job does not send again, or did not show what the job needed), they
// refund the extra charge by hand when the provider shows it, and another
// charge of the effect, standing (not refunded, not taken back by the
// bank); and resolve what the page is about.
func (s *trader) onCall(t *testing.T) {
	pages := s.triggers()
	for _, key := range pages[s.answered:] {
		if effect, ok := strings.CutSuffix(key, ":escalate:mismatched"); ok && s.abandoned[effect] {
			for _, p := range s.sb.Payments() { // the order was abandoned: its money goes back
				if p.Metadata["effect_key"] == effect && p.Status == "succeeded" && p.Refunded < p.Amount && !p.Disputed {
					s.refund("", "", p.ChargeID, p.Amount-p.Refunded)
				}
			}
			s.resolve(t, effect, "compensated", "refunded the abandoned order by hand")
			continue
		}
		if effect, _, ok := strings.Cut(key, ":escalate:"); ok && s.bounced[effect] {
			s.resolve(t, effect, "compensated", "the refund failed; the customer was paid back by bank transfer")
			continue
		}
		if effect, _, ok := strings.Cut(key, ":escalate:"); ok && s.debits[effect] { // found returned, or missing again
			s.resolve(t, effect, "abandoned", "the customer's bank returned the debit; the customer is asked to pay again")
			continue
		}
		comp, ok := strings.CutSuffix(key, ":escalate:escalated")
		if !ok || !strings.Contains(comp, ":compensate:") {
			continue
		}
		parent, ch, _ := strings.Cut(comp, ":compensate:")
		undone := map[string]int64{} // by a person or a compensation; a refund effect's is the order's
		for _, rf := range s.sb.Refunds() {
			if k := rf.Metadata["effect_key"]; k == "" || strings.Contains(k, ":compensate:") {
				undone[rf.Charge] += rf.Amount
			}
		}
		var target *sandbox.Payment
		others := 0
		for _, p := range s.sb.Payments() {
			switch {
			case p.Metadata["effect_key"] != parent || p.Status != "succeeded" || undone[p.ChargeID] >= p.Amount || p.Disputed:
			case p.ChargeID == ch:
				target = &p
			default:
				others++
			}
		}
		if target != nil && others > 0 && target.Refunded < target.Amount {
			s.refund("", "", ch, target.Amount-target.Refunded)
		}
		s.resolve(t, s.subjects[key], "compensated", "refunded "+ch+" by hand")
	}
	s.answered = len(pages)
}

// resolve is `reconcile resolve KEY --as AS` by the person on call.
func (s *trader) resolve(t *testing.T, key, as, note string) {
	s.resolved[key] = true
	s.runs++
	if code, _, errOut := s.command("resolve", key, "--as", as, "--note", note, "--ledger", s.l.URL, "--pager-webhook", s.pages); code != 0 {
		t.Fatalf("resolve %s exited %d: %s", key, code, errOut)
	}
}
