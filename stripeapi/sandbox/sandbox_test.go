package sandbox_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"reconcile/stripeapi/sandbox"
)

// clock is a fake clock that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// start serves a new sandbox over real HTTP.
func start(t *testing.T, opt sandbox.Options) (*sandbox.Server, string) {
	t.Helper()
	s := sandbox.New(opt)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// answer is a decoded answer: its status, headers and JSON body.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// str reads a string at a path of object keys.
func (a answer) str(path ...string) string {
	var v any = a.body
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// do sends one API request with a key and returns the answer.
func do(t *testing.T, method, u, key string, form url.Values) answer {
	t.Helper()
	a, err := send(method, u, key, form)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// send is do for a goroutine, where a test must not stop.
func send(method, u, key string, form url.Values) (answer, error) {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(form.Encode())
	} else if form != nil {
		u += "?" + form.Encode()
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer sk_test_sandbox")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		return a, fmt.Errorf("%s %s: answer is not a JSON object: %s", method, u, raw)
	}
	return a, nil
}

func charge(amount, currency, effectKey string) url.Values {
	return url.Values{"amount": {amount}, "currency": {currency}, "confirm": {"true"},
		"payment_method": {"pm_card_visa"}, "metadata[effect_key]": {effectKey}}
}

func TestSameKeyAndParametersReplayTheStoredAnswer(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	first := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
	if first.status != 200 || first.str("status") != "succeeded" || !strings.HasPrefix(first.str("id"), "pi_") ||
		!strings.HasPrefix(first.str("latest_charge"), "ch_") || first.str("currency") != "eur" {
		t.Fatalf("create = %d %s, want 200 and a succeeded pi_ with a ch_", first.status, first.raw)
	}
	if got := first.header.Get("Idempotent-Replayed"); got != "" {
		t.Errorf("first answer has Idempotent-Replayed %q, want none", got)
	}
	again := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
	if again.header.Get("Idempotent-Replayed") != "true" || again.raw != first.raw {
		t.Errorf("replay = %s (Idempotent-Replayed %q), want the first answer replayed", again.raw, again.header.Get("Idempotent-Replayed"))
	}
	if n := len(s.Payments()); n != 1 || s.Requests() != 1 {
		t.Errorf("sandbox made %d payments in %d requests, want 1 in 1", n, s.Requests())
	}
}

func TestSameKeyWithOtherParametersIsAnIdempotencyError(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
	for name, tc := range map[string]struct {
		path string
		form url.Values
	}{
		"other amount":   {"/v1/payment_intents", charge("1421", "eur", "k1")},
		"other endpoint": {"/v1/refunds", url.Values{"charge": {s.Payments()[0].ChargeID}}},
	} {
		a := do(t, "POST", base+tc.path, "k1", tc.form)
		if a.status != 400 || a.str("error", "type") != "idempotency_error" {
			t.Errorf("%s: %d %s, want 400 idempotency_error", name, a.status, a.raw)
		}
	}
	if len(s.Payments()) != 1 || len(s.Refunds()) != 0 {
		t.Errorf("sandbox made %d payments and %d refunds, want 1 and 0", len(s.Payments()), len(s.Refunds()))
	}
}

func TestKeysAreForgottenAfterTheirTTL(t *testing.T) {
	c := newClock()
	s, base := start(t, sandbox.Options{KeyTTL: time.Hour, Now: c.Now})
	first := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
	c.Add(time.Hour - time.Second)
	if a := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1")); a.str("id") != first.str("id") {
		t.Fatalf("within the TTL the key made %s, want a replay of %s", a.str("id"), first.str("id"))
	}
	c.Add(time.Second)
	a := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
	if a.str("id") == first.str("id") || a.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("after the TTL the key replayed %s, want a new payment", a.str("id"))
	}
	if n := len(s.Payments()); n != 2 {
		t.Errorf("sandbox made %d payments, want 2", n)
	}
}

func TestForgetKeysLetsTheSameKeyMakeANewObject(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
	s.ForgetKeys()
	// Over HTTP too, as another process would.
	do(t, "POST", base+"/v1/payment_intents", "k1", charge("999", "eur", "k1"))
	if resp, err := http.Post(base+"/_sandbox/forget-keys", "", nil); err != nil || resp.StatusCode != 204 {
		t.Fatalf("POST /_sandbox/forget-keys = %v %v", resp, err)
	}
	do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
	if n := len(s.Payments()); n != 3 {
		t.Errorf("sandbox made %d payments, want 3", n)
	}
}

func TestValidationErrorsAreNotKeptUnderTheKey(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	bad := do(t, "POST", base+"/v1/payment_intents", "k1", url.Values{"amount": {"1420"}})
	if bad.status != 400 || bad.str("error", "code") != "parameter_missing" || bad.str("error", "param") != "currency" {
		t.Fatalf("no currency = %d %s, want 400 parameter_missing currency", bad.status, bad.raw)
	}
	if a := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1")); a.status != 200 {
		t.Errorf("the key after a validation error = %d %s, want 200", a.status, a.raw)
	}
	if n := len(s.Payments()); n != 1 {
		t.Errorf("sandbox made %d payments, want 1", n)
	}
}

func TestAKeyInFlightAnswers409(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	s.Inject(sandbox.Fault{Op: sandbox.OpCreatePaymentIntent, Key: "k1", Kind: sandbox.FaultHang, Times: 1, Delay: 300 * time.Millisecond})
	done := make(chan answer)
	go func() {
		a, err := send("POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
		if err != nil {
			t.Error(err)
		}
		done <- a
	}()
	waitFor(t, func() bool { return s.InFlight() == 1 })
	a := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
	if a.status != 409 || a.str("error", "type") != "idempotency_error" || a.str("error", "code") != "idempotency_key_in_use" {
		t.Errorf("second request while the first runs = %d %s, want 409 idempotency_key_in_use", a.status, a.raw)
	}
	first := <-done
	if first.status != 200 {
		t.Fatalf("first request = %d %s, want 200", first.status, first.raw)
	}
	if a := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1")); a.str("id") != first.str("id") {
		t.Errorf("after the first finished the key made %s, want a replay of %s", a.str("id"), first.str("id"))
	}
	if n := len(s.Payments()); n != 1 {
		t.Errorf("sandbox made %d payments, want 1", n)
	}
}

// waitFor polls cond for up to five seconds: for work another goroutine
// or the server finishes on its own time.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
	}
}

func TestRefundsCannotExceedTheCharge(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	pi := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1000", "eur", "k1"))
	ch := pi.str("latest_charge")
	part := do(t, "POST", base+"/v1/refunds", "r1", url.Values{"charge": {ch}, "amount": {"300"}, "metadata[effect_key]": {"r1"}})
	if part.status != 200 || part.body["amount"] != 300.0 || part.str("charge") != ch || part.str("payment_intent") != pi.str("id") ||
		part.str("metadata", "effect_key") != "r1" || !strings.HasPrefix(part.str("id"), "re_") {
		t.Fatalf("partial refund = %d %s", part.status, part.raw)
	}
	if a := do(t, "POST", base+"/v1/refunds", "r2", url.Values{"payment_intent": {pi.str("id")}, "amount": {"701"}}); a.status != 400 || a.str("error", "code") != "amount_too_large" {
		t.Errorf("refund beyond what is left = %d %s, want 400 amount_too_large", a.status, a.raw)
	}
	rest := do(t, "POST", base+"/v1/refunds", "r3", url.Values{"payment_intent": {pi.str("id")}})
	if rest.status != 200 || rest.body["amount"] != 700.0 {
		t.Errorf("refund of the rest = %d %s, want 200 for 700", rest.status, rest.raw)
	}
	again := do(t, "POST", base+"/v1/refunds", "r4", url.Values{"charge": {ch}})
	if again.status != 400 || again.str("error", "code") != "charge_already_refunded" {
		t.Errorf("refund of a refunded charge = %d %s, want 400 charge_already_refunded", again.status, again.raw)
	}
	if n := len(s.Refunds()); n != 2 {
		t.Errorf("sandbox made %d refunds, want 2", n)
	}
	if got := s.Payments()[0].Refunded; got != 1000 {
		t.Errorf("payment refunded = %d, want 1000", got)
	}
}

// Search lags the writes, as Stripe's does; retrieval by id does not.
func TestSearchFindsAPaymentOnlyAfterTheLag(t *testing.T) {
	c := newClock()
	_, base := start(t, sandbox.Options{SearchLag: time.Minute, Now: c.Now})
	made := do(t, "POST", base+"/v1/payment_intents", "k1", charge("700", "eur", "lagged"))
	found := func() int {
		a := do(t, "GET", base+"/v1/payment_intents/search", "", url.Values{"query": {`metadata['effect_key']:'lagged'`}})
		return len(a.body["data"].([]any))
	}
	if n := found(); n != 0 {
		t.Errorf("search at once found %d, want none: not indexed yet", n)
	}
	if a := do(t, "GET", base+"/v1/payment_intents/"+made.str("id"), "", nil); a.status != 200 {
		t.Errorf("retrieval at once = %d %s, want the payment", a.status, a.raw)
	}
	c.Add(time.Minute)
	if n := found(); n != 1 {
		t.Errorf("search after the lag found %d, want 1", n)
	}
}

func TestSearchFindsPaymentIntentsByMetadata(t *testing.T) {
	_, base := start(t, sandbox.Options{})
	odd := `run_1:charge:0 it's "odd" \ key`
	want := do(t, "POST", base+"/v1/payment_intents", "k-odd", charge("500", "usd", odd))
	for i := range 3 {
		do(t, "POST", base+"/v1/payment_intents", "k"+string(rune('a'+i)), charge("100", "usd", "same"))
	}
	search := func(q string, extra ...string) answer {
		f := url.Values{"query": {q}}
		for i := 0; i+1 < len(extra); i += 2 {
			f.Set(extra[i], extra[i+1])
		}
		return do(t, "GET", base+"/v1/payment_intents/search", "", f)
	}
	quoted := `metadata['effect_key']:'` + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(odd) + `'`
	a := search(quoted)
	data, _ := a.body["data"].([]any)
	if a.status != 200 || a.str("object") != "search_result" || len(data) != 1 || data[0].(map[string]any)["id"] != want.str("id") {
		t.Errorf("search %s = %d %s, want the one payment %s", quoted, a.status, a.raw, want.str("id"))
	}
	if a := search(`metadata['effect_key']:'nobody'`); len(a.body["data"].([]any)) != 0 || a.body["has_more"] != false {
		t.Errorf("search for an unknown key = %s, want no data", a.raw)
	}
	seen := map[string]bool{}
	page := search(`metadata["effect_key"]:"same" AND status:'succeeded'`, "limit", "2")
	for {
		for _, d := range page.body["data"].([]any) {
			seen[d.(map[string]any)["id"].(string)] = true
		}
		if page.body["has_more"] != true {
			break
		}
		page = search(`metadata["effect_key"]:"same" AND status:'succeeded'`, "limit", "2", "page", page.str("next_page"))
	}
	if len(seen) != 3 {
		t.Errorf("paging through the search found %d payments, want 3", len(seen))
	}
	for _, q := range []string{"", "amount>100", "metadata['effect_key']:'x' OR status:'succeeded'", "metadata['effect_key']:'unterminated"} {
		if a := search(q); a.status != 400 || a.str("error", "type") != "invalid_request_error" {
			t.Errorf("search %q = %d %s, want 400 invalid_request_error", q, a.status, a.raw)
		}
	}
}

func TestListRefundsPagesNewestFirst(t *testing.T) {
	c := newClock()
	_, base := start(t, sandbox.Options{Now: c.Now})
	ch := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1000", "eur", "k1")).str("latest_charge")
	other := do(t, "POST", base+"/v1/payment_intents", "k2", charge("1000", "eur", "k2")).str("latest_charge")
	var made []string
	for i := range 5 {
		c.Add(time.Second)
		made = append(made, do(t, "POST", base+"/v1/refunds", "r"+string(rune('0'+i)), url.Values{"charge": {ch}, "amount": {"100"}}).str("id"))
	}
	do(t, "POST", base+"/v1/refunds", "r-other", url.Values{"charge": {other}})
	var got []string
	f := url.Values{"charge": {ch}, "limit": {"2"}}
	for pages := 0; ; pages++ {
		a := do(t, "GET", base+"/v1/refunds", "", f)
		if a.status != 200 || a.str("object") != "list" {
			t.Fatalf("list = %d %s", a.status, a.raw)
		}
		data := a.body["data"].([]any)
		for _, d := range data {
			got = append(got, d.(map[string]any)["id"].(string))
		}
		if a.body["has_more"] != true {
			break
		}
		if pages > 5 {
			t.Fatal("list never ends")
		}
		f.Set("starting_after", got[len(got)-1])
	}
	want := []string{made[4], made[3], made[2], made[1], made[0]}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("refunds of %s, paged by 2 = %v, want %v", ch, got, want)
	}
	before := do(t, "GET", base+"/v1/refunds", "", url.Values{"charge": {ch}, "limit": {"2"}, "ending_before": {made[1]}})
	if data := before.body["data"].([]any); len(data) != 2 || data[0].(map[string]any)["id"] != made[3] || before.body["has_more"] != true {
		t.Errorf("ending_before %s = %s, want %s, %s and more", made[1], before.raw, made[3], made[2])
	}
	if a := do(t, "GET", base+"/v1/refunds", "", url.Values{"starting_after": {"re_nope"}}); a.status != 400 {
		t.Errorf("starting_after an unknown refund = %d, want 400", a.status)
	}
}

func TestRequestsWithoutAnAPIKeyAreRefused(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	resp, err := http.PostForm(base+"/v1/payment_intents", charge("100", "eur", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || len(s.Payments()) != 0 {
		t.Errorf("POST without a key = %d and %d payments, want 401 and none", resp.StatusCode, len(s.Payments()))
	}
}

func TestDeclinedTestCardAnswers402AndKeepsTheIntent(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	f := charge("1420", "eur", "k1")
	f.Set("payment_method", "pm_card_chargeDeclined")
	a := do(t, "POST", base+"/v1/payment_intents", "k1", f)
	if a.status != 402 || a.str("error", "type") != "card_error" || a.str("error", "code") != "card_declined" ||
		a.str("error", "payment_intent", "status") != "requires_payment_method" {
		t.Errorf("declined card = %d %s, want 402 card_declined with the intent", a.status, a.raw)
	}
	if again := do(t, "POST", base+"/v1/payment_intents", "k1", f); again.status != 402 || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("declined card again = %d, replayed %q, want the 402 replayed", again.status, again.header.Get("Idempotent-Replayed"))
	}
	if p := s.Payments(); len(p) != 1 || p[0].ChargeID != "" {
		t.Errorf("payments = %+v, want one intent without a charge", p)
	}
}

func TestConcurrentRequestsWithOneKeyMakeOnePayment(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	var wg sync.WaitGroup
	answers := make([]answer, 20)
	errs := make([]error, 20)
	for i := range answers {
		wg.Go(func() {
			answers[i], errs[i] = send("POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
		})
	}
	wg.Wait()
	ids := map[string]bool{}
	for i, a := range answers {
		switch {
		case errs[i] != nil:
			t.Fatal(errs[i])
		case a.status == 200:
			ids[a.str("id")] = true
		case a.status != 409:
			t.Errorf("concurrent request = %d %s, want 200 or 409", a.status, a.raw)
		}
	}
	if len(ids) != 1 || len(s.Payments()) != 1 || s.Requests() != 1 {
		t.Errorf("20 concurrent requests with one key answered ids %v and made %d payments, want one", ids, len(s.Payments()))
	}
}
