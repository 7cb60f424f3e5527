package compensate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"reconcile"
	"reconcile/clock"
	"reconcile/compensate"
	"reconcile/escalate"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/stripeapi"
	"reconcile/stripeapi/sandbox"
)

// world is a ledger, the project's Stripe sandbox over HTTP, and a client
// for it, as a run's actions see them.
type world struct {
	t      *testing.T
	ctx    context.Context
	l      *ledgerdbtest.Ledger
	store  ledgerdb.Store
	sb     *sandbox.Server
	url    string
	client *stripeapi.Client
	pages  *pageLog
	// now is the clock of the runs' ledger handles and appliers: a fake
	// one for a test that moves a lease past its deadline; nil is the
	// system's.
	now func() time.Time
}

// pageLog collects what the log pager writes; it is safe for concurrent runs.
type pageLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (p *pageLog) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.Write(b)
}

// triggers counts the pages triggered.
func (p *pageLog) triggers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Count(p.buf.String(), `"event":"trigger"`)
}

func newWorld(t *testing.T, l *ledgerdbtest.Ledger, opt ...sandbox.Options) *world {
	sb := sandbox.New(append(opt, sandbox.Options{})[0])
	srv := httptest.NewServer(sb)
	t.Cleanup(srv.Close)
	w := &world{t: t, ctx: context.Background(), l: l, store: l.Open(t, nil), sb: sb, url: srv.URL, pages: &pageLog{}}
	w.client = w.newClient(10 * time.Second)
	return w
}

func (w *world) newClient(timeout time.Duration) *stripeapi.Client {
	return stripeapi.New(stripeapi.Config{BaseURL: w.url, APIKey: "sk_test_sandbox", Timeout: timeout})
}

// applier is one run's actions, on its own ledger handle, both on w.now.
func (w *world) applier(run string, opt compensate.Options) *compensate.Applier {
	store := w.l.Open(w.t, w.now)
	opt.RunID, opt.Owner, opt.Apply = run, "owner-"+run, true
	if opt.Lease == 0 {
		opt.Lease = time.Minute
	}
	if opt.Now == nil {
		opt.Now = w.now
	}
	return &compensate.Applier{Store: store, Providers: map[string]compensate.Provider{"stripe": w.client}, Options: opt,
		Escalator: &escalate.Raiser{Store: store, Pager: &escalate.Log{W: w.pages}, Owner: opt.Owner}}
}

func (w *world) act(ap *compensate.Applier, ds []reconcile.Discrepancy) *compensate.Result {
	w.t.Helper()
	res, err := ap.Act(w.ctx, ds)
	if err != nil {
		w.t.Fatalf("Act: %v", err)
	}
	return res
}

func chargeRequest(key string, amount int64) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"amount": %d, "currency": "eur", "customer": "cus_1", "payment_method": "pm_card_visa",
		"metadata": {"effect_key": %q, "order": "o-1"}}`, amount, key))
}

// effect writes an application's charge effect, created at created.
func (w *world) effect(key string, amount int64, created time.Time, status reconcile.Status, extID string) {
	w.t.Helper()
	e := reconcile.Effect{Key: key, RunID: "app", Step: "charge", Provider: "stripe", Status: status, ExternalID: extID,
		Request: chargeRequest(key, amount), CreatedAt: created}
	if status == reconcile.StatusConfirmed {
		e.ConfirmedAt = created
	}
	if err := w.store.EffectLoad(w.ctx, []reconcile.Effect{e}); err != nil {
		w.t.Fatal(err)
	}
}

// duplicate makes a charge twice at the sandbox, under two keys (the
// application's retry with a fresh key: the bug reconciliation catches),
// records the effect, and returns its finding with the planned refund.
func (w *world) duplicate(key string, amount int64) reconcile.Discrepancy {
	w.t.Helper()
	var txs []reconcile.Transaction
	for i, m := range []*reconcile.Made{w.charge(key, key, amount), w.charge(key+"-retry", key, amount)} {
		txs = append(txs, reconcile.Transaction{Provider: "stripe", ID: m.ChargeID, PaymentIntent: m.ID, Kind: reconcile.KindCharge,
			Amount: reconcile.Money{Minor: amount, Currency: "EUR"}, Time: time.Unix(int64(i), 0)})
	}
	w.effect(key, amount, time.Now().Add(-time.Hour), reconcile.StatusConfirmed, txs[0].PaymentIntent)
	comp := reconcile.CompensationKey(key, txs[1].ID)
	return reconcile.Discrepancy{Class: reconcile.ClassDuplicated, EffectKey: key, Provider: "stripe", Currency: "EUR", ExpectedMinor: amount,
		ObservedMinor: 2 * amount, Transactions: txs, Actions: []reconcile.Action{{Kind: reconcile.ActionCompensate, Key: comp, Target: txs[1].ID,
			Outcome: reconcile.OutcomePlanned, Amount: reconcile.Money{Minor: amount, Currency: "EUR"}}}}
}

// charge makes a payment at the sandbox as an application does: under
// idempotency key idem, with metadata[effect_key] = effectKey (a retry under
// a fresh key keeps the effect's metadata).
func (w *world) charge(idem, effectKey string, amount int64) *reconcile.Made {
	w.t.Helper()
	form := url.Values{"amount": {fmt.Sprint(amount)}, "currency": {"eur"}, "confirm": {"true"}, "payment_method": {"pm_card_visa"},
		"customer": {"cus_1"}, "metadata[effect_key]": {effectKey}}
	req, _ := http.NewRequest(http.MethodPost, w.url+"/v1/payment_intents", strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer sk_test_app")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", idem)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var pi struct {
		ID           string `json:"id"`
		LatestCharge string `json:"latest_charge"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&pi); err != nil || resp.StatusCode != http.StatusOK || pi.LatestCharge == "" {
		w.t.Fatalf("charge %s: HTTP %d, %+v, %v", idem, resp.StatusCode, pi, err)
	}
	return &reconcile.Made{ID: pi.ID, ChargeID: pi.LatestCharge}
}

func missing(key string, amount int64) reconcile.Discrepancy {
	return reconcile.Discrepancy{Class: reconcile.ClassMissing, EffectKey: key, Provider: "stripe", Currency: "EUR", ExpectedMinor: amount,
		Actions: []reconcile.Action{{Kind: reconcile.ActionRedeliver, Key: key, Target: key, Outcome: reconcile.OutcomePlanned,
			Amount: reconcile.Money{Minor: amount, Currency: "EUR"}}}}
}

func refundsOf(sb *sandbox.Server, key string) int {
	n := 0
	for _, r := range sb.Refunds() {
		if r.Metadata["effect_key"] == key {
			n++
		}
	}
	return n
}

func outcome(t *testing.T, res *compensate.Result, key string) reconcile.Action {
	t.Helper()
	for _, d := range res.Discrepancies {
		for _, x := range d.Actions {
			if x.Key == key {
				return x
			}
		}
	}
	t.Fatalf("no action %s in the result", key)
	return reconcile.Action{}
}

func TestCompensationRefundsOnceAcrossRuns(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		d := w.duplicate("app:charge:0", 1250)
		key := d.Actions[0].Key
		first := w.act(w.applier("rec_1", compensate.Options{}), []reconcile.Discrepancy{d})
		x := outcome(t, first, key)
		if x.Outcome != reconcile.OutcomeApplied || !strings.HasPrefix(x.Made, "re_") {
			t.Fatalf("first run: %+v, want applied with a refund id", x)
		}
		for _, run := range []string{"rec_2", "rec_3"} {
			again := outcome(t, w.act(w.applier(run, compensate.Options{}), []reconcile.Discrepancy{d}), key)
			if again.Outcome != reconcile.OutcomeSkipped || again.Made != x.Made {
				t.Errorf("%s: %+v, want skipped, naming %s", run, again, x.Made)
			}
		}
		if n := refundsOf(w.sb, key); n != 1 {
			t.Errorf("the sandbox made %d refunds under %s, want 1", n, key)
		}
		row, err := w.store.EffectGet(w.ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if row.Step != "compensate" || row.Depth != 1 || row.ParentKey != "app:charge:0" || row.Status != reconcile.StatusConfirmed || row.ExternalID != x.Made {
			t.Errorf("compensation row = %+v, want a confirmed compensate at depth 1 under app:charge:0 with %s", row, x.Made)
		}
		var req map[string]any
		json.Unmarshal(row.Request, &req)
		if req["amount"] != float64(1250) || req["charge"] != d.Transactions[1].ID {
			t.Errorf("compensation request = %v, want the extra charge's full amount", req)
		}
	})
}

func TestPlanMakesNoExternalWrite(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		d := w.duplicate("app:charge:0", 1250)
		w.effect("app:charge:1", 700, time.Now().Add(-48*time.Hour), reconcile.StatusAttempted, "")
		before := w.sb.Requests()
		ap := w.applier("rec_1", compensate.Options{})
		ap.Apply = false
		res := w.act(ap, []reconcile.Discrepancy{d, missing("app:charge:1", 700)})
		for _, key := range []string{d.Actions[0].Key, "app:charge:1"} {
			if x := outcome(t, res, key); x.Outcome != reconcile.OutcomePlanned {
				t.Errorf("%s: %s without --apply, want planned", key, x.Outcome)
			}
		}
		if w.sb.Requests() != before {
			t.Errorf("a plan made %d provider writes", w.sb.Requests()-before)
		}
		if cs, _ := w.store.ClaimListByEffect(w.ctx, "app:charge:0"); len(cs) != 0 {
			t.Errorf("a plan took claims: %+v", cs)
		}
	})
}

func TestConcurrentRunsMakeEachActionOnce(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		var ds []reconcile.Discrepancy
		for i := range 5 {
			ds = append(ds, w.duplicate(fmt.Sprintf("app:charge:%d", i), int64(100+i)))
			key := fmt.Sprintf("app:charge:m%d", i)
			w.effect(key, 500, time.Now().Add(-time.Hour), reconcile.StatusAttempted, "")
			ds = append(ds, missing(key, 500))
		}
		before := len(w.sb.Payments())
		var wg sync.WaitGroup
		for r := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := w.applier(fmt.Sprintf("rec_%d", r), compensate.Options{}).Act(w.ctx, ds); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for _, d := range ds {
			if d.Class == reconcile.ClassDuplicated {
				if n := refundsOf(w.sb, d.Actions[0].Key); n != 1 {
					t.Errorf("%s refunded %d times by 4 concurrent runs, want once", d.EffectKey, n)
				}
			}
		}
		if n := len(w.sb.Payments()) - before; n != 5 {
			t.Errorf("4 concurrent runs made %d payments for 5 missing effects, want 5", n)
		}
	})
}

// The provider call hangs past the lease (on its way in: the provider has
// not seen the key yet); a second run takes the action over and makes it;
// the first run's late call is answered from the provider's idempotency
// store, its success is superseded and reported as an orphan, and the
// refund is made once.
//
// The ledger and both runs read one fake clock, and the fake clock stands
// in for waiting out the lease: once the first run's call is held at the
// sandbox, the test advances the clock past the lease instead of sleeping.
// The sandbox holds the call for 1.5 s of real time, which is how long the
// second run has to take the action over and make it before the late call
// lands.
func TestStaleOwnerLateSuccessIsAnOrphan(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		fake := clock.NewFake(time.Now())
		w.now = fake.Now
		d := w.duplicate("app:charge:0", 990)
		key := d.Actions[0].Key
		w.sb.Inject(sandbox.Fault{Op: sandbox.OpRefund, Key: key, Kind: sandbox.FaultLatency, Times: 1, Delay: 1500 * time.Millisecond})
		lease := 500 * time.Millisecond
		arrived := w.sb.Arrived(key)
		done := make(chan *compensate.Result, 1)
		go func() {
			res, err := w.applier("rec_1", compensate.Options{Lease: lease}).Act(w.ctx, []reconcile.Discrepancy{d})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		select {
		case <-arrived:
		case res := <-done:
			t.Fatalf("the first run ended before its refund call reached the provider: %+v", res)
		case <-time.After(10 * time.Second):
			t.Fatal("the first run's refund call did not reach the provider within 10s")
		}
		fake.Advance(lease + 200*time.Millisecond) // the first run's lease runs out while its call hangs
		second := w.act(w.applier("rec_2", compensate.Options{Lease: time.Minute}), []reconcile.Discrepancy{d})
		if x := outcome(t, second, key); x.Outcome != reconcile.OutcomeApplied {
			t.Fatalf("the run that took over: %+v, want applied", x)
		}
		first := <-done
		if first == nil {
			t.Fatal("the first run failed")
		}
		if x := outcome(t, first, key); x.Outcome != reconcile.OutcomeSuperseded || !strings.Contains(x.Note, "ORPHAN") {
			t.Errorf("the stale run: %+v, want superseded and reported as an orphan", x)
		}
		if len(first.Orphans) != 1 || first.Orphans[0].StaleFence != 1 || first.Orphans[0].CurrentFence != 2 {
			t.Errorf("orphans = %+v, want one, fence 1 against 2", first.Orphans)
		} else if made := outcome(t, second, key).Made; made == "" || !strings.Contains(string(first.Orphans[0].StaleResult), made) {
			// The late call was answered from the provider's idempotency
			// store: what it reports is the refund the second run made.
			t.Errorf("the orphan's result %s does not name the refund made, %q", first.Orphans[0].StaleResult, made)
		}
		if n := refundsOf(w.sb, key); n != 1 {
			t.Errorf("%d refunds, want 1", n)
		}
		if orphans, _ := w.store.OrphanList(w.ctx); len(orphans) != 1 {
			t.Errorf("the ledger holds %d orphans, want 1", len(orphans))
		}
	})
}

func TestLookupDownDefersWithoutCallOrPage(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		w.effect("app:charge:0", 800, time.Now().Add(-48*time.Hour), reconcile.StatusAttempted, "") // older than the key TTL
		w.sb.Inject(sandbox.Fault{Op: sandbox.OpSearch, Kind: sandbox.FaultUnavailable})
		before := w.sb.Requests()
		res := w.act(w.applier("rec_1", compensate.Options{}), []reconcile.Discrepancy{missing("app:charge:0", 800)})
		if res.Discrepancies[0].Class != reconcile.ClassDeferred {
			t.Errorf("class = %s, want deferred", res.Discrepancies[0].Class)
		}
		if x := outcome(t, res, "app:charge:0"); x.Outcome != reconcile.OutcomeDeferred {
			t.Errorf("outcome = %s, want deferred", x.Outcome)
		}
		if w.sb.Requests() != before || w.pages.triggers() != 0 {
			t.Errorf("lookup down: %d writes, %d pages; want none", w.sb.Requests()-before, w.pages.triggers())
		}
		if e, _ := w.store.EffectGet(w.ctx, "app:charge:0"); e.Status != reconcile.StatusAttempted {
			t.Errorf("deferred changed the effect: %s", e.Status)
		}
	})
}

// The payment the ledger names is looked up before a redelivery too: when
// that lookup is down the redelivery waits; an id the provider does not
// have, or one of no shape it knows (an application's own order number),
// finds nothing, and the effect is redelivered.
func TestTheLedgersPaymentIsLookedUpBeforeARedelivery(t *testing.T) {
	for _, c := range []struct {
		extID string
		down  bool
		want  reconcile.Outcome
	}{{"ord_42", false, reconcile.OutcomeApplied}, {"pi_nosuchintent0001", false, reconcile.OutcomeApplied}, {"pi_nosuchintent0001", true, reconcile.OutcomeDeferred}} {
		t.Run(fmt.Sprintf("%s down %v", c.extID, c.down), func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				w := newWorld(t, l)
				w.effect("app:charge:0", 800, time.Now().Add(-48*time.Hour), reconcile.StatusAttempted, c.extID)
				if c.down {
					w.sb.Inject(sandbox.Fault{Op: sandbox.OpGetPaymentIntent, Kind: sandbox.FaultUnavailable})
				}
				res := w.act(w.applier("rec_1", compensate.Options{}), []reconcile.Discrepancy{missing("app:charge:0", 800)})
				if x := outcome(t, res, "app:charge:0"); x.Outcome != c.want {
					t.Errorf("%+v, want %s", x, c.want)
				}
				if n, want := len(w.sb.Payments()), map[bool]int{false: 1, true: 0}[c.down]; n != want {
					t.Errorf("the sandbox holds %d payments, want %d", n, want)
				}
			})
		})
	}
}

// The original key has expired at the provider and the effect did happen:
// the lookup finds it, and no second charge is made.
func TestExpiredKeyLookupPreventsSecondCharge(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		made, err := w.client.CreatePaymentIntent(w.ctx, "app:charge:0", chargeRequest("app:charge:0", 800))
		if err != nil {
			t.Fatal(err)
		}
		w.sb.ForgetKeys()
		w.effect("app:charge:0", 800, time.Now().Add(-48*time.Hour), reconcile.StatusAttempted, "") // the app crashed before confirming
		res := w.act(w.applier("rec_1", compensate.Options{}), []reconcile.Discrepancy{missing("app:charge:0", 800)})
		if len(w.sb.Payments()) != 1 {
			t.Fatalf("the sandbox holds %d payments, want the first one only", len(w.sb.Payments()))
		}
		if d := res.Discrepancies[0]; d.Class != reconcile.ClassConfirmed || d.Actions[0].Outcome != reconcile.OutcomeSkipped || d.Actions[0].Made != made.ID {
			t.Errorf("finding = %+v, want confirmed by lookup (%s), no call", d, made.ID)
		}
		if e, _ := w.store.EffectGet(w.ctx, "app:charge:0"); e.Status != reconcile.StatusConfirmed || e.ExternalID != made.ID {
			t.Errorf("effect = %s %q, want confirmed %s", e.Status, e.ExternalID, made.ID)
		}
	})
}

// A redelivery whose key the provider already used with other parameters
// is never retried with new ones, and paged once: the lookup before it
// finds the payment and sees that it differs; when search has not indexed
// it yet, the provider refuses the key.
func TestKeyReusedWithOtherParametersIsRefused(t *testing.T) {
	for _, c := range []struct {
		lag     time.Duration
		outcome reconcile.Outcome
	}{{0, reconcile.OutcomeEscalated}, {time.Hour, reconcile.OutcomeRefused}} {
		t.Run("search lag "+c.lag.String(), func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				w := newWorld(t, l, sandbox.Options{SearchLag: c.lag})
				if _, err := w.client.CreatePaymentIntent(w.ctx, "app:charge:0", chargeRequest("app:charge:0", 800)); err != nil {
					t.Fatal(err)
				}
				w.effect("app:charge:0", 900, time.Now().Add(-time.Hour), reconcile.StatusAttempted, "") // the ledger says 900: the price moved
				for _, run := range []string{"rec_1", "rec_2"} {
					res := w.act(w.applier(run, compensate.Options{}), []reconcile.Discrepancy{missing("app:charge:0", 900)})
					x := outcome(t, res, "app:charge:0")
					// The second run finds it closed by the first: never retried.
					if x.Outcome != c.outcome || c.lag == 0 && !strings.Contains(x.Note, "8.00 EUR, not 900") {
						t.Errorf("search lag %s, %s: %+v, want %s", c.lag, run, x, c.outcome)
					}
				}
				if len(w.sb.Payments()) != 1 || w.pages.triggers() != 1 {
					t.Errorf("%d payments, %d pages; want 1 and 1", len(w.sb.Payments()), w.pages.triggers())
				}
			})
		})
	}
}

// A refund that fails in doubt (a 5xx every time) pages exactly once across
// three runs, and its compensation is escalated.
func TestRefundInDoubtPagesOnceAcrossRuns(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		d := w.duplicate("app:charge:0", 990)
		key := d.Actions[0].Key
		w.sb.Inject(sandbox.Fault{Op: sandbox.OpRefund, Key: key, Kind: sandbox.FaultError500})
		for i, run := range []string{"rec_1", "rec_2", "rec_3"} {
			res := w.act(w.applier(run, compensate.Options{Grace: -1}), []reconcile.Discrepancy{d})
			if x := outcome(t, res, key); x.Outcome != reconcile.OutcomeEscalated {
				t.Errorf("run %d: %+v, want escalated (grace 0)", i+1, x)
			}
			if last := res.Discrepancies[len(res.Discrepancies)-1]; last.EffectKey != key || last.Class != reconcile.ClassEscalated {
				t.Errorf("run %d: the compensation's own finding is %+v, want escalated", i+1, last)
			}
		}
		if n := w.pages.triggers(); n != 1 {
			t.Errorf("%d pages across three runs, want 1", n)
		}
		if n := refundsOf(w.sb, key); n != 0 {
			t.Errorf("%d refunds made, want none", n)
		}
	})
}

// A refund whose call times out stays in doubt; the next runs look it up,
// find nothing yet, and page once without calling again.
//
// No clock is faked here: the lease is not what is waited for. The test
// waits for the hung call to land at the sandbox (Landed), with a 10 s
// deadline that fails the test, instead of sleeping past its delay.
func TestRefundTimeoutPagesOnceAndIsNotRepeated(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		w.client = w.newClient(200 * time.Millisecond)
		d := w.duplicate("app:charge:0", 990)
		key := d.Actions[0].Key
		w.sb.Inject(sandbox.Fault{Op: sandbox.OpRefund, Key: key, Kind: sandbox.FaultHang, Delay: time.Second})
		landed := w.sb.Landed(key)
		w.act(w.applier("rec_1", compensate.Options{Grace: -1}), []reconcile.Discrepancy{d})
		again := w.sb.Arrived(key) // any call under the key after the first
		for _, run := range []string{"rec_2", "rec_3"} {
			w.act(w.applier(run, compensate.Options{Grace: -1}), []reconcile.Discrepancy{d})
		}
		select {
		case <-again:
			t.Error("a later run called the provider again under the key of a call in doubt")
		default:
		}
		if n := w.pages.triggers(); n != 1 {
			t.Errorf("%d pages across three runs, want 1", n)
		}
		select { // the hung call lands at the provider
		case <-landed:
		case <-time.After(10 * time.Second):
			t.Fatal("the hung refund call did not land at the provider within 10s")
		}
		if n := refundsOf(w.sb, key); n != 1 {
			t.Errorf("%d refunds, want the one hung call only", n)
		}
		// Once the provider shows it, the next run confirms the compensation
		// by looking it up; on a slow machine the third run may already
		// have, and the fourth then says it was made earlier.
		res := w.act(w.applier("rec_4", compensate.Options{}), []reconcile.Discrepancy{d})
		x := outcome(t, res, key)
		if !strings.HasPrefix(x.Made, "re_") || (x.Outcome != reconcile.OutcomeApplied && x.Note != "made by an earlier run") {
			t.Errorf("after the refund landed: %+v, want applied (found by lookup) or skipped (made by an earlier run), with its refund", x)
		}
		if n := refundsOf(w.sb, key); n != 1 {
			t.Errorf("%d refunds after the lookup, want 1", n)
		}
	})
}

func TestBlastRadiusHoldsEveryActionAndPagesOnce(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		var ds []reconcile.Discrepancy
		for i := range 3 {
			ds = append(ds, w.duplicate(fmt.Sprintf("app:charge:%d", i), 1000))
		}
		before := w.sb.Requests()
		for _, opt := range []compensate.Options{{MaxActions: 2}, {MaxActions: 2}, {MaxRefund: map[string]int64{"EUR": 2999}}} {
			res := w.act(w.applier("rec", opt), ds)
			for _, d := range res.Discrepancies {
				if x := d.Actions[0]; x.Outcome != reconcile.OutcomeEscalated || !strings.Contains(x.Note, "held back") {
					t.Errorf("%+v, want escalated and held back", x)
				}
			}
		}
		if w.sb.Requests() != before {
			t.Errorf("%d refunds made above the limits", w.sb.Requests()-before)
		}
		if n := w.pages.triggers(); n != 1 {
			t.Errorf("%d pages for the same held-back plan, want 1", n)
		}
		// Within the limits the same plan is made.
		res := w.act(w.applier("rec", compensate.Options{MaxActions: 3, MaxRefund: map[string]int64{"EUR": 3000}}), ds)
		for _, d := range res.Discrepancies {
			if d.Actions[0].Outcome != reconcile.OutcomeApplied {
				t.Errorf("within limits: %+v, want applied", d.Actions[0])
			}
		}
	})
}

// A retrieval that fails, or takes longer than the client waits, leaves
// the refund unsent and the action deferred, with no page; the next run,
// with the provider back, refunds once.
func TestRetrievalDownDefersTheRefund(t *testing.T) {
	for _, kind := range []string{sandbox.FaultError500, sandbox.FaultLatency} {
		t.Run(kind, func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				w := newWorld(t, l)
				w.client = w.newClient(300 * time.Millisecond)
				d := w.duplicate("app:charge:0", 1250)
				key := d.Actions[0].Key
				w.sb.Inject(sandbox.Fault{Op: sandbox.OpGetCharge, Kind: kind, Delay: time.Second})
				if x := outcome(t, w.act(w.applier("rec_1", compensate.Options{}), []reconcile.Discrepancy{d}), key); x.Outcome != reconcile.OutcomeDeferred {
					t.Errorf("with retrievals failing: %+v, want deferred", x)
				}
				if n := len(w.sb.Refunds()); n != 0 || w.pages.triggers() != 0 {
					t.Errorf("%d refunds and %d pages, want none", n, w.pages.triggers())
				}
				if _, err := w.store.EffectGet(w.ctx, key); err == nil {
					t.Errorf("the compensation row %s was written although nothing was verified", key)
				}
				w.sb.ClearFaults()
				if x := outcome(t, w.act(w.applier("rec_2", compensate.Options{}), []reconcile.Discrepancy{d}), key); x.Outcome != reconcile.OutcomeApplied {
					t.Errorf("with the provider back: %+v, want applied", x)
				}
				if n := refundsOf(w.sb, key); n != 1 {
					t.Errorf("%d refunds under %s, want 1", n, key)
				}
			})
		})
	}
}

// The refund total a limit is checked against is a sum of money: it must
// not wrap past int64 to a negative total that passes any limit.
func TestBlastRadiusSumDoesNotWrap(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		var ds []reconcile.Discrepancy
		for i := range 2 {
			d := w.duplicate(fmt.Sprintf("app:charge:%d", i), 1000)
			d.Actions[0].Amount.Minor = math.MaxInt64/2 + 1 // as a corrupt plan would say
			ds = append(ds, d)
		}
		before := w.sb.Requests()
		res := w.act(w.applier("rec", compensate.Options{MaxRefund: map[string]int64{"EUR": 2999}}), ds)
		for _, d := range res.Discrepancies {
			if x := d.Actions[0]; x.Outcome != reconcile.OutcomeEscalated || !strings.Contains(x.Note, "held back") {
				t.Errorf("%+v, want escalated and held back", x)
			}
		}
		if w.sb.Requests() != before {
			t.Errorf("%d calls made above the limit", w.sb.Requests()-before)
		}
	})
}

// An action at a provider the run has no API client for is handed to a
// person: nothing is called, claimed or refunded, whatever the file says.
func TestActionsAtAProviderWithoutAClientAreAPersons(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		d := w.duplicate("app:charge:0", 1250)
		m := missing("app:charge:1", 700)
		w.effect("app:charge:1", 700, time.Now().Add(-48*time.Hour), reconcile.StatusAttempted, "")
		d.Provider, m.Provider = "adyen", "adyen"
		before := w.sb.Requests()
		res := w.act(w.applier("rec_1", compensate.Options{}), []reconcile.Discrepancy{d, m})
		for _, key := range []string{d.Actions[0].Key, "app:charge:1"} {
			if x := outcome(t, res, key); x.Outcome != reconcile.OutcomeEscalated || !strings.Contains(x.Note, "adyen") {
				t.Errorf("%s: %s (%s), want escalated, saying there is no client for adyen", key, x.Outcome, x.Note)
			}
		}
		if w.sb.Requests() != before {
			t.Errorf("%d provider calls for actions at a provider without a client", w.sb.Requests()-before)
		}
		if cs, _ := w.store.ClaimListByEffect(w.ctx, "app:charge:0"); len(cs) != 0 {
			t.Errorf("claims taken for an action a person makes: %+v", cs)
		}
	})
}

// A charge a record says failed, beside one that stands, at a provider the
// job has no client for, cannot be asked about: its failure record stands
// (the effect is confirmed), nothing is refunded and nobody is paged.
func TestAFailureRecordWithNobodyToAskStands(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		eur := reconcile.Money{Minor: 800, Currency: "EUR"}
		key := reconcile.CompensationKey("app:charge:0", "t2")
		d := reconcile.Discrepancy{Class: reconcile.ClassDuplicated, EffectKey: "app:charge:0", Provider: "acmebank", Currency: "EUR", ExpectedMinor: 800, ObservedMinor: 1600,
			Transactions: []reconcile.Transaction{{ID: "t1", Kind: reconcile.KindCharge, Amount: eur}, {ID: "t2", Kind: reconcile.KindCharge, Amount: eur, Failed: true}},
			Actions:      []reconcile.Action{{Kind: reconcile.ActionCompensate, Key: key, Target: "t2", Outcome: reconcile.OutcomePlanned, Amount: eur}}}
		res := w.act(w.applier("rec_1", compensate.Options{}), []reconcile.Discrepancy{d})
		if x := outcome(t, res, key); x.Outcome != reconcile.OutcomeSkipped || w.pages.triggers() != 0 || res.Discrepancies[0].Class != reconcile.ClassConfirmed {
			t.Errorf("%s %+v, %d pages; want confirmed, skipped and none", res.Discrepancies[0].Class, x, w.pages.triggers())
		}
	})
}
