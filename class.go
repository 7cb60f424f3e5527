package reconcile

import "time"

// Class is what reconciliation found for an effect, or for a provider
// transaction that no effect links to.
type Class string

// The classes, as DESIGN section 6 defines them. ClassUnexpected counts provider
// transactions; every other class counts effects.
const (
	ClassConfirmed  Class = "confirmed"  // seen exactly once, as requested
	ClassDuplicated Class = "duplicated" // seen two or more times: compensate the extras
	ClassMissing    Class = "missing"    // seen nowhere, and old enough that it should have been
	ClassPending    Class = "pending"    // seen nowhere yet, created after the cutoff
	ClassMismatched Class = "mismatched" // seen once, with another amount or currency
	ClassUnexpected Class = "unexpected" // a provider transaction no effect of ours links to
	ClassDeferred   Class = "deferred"   // could not be decided now (a lookup was down); retried next run
	ClassEscalated  Class = "escalated"  // a compensation in doubt: a person decides
)

// Classes lists every class in the order reports show them.
var Classes = []Class{ClassConfirmed, ClassDuplicated, ClassMissing, ClassPending, ClassMismatched, ClassUnexpected, ClassDeferred, ClassEscalated}

// ActionKind is what an action does.
type ActionKind string

// The kinds of action.
const (
	// ActionCompensate undoes an extra provider transaction of a duplicated effect
	// (a refund), under the key <effect key>:compensate:<transaction id>.
	ActionCompensate ActionKind = "compensate"
	// ActionRedeliver does a missing effect's work again under its original key,
	// with exactly the recorded request.
	ActionRedeliver ActionKind = "redeliver"
	// ActionEscalate pages a person; its key is the pager's dedup key.
	ActionEscalate ActionKind = "escalate"
)

// Outcome is what became of an action in a run.
type Outcome string

// The outcomes of an action: the JSON result's contract.
const (
	OutcomePlanned    Outcome = "planned"    // decided, not made (no --apply)
	OutcomeApplied    Outcome = "applied"    // made, and confirmed by the provider
	OutcomeSkipped    Outcome = "skipped"    // already made by an earlier run or another process
	OutcomeDeferred   Outcome = "deferred"   // not decided now (a lookup or the provider was down, or the call is in doubt); retried next run
	OutcomeEscalated  Outcome = "escalated"  // handed to a person
	OutcomeSuperseded Outcome = "superseded" // another owner took the action over; this attempt changed nothing
	OutcomeRefused    Outcome = "refused"    // the provider refused it (a key reused with other parameters)
)

// Action is one thing reconciliation decided to do.
type Action struct {
	Kind ActionKind `json:"kind"`
	// Key is the action's own idempotency key, derived only from recorded
	// facts, so every run and replica derives the same one.
	Key string `json:"key"`
	// Target is what the action acts on: the extra transaction's id for a
	// compensation, the effect key for a redelivery or a page.
	Target  string  `json:"target"`
	Outcome Outcome `json:"outcome"`
	Amount  Money   `json:"amount"` // the money the action moves, for blast-radius limits and reports
	// Made is what the provider made or a lookup found (re_…, pi_…), once known.
	Made string `json:"made,omitempty"`
	// Note says in words why the outcome is what it is.
	Note string `json:"note,omitempty"`
}

// Transaction is one provider transaction as reconciliation sees it: the
// evidence records that describe it, merged.
type Transaction struct {
	Provider      string
	ID            string // the provider's identity of it; see Evidence.TxID
	Kind          Kind
	Amount        Money
	Time          time.Time
	Pending       bool
	Failed        bool
	EffectKeys    []string // every effect key its records name, sorted: one may be a client library's own idempotency key
	ParentKey     string   // Evidence.ParentEffectKey
	PaymentIntent string
	ParentTxID    string
	Records       int // how many evidence records describe it
	// Corroborated is true when a record other than a webhook event
	// describes it: a settlement report line, a bank entry.
	Corroborated bool
	// Conflict says, in words, how its records disagree (on the effect
	// they name, the amount or the currency); empty when they agree. A
	// transaction in conflict links to no effect.
	Conflict string
}

// Discrepancy is the finding for one effect (or one unexpected
// transaction), with the actions planned for it.
type Discrepancy struct {
	Class         Class
	EffectKey     string // empty for an unexpected transaction
	Provider      string
	Currency      string
	ExpectedMinor int64 // the request's amount
	ObservedMinor int64 // what the provider moved, by magnitude; for a duplicate, the sum over its transactions
	Transactions  []Transaction
	// Related are the refunds, disputes and chargebacks of the effect's
	// charge that no effect of ours made (a refund a person made in the
	// provider's dashboard): shown with the effect, never counted as its
	// evidence.
	Related []Transaction
	Actions []Action
	Reason  string // in words, for people
}
