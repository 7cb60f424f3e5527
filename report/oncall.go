package report

import (
	"encoding/json"
	"time"

	"reconcile"
)

// The shapes `reconcile show --json` writes an effect in: what the ledger
// holds of it, its evidence, the claims of its actions, its compensations,
// its escalations and the findings about it, with snake_case keys and null
// for a time not set, as the run's result writes them.

// Show is everything the ledger knows of one effect.
type Show struct {
	Effect        Effect          `json:"effect"`
	State         *EffectState    `json:"state"`
	Evidence      []Evidence      `json:"evidence"`
	Claims        []Claim         `json:"actions"`
	Compensations []Effect        `json:"compensations"`
	Escalations   []Escalation    `json:"escalations"`
	History       []EffectFinding `json:"history"`
}

// Effect is an effect as the ledger holds it.
type Effect struct {
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

// EffectOf is e as the outputs show it.
func EffectOf(e *reconcile.Effect) Effect {
	return Effect{Key: e.Key, RunID: e.RunID, Step: e.Step, Provider: e.Provider, Status: string(e.Status), ExternalID: e.ExternalID,
		Request: rawOrNull(e.Request), Response: rawOrNull(e.Response), CreatedAt: NullTime(e.CreatedAt), ConfirmedAt: NullTime(e.ConfirmedAt),
		ParentKey: e.ParentKey, Depth: e.Depth}
}

// EffectState is the class the last run that classified an effect gave it.
type EffectState struct {
	Class        string     `json:"class"`
	Final        bool       `json:"final"`
	RunID        string     `json:"run_id"`
	ClassifiedAt *time.Time `json:"classified_at"`
	Since        *time.Time `json:"since"`
}

// EffectStateOf is st as the outputs show it.
func EffectStateOf(st *reconcile.EffectState) *EffectState {
	return &EffectState{Class: string(st.Class), Final: st.Final, RunID: st.RunID, ClassifiedAt: NullTime(st.ClassifiedAt), Since: NullTime(st.Since)}
}

// Evidence is a record of a provider's file, with where it was read.
// Description, metadata and raw are empty when the ledger keeps no details
// of the record: one that a run ingested and matched, and that none of its
// findings named (README, "The ledger").
type Evidence struct {
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

// EvidenceOf is e as the outputs show it.
func EvidenceOf(e *reconcile.Evidence) Evidence {
	return Evidence{Provider: e.Provider, TxID: e.TxID, Kind: string(e.Kind), RawKind: e.RawKind,
		AmountMinor: e.Amount.Minor, Currency: e.Amount.Currency, FeeMinor: e.Fee, Time: NullTime(e.Time), Pending: e.Pending, Failed: e.Failed,
		EffectKey: e.EffectKey, ParentEffectKey: e.ParentEffectKey, PaymentIntent: e.PaymentIntent, ParentTxID: e.ParentTxID,
		Description: e.Description, Metadata: e.Metadata, URI: e.URI, Line: e.Line, Raw: e.Raw, Webhook: e.Webhook}
}

// Claim is the claim an action is made under.
type Claim struct {
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

// ClaimOf is c as the outputs show it.
func ClaimOf(c *reconcile.Claim) Claim {
	return Claim{Key: c.Key, Owner: c.Owner, Fence: c.Fence, State: string(c.State), LeaseUntil: NullTime(c.LeaseUntil),
		Result: rawOrNull(c.Result), Error: c.Error, ClaimedAt: NullTime(c.ClaimedAt), SettledAt: NullTime(c.SettledAt)}
}

// EffectFinding is one run's finding about an effect: the run and when it
// started, and the finding as the run's result writes it.
type EffectFinding struct {
	RunID string     `json:"run_id"`
	At    *time.Time `json:"at"`
	Discrepancy
}

// rawOrNull is b, or null when it is empty or not JSON.
func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("null")
	}
	return b
}
