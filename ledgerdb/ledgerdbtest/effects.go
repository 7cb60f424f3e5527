package ledgerdbtest

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ledgerdb"
)

func testMigrateTwiceIsNoop(e *env) {
	applied, err := e.store.SchemaMigrate(e.ctx)
	if err != nil {
		e.t.Fatalf("second Migrate: %v", err)
	}
	if len(applied) != 0 {
		e.t.Errorf("second Migrate applied %d migrations, want none", len(applied))
	}
	if err := e.store.SchemaCheck(e.ctx); err != nil {
		e.t.Errorf("SchemaCheck after Migrate: %v", err)
	}
}

const chargeReq = `{"amount": 1420000, "currency": "eur", "customer": "acct_5512", "metadata": {"effect_key": "run_8f3c1a:charge:0", "order_ref": "PO-2026-0041"}}`

func testRecordAttemptCreates(e *env) {
	key := reconcile.EffectKey("run_8f3c1a", "charge", 0)
	r := e.record(key, chargeReq)
	if !r.Created {
		e.t.Errorf("EffectRecord on a new key: Created = false, want true")
	}
	want := reconcile.Effect{Key: "run_8f3c1a:charge:0", RunID: "run_8f3c1a", Step: "charge", Provider: "stripe",
		Status: reconcile.StatusAttempted, CreatedAt: e.clock.Now()}
	got := *e.effect(key)
	jsonEqual(e.t, got.Request, chargeReq)
	got.Request = nil
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("Effect after EffectRecord (-want +got):\n%s", diff)
	}
}

func testRecordAttemptSameRequest(e *env) {
	e.record("k:charge:0", chargeReq)
	e.clock.Advance(time.Hour)
	r := e.record("k:charge:0", chargeReq)
	if r.Created {
		e.t.Errorf("second EffectRecord: Created = true, want false")
	}
	if !r.Effect.CreatedAt.Equal(e.clock.Now().Add(-time.Hour)) {
		e.t.Errorf("second EffectRecord returned CreatedAt %v, want the first row's %v", r.Effect.CreatedAt, e.clock.Now().Add(-time.Hour))
	}
}

func testRecordAttemptFieldOrder(e *env) {
	e.record("k:charge:0", chargeReq)
	reordered := `{"metadata":{"order_ref":"PO-2026-0041","effect_key":"run_8f3c1a:charge:0"},"customer":"acct_5512","currency":"eur","amount":1420000}`
	r := e.record("k:charge:0", reordered)
	if r.Created {
		e.t.Errorf("EffectRecord with reordered fields: Created = true, want the existing row")
	}
}

func testRecordAttemptRefusesReuse(e *env) {
	e.record("k:charge:0", chargeReq)
	moved := `{"amount": 1450000, "currency": "eur", "customer": "acct_5512", "metadata": {"effect_key": "run_8f3c1a:charge:0", "order_ref": "PO-2026-0041"}}`
	_, err := e.store.EffectRecord(e.ctx, &ledgerdb.RecordParams{Key: "k:charge:0", RunID: "run_8f3c1a", Step: "charge", Provider: "stripe", Request: json.RawMessage(moved)})
	if !errors.Is(err, reconcile.ErrKeyReused) {
		e.t.Fatalf("EffectRecord with a moved price: error %v, want ErrKeyReused", err)
	}
	var kr *reconcile.KeyReusedError
	if !errors.As(err, &kr) || kr.Key != "k:charge:0" {
		e.t.Errorf("error %v is not a *KeyReusedError for k:charge:0", err)
	}
	jsonEqual(e.t, e.effect("k:charge:0").Request, chargeReq)
	// A different step under the same key is a reuse too.
	_, err = e.store.EffectRecord(e.ctx, &ledgerdb.RecordParams{Key: "k:charge:0", RunID: "run_8f3c1a", Step: "refund", Provider: "stripe", Request: json.RawMessage(chargeReq)})
	if !errors.Is(err, reconcile.ErrKeyReused) {
		e.t.Errorf("EffectRecord with another step: error %v, want ErrKeyReused", err)
	}
}

func testRecordAttemptInvalid(e *env) {
	for _, req := range []string{``, `not json`, `[1,2]`, `{"a":1} {"b":2}`} {
		_, err := e.store.EffectRecord(e.ctx, &ledgerdb.RecordParams{Key: "k:charge:0", RunID: "r", Step: "charge", Provider: "stripe", Request: json.RawMessage(req)})
		if err == nil {
			e.t.Errorf("EffectRecord(request %q) succeeded, want an error", req)
		}
	}
	if _, err := e.store.EffectGet(e.ctx, "k:charge:0"); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("after invalid requests, Effect error = %v, want ErrNotFound", err)
	}
}

func testConfirm(e *env) {
	e.record("k:charge:0", chargeReq)
	e.clock.Advance(3 * time.Second)
	got, err := e.store.EffectConfirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:0", ExternalID: "pi_3PqR", Response: json.RawMessage(`{"id":"pi_3PqR","status":"succeeded"}`)})
	if err != nil {
		e.t.Fatalf("Confirm: %v", err)
	}
	if got.Status != reconcile.StatusConfirmed || got.ExternalID != "pi_3PqR" || !got.ConfirmedAt.Equal(e.clock.Now()) {
		e.t.Errorf("Confirm = status %s, external id %q, confirmed at %v; want confirmed, pi_3PqR, %v", got.Status, got.ExternalID, got.ConfirmedAt, e.clock.Now())
	}
	jsonEqual(e.t, e.effect("k:charge:0").Response, `{"id":"pi_3PqR","status":"succeeded"}`)
}

func testConfirmTwice(e *env) {
	e.record("k:charge:0", chargeReq)
	if _, err := e.store.EffectConfirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:0", ExternalID: "pi_1"}); err != nil {
		e.t.Fatalf("Confirm: %v", err)
	}
	if _, err := e.store.EffectConfirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:0", ExternalID: "pi_1"}); err != nil {
		e.t.Errorf("Confirm again with the same id: %v, want the row", err)
	}
	_, err := e.store.EffectConfirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:0", ExternalID: "pi_2"})
	if !errors.Is(err, reconcile.ErrInvalidTransition) {
		e.t.Errorf("Confirm with another id: error %v, want ErrInvalidTransition", err)
	}
	if got := e.effect("k:charge:0").ExternalID; got != "pi_1" {
		e.t.Errorf("external id after a refused confirm = %q, want pi_1", got)
	}
}

func testAbandon(e *env) {
	e.record("k:charge:0", chargeReq)
	got, err := e.store.EffectAbandon(e.ctx, &ledgerdb.AbandonParams{Key: "k:charge:0"})
	if err != nil || got.Status != reconcile.StatusAbandoned {
		e.t.Fatalf("Abandon = %v, %v; want abandoned", got, err)
	}
	if _, err := e.store.EffectConfirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:0", ExternalID: "pi_1"}); !errors.Is(err, reconcile.ErrInvalidTransition) {
		e.t.Errorf("Confirm an abandoned effect: error %v, want ErrInvalidTransition", err)
	}
	e.record("k:charge:1", chargeReq)
	if _, err := e.store.EffectConfirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:1", ExternalID: "pi_1"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.EffectAbandon(e.ctx, &ledgerdb.AbandonParams{Key: "k:charge:1"}); !errors.Is(err, reconcile.ErrInvalidTransition) {
		e.t.Errorf("Abandon a confirmed effect: error %v, want ErrInvalidTransition", err)
	}
	if got := e.effect("k:charge:1").Status; got != reconcile.StatusConfirmed {
		e.t.Errorf("status after a refused abandon = %s, want confirmed", got)
	}
}

func testUnknownEffect(e *env) {
	if _, err := e.store.EffectGet(e.ctx, "nope:charge:0"); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("Effect(unknown) error = %v, want ErrNotFound", err)
	}
	if _, err := e.store.EffectConfirm(e.ctx, &ledgerdb.ConfirmParams{Key: "nope:charge:0", ExternalID: "x"}); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("Confirm(unknown) error = %v, want ErrNotFound", err)
	}
	if _, err := e.store.EffectAbandon(e.ctx, &ledgerdb.AbandonParams{Key: "nope:charge:0"}); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("Abandon(unknown) error = %v, want ErrNotFound", err)
	}
}

func testLoadEffects(e *env) {
	confirmedAt := e.clock.Now().Add(time.Minute)
	in := []reconcile.Effect{
		{Key: "w:charge:0", RunID: "w", Step: "charge", Provider: "stripe", Status: reconcile.StatusConfirmed, ExternalID: "pi_0",
			Request: json.RawMessage(`{"amount":100,"currency":"eur"}`), Response: json.RawMessage(`{"id":"pi_0"}`), CreatedAt: e.clock.Now(), ConfirmedAt: confirmedAt},
		{Key: "w:charge:1", RunID: "w", Step: "charge", Provider: "stripe", Status: reconcile.StatusAttempted,
			Request: json.RawMessage(`{"amount":200,"currency":"eur"}`), CreatedAt: e.clock.Now()},
	}
	if err := e.store.EffectLoad(e.ctx, in); err != nil {
		e.t.Fatal(err)
	}
	for _, want := range in {
		got := e.effect(want.Key)
		jsonEqual(e.t, got.Request, string(want.Request))
		if want.Response != nil {
			jsonEqual(e.t, got.Response, string(want.Response))
		}
		got.Request, got.Response, want.Request, want.Response = nil, nil, nil, nil
		if diff := cmp.Diff(want, *got); diff != "" {
			e.t.Errorf("loaded effect (-want +got):\n%s", diff)
		}
	}
	if err := e.store.EffectLoad(e.ctx, in[1:]); err == nil {
		e.t.Errorf("loading an existing key succeeded")
	}
}
