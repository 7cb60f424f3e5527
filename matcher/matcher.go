// Package matcher classifies effects against the providers' evidence. It is a
// pure function: the same effects and evidence give the same
// classifications and the same action keys, whatever the order of the input
// files or rows. No I/O, no clock.
package matcher

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"reconcile"
)

// Effect is what the matcher needs of a ledger row.
type Effect struct {
	Key        string
	Provider   string
	Step       string
	Status     reconcile.Status
	ExternalID string
	CreatedAt  time.Time
	// Amount and Currency are the request's amount (minor units) and
	// currency, upper case. HasAmount is false when the request names no
	// amount (a full refund), and then only the currency is compared.
	Amount    int64
	HasAmount bool
	Currency  string
}

// FromLedger reads what the matcher needs from a ledger row.
func FromLedger(e *reconcile.Effect) (Effect, error) {
	out := Effect{Key: e.Key, Provider: e.Provider, Step: e.Step, Status: e.Status, ExternalID: e.ExternalID, CreatedAt: e.CreatedAt}
	var err error
	if amount, has, cur, ok := plainRequest(e.Request); ok {
		out.Amount, out.HasAmount, out.Currency = amount, has, cur
	} else if out.Amount, out.HasAmount, out.Currency, err = decodeRequest(e.Request); err != nil {
		return out, fmt.Errorf("effect %s: %w", e.Key, err)
	}
	return out, nil
}

// decodeRequest reads the amount and currency of any request.
func decodeRequest(b []byte) (amount int64, hasAmount bool, currency string, err error) {
	var req struct {
		Amount   *json.Number `json:"amount"`
		Currency string       `json:"currency"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return 0, false, "", fmt.Errorf("request: %w", err)
	}
	if req.Amount != nil {
		n, err := req.Amount.Int64()
		if err != nil {
			return 0, false, "", fmt.Errorf("request amount %s is not an integer of minor units", *req.Amount)
		}
		amount, hasAmount = n, true
	}
	return amount, hasAmount, strings.ToUpper(strings.TrimSpace(req.Currency)), nil
}

// stepKinds are the kinds of provider transaction the steps make: a list
// of five, looked through faster than a map is hashed (ExpectedKind is
// asked several times of every effect), the commonest step first.
var stepKinds = []struct {
	step string
	kind reconcile.Kind
}{
	{"charge", reconcile.KindCharge}, {"capture", reconcile.KindCharge},
	{"refund", reconcile.KindRefund}, {"compensate", reconcile.KindRefund},
	{"payout", reconcile.KindPayout},
}

// ExpectedKind is the kind of provider transaction an effect's step makes,
// and false for a step that leaves no money evidence (an email).
func ExpectedKind(step string) (reconcile.Kind, bool) {
	for _, s := range stepKinds {
		if s.step == step {
			return s.kind, true
		}
	}
	return "", false
}

// StepKinds returns, for every step that leaves money evidence, the kind of
// provider transaction it makes: ExpectedKind as a table, for a ledger that
// links evidence to effects in its own query language.
func StepKinds() map[string]reconcile.Kind {
	out := make(map[string]reconcile.Kind, len(stepKinds))
	for _, s := range stepKinds {
		out[s.step] = s.kind
	}
	return out
}

// IsCompensation reports whether an effect is a compensation (depth 1):
// nobody compensates it; when it is in doubt a person is paged.
func IsCompensation(e *Effect) bool { return e.Step == "compensate" }

// Input is everything one classification looks at.
type Input struct {
	// Effects are the effects in scope, and every effect the evidence may
	// link to.
	Effects []Effect
	// Evidence is this run's evidence and the earlier evidence linked to the
	// effects in scope.
	Evidence []reconcile.Evidence
	// Cutoff, per provider: an effect created after it with no evidence is
	// pending, not missing. A provider absent from the map has no cutoff:
	// its effects without evidence are pending.
	Cutoff map[string]time.Time
	// Scope says which providers and kinds the inputs cover. An effect whose
	// provider and expected kind the inputs do not cover is out of scope:
	// no evidence of it could have been seen.
	Scope map[Coverage]bool
	// EscalateUnexpected gives, per currency, the amount in minor units
	// from which unexpected money is paged; a currency absent is never paged.
	EscalateUnexpected map[string]int64
	// Terse leaves out the Reason of an effect confirmed that is not a
	// compensation, for a caller that records no more of it than its
	// confirmation (a run, for nearly all of its effects).
	Terse bool
}

// Coverage is one provider and kind that the inputs report on.
type Coverage struct {
	Provider string
	Kind     reconcile.Kind
}

// Result is the classification of every effect in scope and of every
// unexpected transaction, in a stable order.
type Result struct {
	Discrepancies []reconcile.Discrepancy
	// OutOfScope counts effects whose step leaves no evidence (an email) or
	// whose provider and kind the inputs do not cover.
	OutOfScope int
	// Unlinked are the indexes in Discrepancies of the unexpected
	// transactions that link to no effect in scope, neither as theirs nor
	// by naming one in conflict: when earlier evidence holds such a
	// transaction, the run that read it first reported it.
	Unlinked []int
}

// Count returns how many discrepancies have class c.
func (r *Result) Count(c reconcile.Class) int {
	n := 0
	for i := range r.Discrepancies {
		if r.Discrepancies[i].Class == c {
			n++
		}
	}
	return n
}

// Match classifies in.Effects against in.Evidence.
func Match(in *Input) *Result {
	txs := Transactions(in.Evidence)
	// The effects by key, sorted as positions with the first eight bytes
	// of their keys past the prefix they all share, which decide most
	// comparisons without reading the keys; then each effect is moved
	// once. Sorted themselves (136 bytes each), by their keys, they took
	// 14% of the matching's time.
	skip := sharedPrefix(in.Effects)
	type keyOrder struct {
		prefix uint64
		i      int32
	}
	order := make([]keyOrder, len(in.Effects))
	for i := range in.Effects {
		order[i] = keyOrder{prefix8(in.Effects[i].Key[skip:]), int32(i)}
	}
	slices.SortFunc(order, func(a, b keyOrder) int {
		if a.prefix != b.prefix { // bytes of the keys as strings.Compare reads them, or none: then the keys decide
			return cmp.Compare(a.prefix, b.prefix)
		}
		return strings.Compare(in.Effects[a.i].Key, in.Effects[b.i].Key)
	})
	effects := make([]Effect, len(in.Effects))
	for i, o := range order {
		effects[i] = in.Effects[o.i]
	}

	byKey := make(map[string]int, len(effects))
	byExternal := make(map[externalID]int, len(effects))
	for i := range effects {
		byKey[effects[i].Key] = i
		kind, ok := ExpectedKind(effects[i].Step)
		if id := effects[i].ExternalID; id != "" && ok {
			// Effects that share an external id (a charge and its refund
			// may both record the payment intent) are told apart by the
			// kind they make; among those of one kind, the greatest key.
			byExternal[externalID{effects[i].Provider, id, kind}] = i
		}
	}
	linked := make([][]*reconcile.Transaction, len(effects))
	held := make([][]*reconcile.Transaction, len(effects)) // conflicting transactions that name each effect
	res := &Result{}
	var unexpected, loose []*reconcile.Transaction // loose: disputes that link to nothing
	claimed := map[*reconcile.Transaction]bool{}   // transactions in conflict that name an effect in scope
	rel := newRelater(effects, byKey, byExternal, txs)
	for i := range txs {
		tx := &txs[i]
		if _, links := linkKinds[tx.Kind]; links && conflicts(tx, effects, byKey) {
			named := namedByKey(tx, effects, byKey)
			if e, ok := link(tx, effects, byKey, byExternal); ok && len(named) == 0 {
				named = []int{e} // linked by id alone
			}
			for _, e := range named {
				held[e] = append(held[e], tx)
			}
			claimed[tx] = len(named) > 0
			unexpected = append(unexpected, tx)
			continue
		}
		if e, ok := link(tx, effects, byKey, byExternal); ok {
			linked[e] = append(linked[e], tx)
			rel.linked(e, tx)
		} else if tx.Kind == reconcile.KindCharge || tx.Kind == reconcile.KindRefund {
			unexpected = append(unexpected, tx)
		} else if tx.Kind == reconcile.KindDispute {
			loose = append(loose, tx)
		}
	}
	related := make([][]*reconcile.Transaction, len(effects))
	kept := unexpected[:0]
	for _, tx := range unexpected {
		if e, ok := rel.chargeOf(tx); ok {
			related[e] = append(related[e], tx)
		} else {
			kept = append(kept, tx)
		}
	}
	unexpected = kept
	for _, tx := range loose {
		if e, ok := rel.chargeOf(tx); ok {
			related[e] = append(related[e], tx)
		}
	}
	// The refunds that take a charge back as a compensation does, by the
	// charge they name: a person's (it names no effect) and the
	// compensations'. One that names a refund effect of the application is
	// that effect's money, not the undoing of a duplicate, whether or not
	// the effect is in this run's scope.
	var refunds map[externalID][]*reconcile.Transaction
	for i := range txs {
		tx := &txs[i]
		if tx.Kind != reconcile.KindRefund || tx.ParentTxID == "" ||
			len(tx.EffectKeys) > 0 && !slices.ContainsFunc(tx.EffectKeys, reconcile.IsCompensationKey) {
			continue
		}
		if refunds == nil {
			refunds = map[externalID][]*reconcile.Transaction{}
		}
		x := externalID{tx.Provider, tx.ParentTxID, reconcile.KindCharge}
		refunds[x] = append(refunds[x], tx)
	}
	res.Discrepancies = make([]reconcile.Discrepancy, 0, len(effects)+len(unexpected))
	for i := range effects {
		e := &effects[i]
		kind, ok := ExpectedKind(e.Step)
		if len(held[i]) > 0 {
			d := deferConflict(e, held[i], linked[i])
			d.Related = copied(related[i])
			res.Discrepancies = append(res.Discrepancies, d)
			continue
		}
		if !ok || (len(linked[i]) == 0 && !in.Scope[Coverage{e.Provider, kind}]) {
			res.OutOfScope++
			continue
		}
		if e.Status == reconcile.StatusAbandoned && !moved(linked[i], related[i], refunds) {
			res.OutOfScope++ // closed by a decision, and nothing says money moved for it
			continue
		}
		cutoff, hasCutoff := in.Cutoff[e.Provider]
		res.Discrepancies = append(res.Discrepancies, classify(e, linked[i], related[i], refunds, hasCutoff && !e.CreatedAt.After(cutoff), in.Terse))
	}
	for _, tx := range unexpected {
		if !claimed[tx] {
			res.Unlinked = append(res.Unlinked, len(res.Discrepancies))
		}
		res.Discrepancies = append(res.Discrepancies, unexpectedMoney(tx, in.EscalateUnexpected))
	}
	return res
}

// moved says whether money moved for an effect, by the transactions linked
// and related to it: a charge that neither failed nor was refunded in full
// (by a person, or a compensation), or, with no charge seen, a refund or
// dispute of one.
func moved(linked, related []*reconcile.Transaction, refunds map[externalID][]*reconcile.Transaction) bool {
	charged := false
	for _, tx := range linked {
		if tx.Failed {
			continue
		}
		charged = true
		if refunded, _ := refundedBy(tx, refunds, false); refunded < abs(tx.Amount.Minor) {
			return true
		}
	}
	return !charged && len(related) > 0
}

// prefix8 is the first eight bytes of s (zeros past its end) as a number
// that orders as strings.Compare orders them: a sort compares these first
// and reads the strings only when they are equal.
func prefix8(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

// sharedPrefix is how many bytes every effect's key begins with alike.
func sharedPrefix(effects []Effect) int {
	if len(effects) == 0 {
		return 0
	}
	n := len(effects[0].Key)
	for i := 1; i < len(effects) && n > 0; i++ {
		k := effects[i].Key
		n = min(n, len(k))
		for j := 0; j < n; j++ {
			if k[j] != effects[0].Key[j] {
				n = j
			}
		}
	}
	return n
}

// linkKinds are the kinds of transaction that link to effects.
var linkKinds = func() map[reconcile.Kind]bool {
	m := map[reconcile.Kind]bool{}
	for _, s := range stepKinds {
		m[s.kind] = true
	}
	return m
}()

// conflicts reports whether a transaction's records disagree: on the
// amount or currency (merge notes it), or on the effect they name, when
// they name two effects of ours. It sets tx.Conflict.
// Such a transaction links to no effect, since any link would let one
// record (a line added to a webhook dump, a reissued report) move another
// customer's money.
func conflicts(tx *reconcile.Transaction, effects []Effect, byKey map[string]int) bool {
	if tx.Conflict != "" {
		return true
	}
	if len(tx.EffectKeys) < 2 { // its keys are distinct: two are needed to name two effects
		return false
	}
	named := 0 // counted, not collected: every transaction passes here
	for _, k := range tx.EffectKeys {
		if i, ok := byKey[k]; ok && fits(&effects[i], tx) {
			named++
		}
	}
	if named < 2 {
		return false
	}
	tx.Conflict = "its records name different effects: " + strings.Join(tx.EffectKeys, ", ")
	return true
}

// namedByKey returns the effects that a transaction's records name by
// effect key and that it could link to, in key order.
func namedByKey(tx *reconcile.Transaction, effects []Effect, byKey map[string]int) []int {
	var named []int
	for _, k := range tx.EffectKeys {
		if i, ok := byKey[k]; ok && fits(&effects[i], tx) {
			named = append(named, i)
		}
	}
	return named
}

// fits reports whether an effect's step makes transactions of tx's kind at
// tx's provider.
func fits(e *Effect, tx *reconcile.Transaction) bool {
	k, ok := ExpectedKind(e.Step)
	return ok && k == tx.Kind && e.Provider == tx.Provider
}

// externalID names a transaction as the ledger's external ids do.
type externalID struct {
	provider, id string
	kind         reconcile.Kind
}

// link finds the effect a transaction belongs to: by effect key first, then
// by the provider's ids against the ledger's external ids. A link only holds
// when the effect's step makes transactions of the transaction's kind. A
// refund that names an effect by key it does not link to here (one closed
// already, out of this run's scope) links by its own id alone, not by the
// ids every refund of its charge carries: the charge's payment intent and
// id.
func link(tx *reconcile.Transaction, effects []Effect, byKey map[string]int, byExternal map[externalID]int) (int, bool) {
	for _, k := range tx.EffectKeys {
		if i, ok := byKey[k]; ok && fits(&effects[i], tx) {
			return i, true
		}
	}
	for _, id := range providerIDs(tx) {
		if tx.Kind != reconcile.KindCharge && len(tx.EffectKeys) > 0 && id != tx.ID && (id == tx.PaymentIntent || id == tx.ParentTxID) {
			continue
		}
		if i, ok := byExternal[externalID{tx.Provider, id, tx.Kind}]; ok {
			return i, true
		}
	}
	return 0, false
}

// providerIDs are the ids a ledger's external id may name a transaction
// by: its own id, its payment intent, its parent (an Adyen booking's PSP
// reference), and, for an id made of two references (Adyen's
// "PSP/modification"), the modification reference alone, which is what an
// application records for an Adyen refund.
func providerIDs(tx *reconcile.Transaction) []string {
	ids := make([]string, 0, 4)
	for _, id := range []string{tx.ID, tx.PaymentIntent, tx.ParentTxID} {
		if id != "" {
			ids = append(ids, id)
		}
	}
	if _, mod, ok := strings.Cut(tx.ID, "/"); ok && mod != "" {
		ids = append(ids, mod)
	}
	return ids
}
