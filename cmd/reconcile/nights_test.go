package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"reconcile"
	"reconcile/ingest/s3test"
	"reconcile/ledgerdb/ledgerdbtest"
)

// pagerDuty is a local PagerDuty Events API v2 receiver: it counts the
// events by action and dedup key.
type pagerDuty struct {
	mu     sync.Mutex
	events map[string]int // "trigger dedup-key" → count
}

func newPagerDuty(t *testing.T) (*pagerDuty, string) {
	p := &pagerDuty{events: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Action string `json:"event_action"`
			Key    string `json:"dedup_key"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &ev); err != nil || r.URL.Path != "/v2/enqueue" {
			http.Error(w, "bad event", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.events[ev.Action+" "+ev.Key]++
		p.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"status":"success","message":"Event processed","dedup_key":"`+ev.Key+`"}`)
	}))
	t.Cleanup(srv.Close)
	return p, srv.URL + "/v2/enqueue"
}

func (p *pagerDuty) triggers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, v := range p.events {
		if strings.HasPrefix(k, "trigger ") {
			n += v
		}
	}
	return n
}

// nightResult is what these tests read of a run's result.
type nightResult struct {
	Counts        map[string]int   `json:"counts"`
	Resolved      map[string]int64 `json:"money_resolved"`
	Discrepancies []struct {
		Class      string    `json:"class"`
		EffectKey  string    `json:"effect_key"`
		FirstFound time.Time `json:"first_found"`
	} `json:"discrepancies"`
}

// A person's resolution is final for the evidence seen so far: the next
// nights' runs over the same, already ingested S3 prefix neither reopen
// nor re-page it, and what is still open is reported as open since the
// night it was first found. Only a transaction not seen before reopens
// the effect.
func TestAResolutionSticksAcrossNights(t *testing.T) {
	s3test.Start(t) // sets the environment: not parallel
	t.Setenv("RECONCILE_PAGER_ROUTING_KEY", "R0UT1NGKEY0000000000000000000000")
	t.Setenv("STRIPE_API_KEY", "sk_test_unused") // nothing here calls the provider
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) { testResolutionSticks(t, ledgerdbtest.New(t, driver)) })
	}
}

func testResolutionSticks(t *testing.T, l *ledgerdbtest.Ledger) {
	{
		pd, pdURL := newPagerDuty(t)
		created := time.Now().Add(-72 * time.Hour).UTC()
		var effects []reconcile.Effect
		for key, amount := range map[string]int64{"shop:charge:a": 1000, "shop:charge:b": 2000, "shop:charge:c": 3000} {
			effects = append(effects, reconcile.Effect{Key: key, RunID: "shop", Step: "charge", Provider: "stripe", Status: reconcile.StatusConfirmed,
				Request:   json.RawMessage(`{"amount": ` + itoa(amount) + `, "currency": "eur", "metadata": {"effect_key": "` + key + `"}}`),
				CreatedAt: created, ConfirmedAt: created})
		}
		if err := l.Open(t, nil).EffectLoad(context.Background(), effects); err != nil {
			t.Fatal(err)
		}
		day := created.Add(time.Hour).Format("2006-01-02 15:04:05")
		row := func(id, gross, key string) string {
			return "txn_" + id + "," + day + ",eur," + gross + ",0.00," + gross + ",charge," + id + "," + id + ",pi_" + id + "," + key + ",\n"
		}
		header := strings.SplitAfter(settlement, "\n")[0]
		bucket := l.Driver + "-nights"
		s3test.Put(t, bucket, map[string][]byte{"stripe/night1.itemized.csv": []byte(header +
			row("ch_a", "10.01", "shop:charge:a") + row("ch_b", "20.02", "shop:charge:b") + row("ch_c", "30.00", "shop:charge:c") + row("ch_u", "50.00", ""))})
		night := func(apply bool) (int, nightResult) {
			t.Helper()
			args := []string{"run", "--s3-path-style", "--ledger", l.URL, "--pager-url", pdURL, "--page-unexpected", "EUR=10.00",
				"--provider-url", "http://127.0.0.1:1", "--json", "-", "s3://" + bucket + "/stripe/"}
			if apply {
				args = append(args, "--apply")
			}
			code, out, errOut := reconcileCmd(t, args...)
			var r nightResult
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("run exited %d with no result (%v): %s", code, err, errOut)
			}
			return code, r
		}
		find := func(r nightResult, key string) (string, time.Time) {
			for _, d := range r.Discrepancies {
				if d.EffectKey == key {
					return d.Class, d.FirstFound
				}
			}
			return "", time.Time{}
		}

		start1 := time.Now()
		if code, r := night(true); code != exitPerson || r.Counts["mismatched"] != 2 || r.Counts["unexpected"] != 1 {
			t.Fatalf("night 1: exit %d, counts %v; want %d, 2 mismatched, 1 unexpected", code, r.Counts, exitPerson)
		}
		end1 := time.Now()
		paged := pd.triggers()
		if paged != 3 {
			t.Errorf("night 1 paged %d times, want 3 (two mismatches, the unexpected money)", paged)
		}
		if code, out, errOut := reconcileCmd(t, "resolve", "shop:charge:a", "--as", "confirmed", "--note", "price moved by one cent, agreed with the customer",
			"--by", "alice", "--pager-url", pdURL, "--ledger", l.URL); code != 0 {
			t.Fatalf("resolve exited %d: %s%s", code, out, errOut)
		}

		for n := 2; n <= 3; n++ { // the same prefix, nothing new in it
			code, r := night(true)
			if class, _ := find(r, "shop:charge:a"); class != "" {
				t.Errorf("night %d: the resolved effect is %s again", n, class)
			}
			if r.Counts["unexpected"] != 0 {
				t.Errorf("night %d: %d unexpected, want none new", n, r.Counts["unexpected"])
			}
			if class, since := find(r, "shop:charge:b"); class != "mismatched" || since.Before(start1.Truncate(time.Millisecond)) || !since.Before(end1) {
				t.Errorf("night %d: shop:charge:b %s first found %v, want mismatched, found on night 1 (%v to %v)", n, class, since, start1, end1)
			}
			if code != exitPerson {
				t.Errorf("night %d exited %d, want %d: shop:charge:b still needs a person", n, code, exitPerson)
			}
			if got := pd.triggers(); got != paged {
				t.Errorf("night %d paged again: %d triggers, want %d", n, got, paged)
			}
			// The night after the decision counts what it closed: the cent
			// the price moved by; the next night nothing.
			if want := map[string]int64{"EUR": 1}; n == 2 && !maps.Equal(r.Resolved, want) || n == 3 && len(r.Resolved) != 0 {
				t.Errorf("night %d: money_resolved %v", n, r.Resolved)
			}
		}

		// A charge not seen before names the resolved effect: it reopens.
		s3test.Put(t, bucket, map[string][]byte{"stripe/night4.itemized.csv": []byte(header + row("ch_a2", "10.00", "shop:charge:a"))})
		if _, r := night(false); r.Counts["duplicated"] != 1 {
			if class, _ := find(r, "shop:charge:a"); class != "duplicated" {
				t.Errorf("night 4: shop:charge:a is %q, want duplicated: a new charge reopens it", class)
			}
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
