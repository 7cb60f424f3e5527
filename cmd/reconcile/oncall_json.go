package main

import (
	"encoding/json"
	"time"

	"reconcile"
	"reconcile/job"
	"reconcile/report"
)

// The JSON of the on-call commands (`show --json`, `escalations --json`):
// snake_case keys, and null for a time that is not set, as the run's
// result writes them.

type effectJSON struct {
	Key         string          `json:"key"`
	RunID       string          `json:"run_id"`
	Step        string          `json:"step"`
	Provider    string          `json:"provider"`
	Status      string          `json:"status"`
	ExternalID  string          `json:"external_id"`
	Request     json.RawMessage `json:"request"`
	Response    json.RawMessage `json:"response"`
	CreatedAt   *time.Time      `json:"created_at"`
	ConfirmedAt *time.Time      `json:"confirmed_at"`
	ParentKey   string          `json:"parent_key"`
	Depth       int             `json:"depth"`
}

func effectOut(e *reconcile.Effect) effectJSON {
	return effectJSON{Key: e.Key, RunID: e.RunID, Step: e.Step, Provider: e.Provider, Status: string(e.Status), ExternalID: e.ExternalID,
		Request: rawOrNull(e.Request), Response: rawOrNull(e.Response), CreatedAt: timeOrNil(e.CreatedAt), ConfirmedAt: timeOrNil(e.ConfirmedAt),
		ParentKey: e.ParentKey, Depth: e.Depth}
}

type stateJSON struct {
	Class        string     `json:"class"`
	Final        bool       `json:"final"`
	RunID        string     `json:"run_id"`
	ClassifiedAt *time.Time `json:"classified_at"`
	Since        *time.Time `json:"since"`
}

type evidenceJSON struct {
	Provider        string            `json:"provider"`
	TxID            string            `json:"tx_id"`
	Kind            string            `json:"kind"`
	RawKind         string            `json:"raw_kind"`
	AmountMinor     int64             `json:"amount_minor"`
	Currency        string            `json:"currency"`
	FeeMinor        int64             `json:"fee_minor"`
	Time            *time.Time        `json:"time"`
	Pending         bool              `json:"pending"`
	Failed          bool              `json:"failed"`
	EffectKey       string            `json:"effect_key"`
	ParentEffectKey string            `json:"parent_effect_key"`
	PaymentIntent   string            `json:"payment_intent"`
	ParentTxID      string            `json:"parent_tx_id"`
	Description     string            `json:"description"`
	Metadata        map[string]string `json:"metadata"`
	URI             string            `json:"uri"`
	Line            int               `json:"line"`
	Raw             string            `json:"raw"`
	Webhook         bool              `json:"webhook"`
}

type claimJSON struct {
	Key        string          `json:"key"`
	Owner      string          `json:"owner"`
	Fence      int64           `json:"fence"`
	State      string          `json:"state"`
	LeaseUntil *time.Time      `json:"lease_until"`
	Result     json.RawMessage `json:"result"`
	Error      string          `json:"error"`
	ClaimedAt  *time.Time      `json:"claimed_at"`
	SettledAt  *time.Time      `json:"settled_at"`
}

func escalationsOut(es []job.EscalationView) []report.Escalation {
	out := make([]report.Escalation, len(es))
	for i := range es {
		out[i] = report.EscalationOf(&es[i].Escalation)
		out[i].PageFailed, out[i].PageError = es[i].PageFailed, es[i].PageError
	}
	return out
}

// findingJSON is one run's finding about the effect: the run and when it
// started, and the finding as the run's result writes it.
type findingJSON struct {
	RunID string     `json:"run_id"`
	At    *time.Time `json:"at"`
	report.Discrepancy
}

type showJSON struct {
	Effect        effectJSON          `json:"effect"`
	State         *stateJSON          `json:"state"`
	Evidence      []evidenceJSON      `json:"evidence"`
	Claims        []claimJSON         `json:"actions"`
	Compensations []effectJSON        `json:"compensations"`
	Escalations   []report.Escalation `json:"escalations"`
	History       []findingJSON       `json:"history"`
}

func showOut(r *job.EffectView) *showJSON {
	out := &showJSON{Effect: effectOut(r.Effect), Evidence: []evidenceJSON{}, Claims: []claimJSON{}, Compensations: []effectJSON{},
		Escalations: escalationsOut(r.Escalations), History: []findingJSON{}}
	if st := r.State; st != nil {
		out.State = &stateJSON{Class: string(st.Class), Final: st.Final, RunID: st.RunID, ClassifiedAt: timeOrNil(st.ClassifiedAt), Since: timeOrNil(st.Since)}
	}
	for _, e := range r.Evidence {
		out.Evidence = append(out.Evidence, evidenceJSON{Provider: e.Provider, TxID: e.TxID, Kind: string(e.Kind), RawKind: e.RawKind,
			AmountMinor: e.Amount.Minor, Currency: e.Amount.Currency, FeeMinor: e.Fee, Time: timeOrNil(e.Time), Pending: e.Pending, Failed: e.Failed,
			EffectKey: e.EffectKey, ParentEffectKey: e.ParentEffectKey, PaymentIntent: e.PaymentIntent, ParentTxID: e.ParentTxID,
			Description: e.Description, Metadata: e.Metadata, URI: e.URI, Line: e.Line, Raw: e.Raw, Webhook: e.Webhook})
	}
	for _, c := range r.Claims {
		out.Claims = append(out.Claims, claimJSON{Key: c.Key, Owner: c.Owner, Fence: c.Fence, State: string(c.State), LeaseUntil: timeOrNil(c.LeaseUntil),
			Result: rawOrNull(c.Result), Error: c.Error, ClaimedAt: timeOrNil(c.ClaimedAt), SettledAt: timeOrNil(c.SettledAt)})
	}
	for i := range r.Compensations {
		out.Compensations = append(out.Compensations, effectOut(&r.Compensations[i]))
	}
	for _, f := range r.History {
		out.History = append(out.History, findingJSON{RunID: f.RunID, At: timeOrNil(f.At), Discrepancy: report.FindingOf(&f.Discrepancy)})
	}
	return out
}

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("null")
	}
	return b
}
