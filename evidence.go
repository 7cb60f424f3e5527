package reconcile

import "time"

// Kind says what a provider transaction did with money.
type Kind string

// The kinds of evidence. The set is open at the providers' end: parsers map
// the categories they know and keep the provider's own word in RawKind.
const (
	KindCharge     Kind = "charge"     // a charge, capture or settled payment: money in
	KindRefund     Kind = "refund"     // money returned to the payer
	KindDispute    Kind = "dispute"    // a chargeback or dispute, and its reversal
	KindFee        Kind = "fee"        // a fee not tied to one transaction's gross
	KindPayout     Kind = "payout"     // money out to our own bank account, and its reversal
	KindTransfer   Kind = "transfer"   // money moved between accounts of ours
	KindAdjustment Kind = "adjustment" // corrections, invoice deductions, balance transfers
	KindOther      Kind = "other"      // a category we do not know yet
)

// Evidence is one normalized record of the provider's own account of what
// happened: a settlement line, a report row, a webhook event, a bank entry.
type Evidence struct {
	Provider string // stripe | adyen | paypal | bank | ...
	// TxID is the provider transaction's identity: a Stripe ch_, re_, du_ or
	// po_ id, an Adyen PSP reference plus modification reference ("PSP/MOD"),
	// a PayPal transaction id, a bank entry reference. Several records may
	// carry the same TxID: they describe one transaction. Empty when the row
	// names no transaction (a batch fee line).
	TxID    string
	Kind    Kind
	RawKind string // the provider's own category: "charge", "Settled", "T0006", ...
	// Amount is the signed gross in minor units: positive for money in,
	// negative for money out (a refund, a chargeback, a payout).
	Amount Money
	Fee    int64     // the fee for this transaction in minor units of Amount's currency, positive as a cost; 0 when unknown
	Time   time.Time // when it happened, UTC
	// Pending is true when the provider says the transaction is not final yet
	// (a camt.053 PDNG entry, a pending refund).
	Pending bool
	// Failed is true when the provider says the transaction did not happen
	// (a failed or canceled refund).
	Failed bool

	// Links to our side.
	EffectKey       string // our effect key: metadata effect_key, merchant reference or idempotency key
	ParentEffectKey string // the effect key of the transaction this one modifies (a refunded charge's)
	PaymentIntent   string // Stripe pi_ id, when known
	ParentTxID      string // the transaction this one modifies: a refund's charge, a chargeback's payment
	Description     string
	Metadata        map[string]string

	// Provenance.
	URI        string // where it was read: a path or s3://bucket/key
	SourceHash string // hex SHA-256 of the source's content
	Line       int    // 1-based line (or entry start line) in the source
	Raw        string // the row as read
	// Webhook is true when the record came from a webhook event dump: the
	// provider's notification, which anyone who can write a line into the
	// dump can invent. It is evidence, but it does not corroborate a
	// transaction by itself; a settlement report line or a retrieval does.
	Webhook bool
	// SourceID and Seq say where the ledger holds the record (its source's
	// id, its number there), when a run's matching has it from the run's
	// own ingest; zero otherwise. Not the record's content: not in JSON.
	SourceID int64 `json:"-"`
	Seq      int   `json:"-"`
}

// Rejected is an input row that could not become evidence. It is kept,
// counted and reported, never dropped.
type Rejected struct {
	URI    string
	Line   int // 1-based line on which the row starts; a CSV header is line 1
	Reason string
	Raw    string
}

// RowSink receives the outcome of every row a parser reads: evidence, a
// rejection or an ignored row with its reason. Callers count the calls, so
// rows read = evidence + rejected + ignored; a webhook event that carries
// several refunds gives several evidence records (each with the event's
// Line) and counts as that many rows. Lines need not be unique: every entry
// of a one-line JSON array or XML file is on line 1. A parser stops and
// returns the sink's error when a method fails.
type RowSink interface {
	Evidence(e *Evidence) error
	Reject(line int, raw, reason string) error
	Ignore(line int, reason string) error
}
