package stripe

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

// disputeObj is a dispute of 10.00 USD with the given status and balance
// transactions (JSON objects); no bts at all leaves balance_transactions
// out, an empty list gives an empty array.
func disputeObj(status string, bts ...string) string {
	list := ""
	if bts != nil {
		list = `,"balance_transactions":[` + strings.Join(bts, ",") + `]`
	}
	return fmt.Sprintf(`{"id":"du_1","object":"dispute","amount":1000,"currency":"usd","status":%q,"charge":"ch_1","payment_intent":"pi_1","reason":"fraudulent","metadata":{}%s}`, status, list)
}

// btx is a dispute's balance transaction in USD, as Stripe lists it: a
// withdrawal when amount is negative, a reinstatement when positive.
func btx(id string, amount, fee, created int64) string {
	return btxIn(id, "usd", amount, fee, created)
}

func btxIn(id, currency string, amount, fee, created int64) string {
	category := "dispute"
	if amount > 0 {
		category = "dispute_reversal"
	}
	return fmt.Sprintf(`{"id":%q,"object":"balance_transaction","amount":%d,"available_on":%d,"created":%d,"currency":%q,"description":"Chargeback withdrawal for ch_1","fee":%d,"fee_details":[],"net":%d,"reporting_category":%q,"source":"du_1","status":"available","type":"adjustment"}`,
		id, amount, created, created, currency, fee, amount-fee, category)
}

// The balance transactions of one dispute: withdrawn with a 15.00 fee,
// then 9.00 of the 10.00 reinstated, the fee kept.
var (
	withdrawal    = btx("txn_w", -1000, 1500, 1740000000)
	reinstatement = btx("txn_r", 900, 0, 1740900000)
)

// disputeRecord is what the dispute tests compare of a record.
type disputeRecord struct {
	Amount          reconcile.Money
	Fee             int64
	Pending, Failed bool
	Txn, Note       string // Metadata balance_transaction_id and amount_note
}

func disputeRecordOf(e *reconcile.Evidence) disputeRecord {
	return disputeRecord{e.Amount, e.Fee, e.Pending, e.Failed, e.Metadata["balance_transaction_id"], e.Metadata["amount_note"]}
}

const (
	noWithdrawal    = "the dispute's amount: the dispute lists no balance transaction that withdrew it"
	noReinstatement = "the dispute's amount: the dispute lists no balance transaction that reinstated it"
)

func TestDisputeAmountIsItsBalanceTransaction(t *testing.T) {
	for _, tc := range []struct {
		name, typ, obj string
		want           disputeRecord
	}{
		{"partial reinstatement", "charge.dispute.funds_reinstated", disputeObj("won", withdrawal, reinstatement),
			disputeRecord{Amount: usd(900), Txn: "txn_r"}},
		{"withdrawal with its fee", "charge.dispute.funds_withdrawn", disputeObj("needs_response", withdrawal),
			disputeRecord{Amount: usd(-1000), Fee: 1500, Txn: "txn_w"}},
		{"reinstatement returning the fee", "charge.dispute.funds_reinstated", disputeObj("won", withdrawal, btx("txn_r", 1000, -1500, 1740900000)),
			disputeRecord{Amount: usd(1000), Fee: -1500, Txn: "txn_r"}},
		{"withdrawal after its reinstatement is listed", "charge.dispute.funds_withdrawn", disputeObj("lost", reinstatement, withdrawal),
			disputeRecord{Amount: usd(-1000), Fee: 1500, Txn: "txn_w"}},
		{"the latest of two reinstatements, wherever listed", "charge.dispute.funds_reinstated",
			disputeObj("won", btx("txn_r2", 700, 0, 1740950000), withdrawal, btx("txn_r1", 900, 0, 1740900000)),
			disputeRecord{Amount: usd(700), Txn: "txn_r2"}},
		{"balance transaction in the account's currency", "charge.dispute.funds_withdrawn", disputeObj("needs_response", btxIn("txn_w", "eur", -920, 1400, 1740000000)),
			disputeRecord{Amount: reconcile.Money{Minor: -920, Currency: "EUR"}, Fee: 1400, Txn: "txn_w"}},
		{"withdrawal without balance_transactions", "charge.dispute.funds_withdrawn", disputeObj("needs_response"),
			disputeRecord{Amount: usd(-1000), Note: noWithdrawal}},
		{"withdrawal with none listed", "charge.dispute.funds_withdrawn", disputeObj("needs_response", []string{}...),
			disputeRecord{Amount: usd(-1000), Note: noWithdrawal}},
		{"reinstatement with only the withdrawal listed", "charge.dispute.funds_reinstated", disputeObj("won", withdrawal),
			disputeRecord{Amount: usd(1000), Note: noReinstatement}},
		{"dispute opened: its withdrawal", "charge.dispute.created", disputeObj("needs_response", withdrawal),
			disputeRecord{Amount: usd(-1000), Fee: 1500, Txn: "txn_w"}},
		{"evidence submitted: still the withdrawal", "charge.dispute.updated", disputeObj("under_review", withdrawal),
			disputeRecord{Amount: usd(-1000), Fee: 1500, Txn: "txn_w"}},
		{"closed won: its reinstatement", "charge.dispute.closed", disputeObj("won", withdrawal, reinstatement),
			disputeRecord{Amount: usd(900), Txn: "txn_r"}},
		{"closed won listing no reinstatement: the withdrawal again", "charge.dispute.closed", disputeObj("won", withdrawal),
			disputeRecord{Amount: usd(-1000), Fee: 1500, Txn: "txn_w"}},
		{"closed lost: the withdrawal, nothing new", "charge.dispute.closed", disputeObj("lost", withdrawal),
			disputeRecord{Amount: usd(-1000), Fee: 1500, Txn: "txn_w"}},
		{"inquiry opened", "charge.dispute.created", disputeObj("warning_needs_response", []string{}...),
			disputeRecord{Amount: usd(-1000), Pending: true}},
		{"inquiry closed", "charge.dispute.closed", disputeObj("warning_closed", []string{}...),
			disputeRecord{Amount: usd(-1000), Failed: true}},
	} {
		e := oneEvidence(t, evt("evt_1", tc.typ, tc.obj))
		if diff := cmp.Diff(tc.want, disputeRecordOf(e)); diff != "" {
			t.Errorf("%s: %s: (-want +got)\n%s", tc.name, tc.typ, diff)
		}
		if e.TxID != "du_1" || e.ParentTxID != "ch_1" || e.Kind != reconcile.KindDispute || e.Metadata["event_id"] != "evt_1" {
			t.Errorf("%s: TxID %q, ParentTxID %q, Kind %q, event_id %q; want du_1, ch_1, dispute, evt_1", tc.name, e.TxID, e.ParentTxID, e.Kind, e.Metadata["event_id"])
		}
	}
}

// TestDisputeWithoutMovementIsIgnored checks that an event about a dispute
// whose object lists no balance transaction, other than an inquiry's and
// the funds events, gives no record that could be read as money moved.
func TestDisputeWithoutMovementIsIgnored(t *testing.T) {
	for _, tc := range []struct {
		typ, obj, reason string
	}{
		{"charge.dispute.created", disputeObj("needs_response"),
			"charge.dispute.created for du_1 (status needs_response) lists no balance transaction: it moved no money; charge.dispute.funds_withdrawn and charge.dispute.funds_reinstated carry the movements"},
		{"charge.dispute.updated", disputeObj("under_review", []string{}...),
			"charge.dispute.updated for du_1 (status under_review) lists no balance transaction: it moved no money; charge.dispute.funds_withdrawn and charge.dispute.funds_reinstated carry the movements"},
		{"charge.dispute.closed", disputeObj("won"),
			"charge.dispute.closed for du_1 (status won) lists no balance transaction: it moved no money; charge.dispute.funds_withdrawn and charge.dispute.funds_reinstated carry the movements"},
	} {
		calls := parseEventLines(t, evt("evt_1", tc.typ, tc.obj))
		if len(calls) != 1 || calls[0].Call != "ignore" || calls[0].Reason != tc.reason {
			t.Errorf("ParseEvents(%s %s) = %v, want it ignored with %q", tc.typ, tc.obj, calls, tc.reason)
		}
	}
}

// TestDisputeMovementsAgree checks what the matcher relies on to merge a
// dispute's records by id and sign: every record of one movement (the
// withdrawal, the reinstatement) carries the same amount and fee.
func TestDisputeMovementsAgree(t *testing.T) {
	lines := []string{
		evt("evt_1", "charge.dispute.created", disputeObj("needs_response", withdrawal)),
		evt("evt_2", "charge.dispute.funds_withdrawn", disputeObj("needs_response", withdrawal)),
		evt("evt_3", "charge.dispute.updated", disputeObj("under_review", withdrawal)),
		evt("evt_4", "charge.dispute.closed", disputeObj("won", withdrawal, reinstatement)),
		evt("evt_5", "charge.dispute.funds_reinstated", disputeObj("won", withdrawal, reinstatement)),
	}
	got := map[bool][]disputeRecord{} // by whether money came back
	for _, c := range parseEventLines(t, lines...) {
		e := mustEvidence(t, c)
		got[e.Amount.Minor > 0] = append(got[e.Amount.Minor > 0], disputeRecordOf(e))
	}
	w := disputeRecord{Amount: usd(-1000), Fee: 1500, Txn: "txn_w"}
	r := disputeRecord{Amount: usd(900), Txn: "txn_r"}
	want := map[bool][]disputeRecord{false: {w, w, w}, true: {r, r}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records by movement (-want +got)\n%s", diff)
	}
}

func TestDisputeRejections(t *testing.T) {
	for _, tc := range []struct {
		name, bt, reason string
	}{
		{"amount with a fraction", `{"id":"txn_w","amount":-10.5,"fee":0,"currency":"usd","created":1}`,
			"event evt_1: dispute du_1: balance transaction txn_w: amount -10.5 is not a whole number of minor units"},
		{"no amount", `{"id":"txn_w","fee":0,"currency":"usd","created":1}`,
			"event evt_1: dispute du_1: balance transaction txn_w has no amount"},
		{"fee as text", `{"id":"txn_w","amount":-1000,"fee":"15","currency":"usd","created":1}`,
			`event evt_1: dispute du_1: balance transaction txn_w: fee "15" is not a whole number of minor units`},
		{"created in milliseconds", `{"id":"txn_w","amount":-1000,"fee":0,"currency":"usd","created":1.5}`,
			"event evt_1: dispute du_1: balance transaction txn_w: created 1.5 is not a unix time in seconds"},
		{"unknown currency", `{"id":"txn_w","amount":-1000,"fee":0,"currency":"usx","created":1}`,
			`event evt_1: dispute du_1: balance transaction txn_w: currency: unknown currency "usx"`},
		{"currency of the wrong type", `{"id":"txn_w","amount":-1000,"fee":0,"currency":7,"created":1}`,
			"event evt_1: data.object is not a dispute: field data.object.balance_transactions.currency is a JSON number"},
	} {
		line := evt("evt_1", "charge.dispute.funds_withdrawn", disputeObj("needs_response", tc.bt))
		calls := parseEventLines(t, line)
		if len(calls) != 1 || calls[0].Call != "reject" || calls[0].Reason != tc.reason {
			t.Errorf("%s: ParseEvents(%s) = %v, want a rejection with %q", tc.name, line, calls, tc.reason)
		}
	}
}
