package sandbox

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"reconcile"
)

// apiVersion is the API version the sandbox's events say they were written
// with: the one stripe-go v82 asks for.
const apiVersion = "2025-08-27.basil"

// event records a webhook event, with s.mu held. obj is a snapshot of the
// object as it was when the event happened.
func (s *Server) event(typ string, at time.Time, obj any, reqID, key string) {
	var idem *string
	if key != "" {
		idem = &key
	}
	type request struct {
		ID             string  `json:"id"`
		IdempotencyKey *string `json:"idempotency_key"`
	}
	ev := struct {
		ID         string `json:"id"`
		Object     string `json:"object"`
		APIVersion string `json:"api_version"`
		Created    int64  `json:"created"`
		Data       struct {
			Object any `json:"object"`
		} `json:"data"`
		Livemode        bool    `json:"livemode"`
		PendingWebhooks int     `json:"pending_webhooks"`
		Request         request `json:"request"`
		Type            string  `json:"type"`
	}{ID: newID("evt_"), Object: "event", APIVersion: apiVersion, Created: at.Unix(), Livemode: s.livemode,
		PendingWebhooks: 1, Request: request{ID: reqID, IdempotencyKey: idem}, Type: typ}
	ev.Data.Object = obj
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err) // our own types always marshal
	}
	s.events = append(s.events, b)
}

// ExportEvents writes the webhook events for what the sandbox did, as JSON
// Lines in the order they happened: payment_intent.succeeded and
// charge.succeeded for each payment, refund.created and charge.refunded for
// each refund. Each event's request.idempotency_key is the key of the
// request that caused it.
func (s *Server) ExportEvents(w io.Writer) error {
	s.mu.Lock()
	var buf bytes.Buffer
	for _, ev := range s.events {
		buf.Write(ev)
		buf.WriteByte('\n')
	}
	s.mu.Unlock()
	_, err := w.Write(buf.Bytes())
	return err
}

// ExportItemized writes what the sandbox did as a Stripe "Balance change
// from activity" itemized report (CSV): one charge row per payment charged
// (a bank debit's from when it is processing), one refund row per refund,
// one dispute row per chargeback (Dispute), one charge_failure row per
// bank debit returned (Return) and one refund_failure row per refund that
// failed (FailRefund), in the order they happened.
// Amounts are decimals in major units with Stripe's exponent for the
// currency; the sandbox charges no fees. A refund row carries the refunded
// charge's id and payment metadata, and its own refund metadata. Every
// metadata key in use gets a column.
func (s *Server) ExportItemized(w io.Writer) error { return s.ExportItemizedSince(w, time.Time{}) }

// ExportItemizedSince writes the itemized report of what the sandbox did
// at or after since: the report of a new period, as a provider sends one
// each night.
func (s *Server) ExportItemizedSince(w io.Writer, since time.Time) error {
	s.mu.Lock()
	payKeys, refKeys := map[string]bool{"effect_key": true}, map[string]bool{"effect_key": true, "compensates": true}
	for _, p := range s.payments {
		for k := range p.Metadata {
			payKeys[k] = true
		}
	}
	for _, rf := range s.refunds {
		for k := range rf.Metadata {
			refKeys[k] = true
		}
	}
	payCols, refCols := metaColumns(payKeys), metaColumns(refKeys)
	header := []string{"balance_transaction_id", "created_utc", "charge_id", "payment_intent_id", "source_id",
		"reporting_category", "currency", "gross", "fee", "net", "description", "customer_id"}
	for _, k := range payCols {
		header = append(header, "payment_metadata["+k+"]")
	}
	for _, k := range refCols {
		header = append(header, "refund_metadata["+k+"]")
	}
	rows := [][]string{header}
	row := func(txn string, at time.Time, p *payment, source, category string, amount int64, desc string, refundMeta map[string]string) {
		exp, err := reconcile.Exponent("stripe", strings.ToUpper(p.Currency))
		if err != nil {
			panic(err) // currencies are checked when a payment is made
		}
		gross := reconcile.FormatMinor(amount, exp)
		customer := ""
		if c := param(p.Params, "customer"); c != nil {
			customer = *c
		}
		r := []string{txn, at.UTC().Format(time.DateTime), p.ChargeID, p.ID, source, category, p.Currency,
			gross, reconcile.FormatMinor(0, exp), gross, desc, customer}
		for _, k := range payCols {
			r = append(r, p.Metadata[k])
		}
		for _, k := range refCols {
			r = append(r, refundMeta[k])
		}
		if !at.Before(since) {
			rows = append(rows, r)
		}
	}
	// Every movement in the order it happened (payments first at a tie,
	// then refunds, then disputes).
	type movement struct {
		at  time.Time
		add func()
	}
	var moves []movement
	for _, p := range s.payments {
		if p.ChargeID != "" {
			moves = append(moves, movement{p.Created, func() {
				row(p.txn, p.Created, p, p.ChargeID, "charge", p.Amount, p.Params.Get("description"), nil)
			}})
		}
		if p.failure != "" {
			moves = append(moves, movement{p.returned, func() {
				row(p.failure, p.returned, p, p.ChargeID, "charge_failure", -p.Amount, "Payment failure for "+p.ChargeID, nil)
			}})
		}
	}
	for _, rf := range s.refunds {
		p := s.charges[rf.Charge]
		desc := "REFUND FOR CHARGE"
		if d := p.Params.Get("description"); d != "" {
			desc += " (" + d + ")"
		}
		moves = append(moves, movement{rf.Created, func() { row(rf.txn, rf.Created, p, rf.ID, "refund", -rf.Amount, desc, rf.Metadata) }})
		if rf.failure != "" {
			moves = append(moves, movement{rf.failed, func() {
				row(rf.failure, rf.failed, p, rf.ID, "refund_failure", rf.Amount, "REFUND FAILURE", rf.Metadata)
			}})
		}
	}
	for _, d := range s.disputes {
		moves = append(moves, movement{d.created, func() {
			row(d.txn, d.created, d.charge, d.id, "dispute", -d.charge.Amount, "Chargeback withdrawal for "+d.charge.ChargeID, nil)
		}})
	}
	slices.SortStableFunc(moves, func(a, b movement) int { return a.at.Compare(b.at) })
	for _, m := range moves {
		m.add()
	}
	s.mu.Unlock()

	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.WriteAll(rows) // a bytes.Buffer does not fail
	_, err := w.Write(buf.Bytes())
	return err
}

// metaColumns orders metadata keys for the report: effect_key and
// compensates first, then the rest by name.
func metaColumns(keys map[string]bool) []string {
	first := []string{"effect_key", "compensates"}
	var cols []string
	for _, k := range first {
		if keys[k] {
			cols = append(cols, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Contains(first, k) {
			cols = append(cols, k)
		}
	}
	return cols
}
