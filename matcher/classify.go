package matcher

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"reconcile"
)

// classify decides the class of one effect from the transactions linked to
// it. due is true when the effect is older than its provider's cutoff, so
// that its evidence should have been seen by now; terse is Input.Terse;
// refunds are the refunds that undo charges, by the charge they name.
func classify(e *Effect, linked, related []*reconcile.Transaction, refunds map[externalID][]*reconcile.Transaction, due, terse bool) reconcile.Discrepancy {
	d := reconcile.Discrepancy{EffectKey: e.Key, Provider: e.Provider, Currency: e.Currency, ExpectedMinor: e.Amount, Related: copied(related)}
	var seen, failed []reconcile.Transaction
	for _, tx := range linked {
		if !tx.Failed { // a failed refund or charge moved no money
			seen = append(seen, *tx)
		} else if tx.Kind == reconcile.KindCharge {
			failed = append(failed, *tx)
		}
	}
	kind, _ := ExpectedKind(e.Step)
	overflowed := false // the sum of a duplicate's amounts went past int64
	comp := IsCompensation(e)
	if len(failed) > 0 && e.Step == "charge" && !comp && e.Status != reconcile.StatusAbandoned && (len(seen) > 1 || len(seen) == 1 && once(e, &seen[0])) {
		// A failure record is a file's word: a line added to a report
		// would hide a second charge of the customer. Beside the charge
		// that would confirm the effect (or a duplicate), a failed one is
		// compensated as a duplicate, and the compensation asks the
		// provider first, which skips one that failed there.
		seen = append(seen, failed...)
	}
	d.Transactions = seen
	switch {
	case e.Status == reconcile.StatusAbandoned && len(seen) > 0:
		// Someone decided it would never happen, and money moved for it:
		// whether to refund it or confirm it is a person's call.
		var observed int64
		for _, tx := range seen {
			observed, _ = reconcile.AddMinor(observed, abs(tx.Amount.Minor))
		}
		d.Class, d.ExpectedMinor, d.ObservedMinor = reconcile.ClassMismatched, 0, observed
		d.Reason = fmt.Sprintf("%s %s moved %s for an effect the ledger abandoned: a person decides whether to refund it or confirm the effect",
			kind, ids(seen), money(observed, seen[0].Amount.Currency))
		d.Actions = []reconcile.Action{escalate(e.Key, d.Class)}
	case len(seen) == 0 && !due:
		d.Class = reconcile.ClassPending
		d.Reason = fmt.Sprintf("no %s at %s yet; the effect is newer than the cutoff", kind, e.Provider)
	case len(seen) == 0 && comp:
		d.Class = reconcile.ClassEscalated
		d.Reason = fmt.Sprintf("compensation missing: no %s at %s by the cutoff; a person decides", kind, e.Provider)
		d.Actions = []reconcile.Action{escalate(e.Key, reconcile.ClassEscalated)}
	case len(seen) == 0 && len(related) > 0:
		// The charge is not seen, but a refund or dispute of it is: it
		// was made, and charging again could take the money twice.
		d.Class = reconcile.ClassMissing
		d.Reason = fmt.Sprintf("no %s at %s by the cutoff, but %s of it is seen: a person decides, nothing is redelivered",
			kind, e.Provider, ids(d.Related))
		d.Actions = []reconcile.Action{escalate(e.Key, reconcile.ClassMissing)}
	case len(seen) == 0:
		d.Class = reconcile.ClassMissing
		d.Reason = fmt.Sprintf("no %s at %s by the cutoff: redeliver under the original key", kind, e.Provider)
		d.Actions = []reconcile.Action{{Kind: reconcile.ActionRedeliver, Key: e.Key, Target: e.Key, Outcome: reconcile.OutcomePlanned,
			Amount: reconcile.Money{Minor: e.Amount, Currency: e.Currency}}}
	case len(seen) == 1:
		tx := seen[0]
		d.ObservedMinor = abs(tx.Amount.Minor)
		if d.Currency == "" {
			d.Currency = tx.Amount.Currency
		}
		if !matches(e, &tx) {
			d.Class = reconcile.ClassMismatched
			d.Reason = fmt.Sprintf("%s %s moved %s; the request was %s", kind, tx.ID, money(abs(tx.Amount.Minor), tx.Amount.Currency), money(e.Amount, e.Currency))
			if comp {
				d.Class = reconcile.ClassEscalated
				d.Reason = "compensation mismatched: " + d.Reason
			}
			d.Actions = []reconcile.Action{escalate(e.Key, d.Class)}
			break
		}
		if !once(e, &tx) {
			// Anyone who can add a line to a webhook dump could invent it:
			// the application's row waits for the provider's own word.
			d.Class = reconcile.ClassPending
			d.Reason = fmt.Sprintf("%s %s is seen only in webhook events; the row stays attempted until a settlement report or the provider corroborates it",
				kind, tx.ID)
			break
		}
		d.Class = reconcile.ClassConfirmed
		if !terse || comp {
			d.Reason = string(kind) + " " + tx.ID + " seen once, as requested" // most effects: no Sprintf
		}
	default:
		keep, why := keeper(e, seen, refunds)
		var ids []string
		for _, tx := range seen {
			ids = append(ids, tx.ID)
			var ok bool
			d.ObservedMinor, ok = reconcile.AddMinor(d.ObservedMinor, abs(tx.Amount.Minor))
			overflowed = overflowed || !ok
		}
		if comp {
			d.Class = reconcile.ClassEscalated
			d.Reason = fmt.Sprintf("compensation duplicated: %d refunds at %s (%s); nobody compensates a compensation, a person decides",
				len(seen), e.Provider, strings.Join(ids, ", "))
			d.Actions = []reconcile.Action{escalate(e.Key, reconcile.ClassEscalated)}
			break
		}
		d.Class = reconcile.ClassDuplicated
		if e.Step != "charge" && e.Step != "capture" {
			// Money out made twice is not undone by more money out, nor by
			// charging the customer back: a person decides.
			d.Reason = fmt.Sprintf("%s seen %d times at %s (%s); the job compensates only charges: a person decides",
				kind, len(seen), e.Provider, strings.Join(ids, ", "))
			d.Actions = []reconcile.Action{escalate(e.Key, reconcile.ClassDuplicated)}
			break
		}
		d.Reason = fmt.Sprintf("%s seen %d times at %s (%s); keeping %s (%s), compensating the other %d",
			kind, len(seen), e.Provider, strings.Join(ids, ", "), seen[keep].ID, why, len(seen)-1)
		partly := false
		for i := range seen {
			if i == keep {
				continue
			}
			tx := &seen[i]
			refunded, by := refundedBy(tx, refunds, false)
			if byHand, _ := refundedBy(tx, refunds, true); byHand > 0 && refunded < abs(tx.Amount.Minor) {
				// A compensation's refund of another amount is its own doubt,
				// which the compensation raises.
				d.Reason += fmt.Sprintf("; %s is refunded in part already (%s): a person decides the rest", tx.ID, strings.Join(by, ", "))
				partly = true
				continue
			}
			if tx.Failed {
				d.Reason += fmt.Sprintf("; %s failed, says a record: the provider is asked before any refund", tx.ID)
			} else if refunded > 0 {
				// The compensation asks the provider before it refunds: a
				// refund the provider does not hold (one that failed, a line
				// added to a file) leaves the customer charged twice.
				d.Reason += fmt.Sprintf("; %s is refunded in full already (%s): the provider is asked before any refund", tx.ID, strings.Join(by, ", "))
			}
			d.Actions = append(d.Actions, reconcile.Action{Kind: reconcile.ActionCompensate, Key: reconcile.CompensationKey(e.Key, tx.ID), Target: tx.ID,
				Outcome: reconcile.OutcomePlanned, Amount: reconcile.Money{Minor: abs(tx.Amount.Minor), Currency: tx.Amount.Currency}})
		}
		if partly {
			d.Actions = append(d.Actions, escalate(e.Key, reconcile.ClassDuplicated))
		}
	}
	if overflowed {
		d.Reason += "; the sum of its amounts is beyond what reconcile can hold and is shown as the largest it can"
	}
	return d
}

// matches says whether tx moved what e asked for.
func matches(e *Effect, tx *reconcile.Transaction) bool {
	return (!e.HasAmount || abs(tx.Amount.Minor) == e.Amount) && (e.Currency == "" || strings.EqualFold(tx.Amount.Currency, e.Currency))
}

// once says whether tx, seen alone, confirms e: it moved what e asked for,
// on a record the row can take (not a webhook's alone, for an attempted
// row).
func once(e *Effect, tx *reconcile.Transaction) bool {
	return matches(e, tx) && (e.Status != reconcile.StatusAttempted || tx.Corroborated)
}

// ids lists the ids of txs, for a reason.
func ids(txs []reconcile.Transaction) string {
	out := make([]string, len(txs))
	for i := range txs {
		out[i] = txs[i].ID
	}
	return strings.Join(out, ", ")
}

// deferConflict is the finding for an effect that a transaction in
// conflict names: nothing is done about it until a person has looked at
// the transaction, since no one can tell yet which effect it belongs to.
// It shows the effect's own transactions; the conflicting one is reported
// on its own, with how its records disagree.
func deferConflict(e *Effect, held, linked []*reconcile.Transaction) reconcile.Discrepancy {
	d := reconcile.Discrepancy{Class: reconcile.ClassDeferred, EffectKey: e.Key, Provider: e.Provider, Currency: e.Currency, ExpectedMinor: e.Amount}
	var ids []string
	for _, tx := range held {
		if !slices.Contains(ids, tx.ID) {
			ids = append(ids, tx.ID)
		}
	}
	for _, tx := range linked {
		d.Transactions = append(d.Transactions, *tx)
	}
	slices.Sort(ids)
	d.Reason = fmt.Sprintf("named by %s, whose records conflict: no action on this effect until a person decides", strings.Join(ids, ", "))
	return d
}

// keeper picks the transaction a duplicated effect keeps, and says why: of
// those the refunds (a person's, a compensation's) leave standing (all of
// them when none is), the one the ledger's external id names, else the
// earliest. A charge refunded in full is not kept: keeping it would refund
// the last one standing too. seen is in a stable order.
func keeper(e *Effect, seen []reconcile.Transaction, refunds map[externalID][]*reconcile.Transaction) (int, string) {
	standing := make([]bool, len(seen))
	some := false
	for i := range seen {
		refunded, _ := refundedBy(&seen[i], refunds, false)
		standing[i] = !seen[i].Failed && refunded < abs(seen[i].Amount.Minor)
		some = some || standing[i]
	}
	named, best := -1, -1
	for i := range seen {
		if e.ExternalID == "" || !slices.Contains(providerIDs(&seen[i]), e.ExternalID) {
			continue
		}
		if named < 0 || earlier(&seen[i], &seen[named]) {
			named = i
		}
	}
	if named >= 0 && (standing[named] || !some) {
		return named, "the ledger's external id"
	}
	for i := range seen {
		if (standing[i] || !some) && (best < 0 || earlier(&seen[i], &seen[best])) {
			best = i
		}
	}
	if named >= 0 {
		return best, "the earliest that stands: the ledger's " + seen[named].ID + " is refunded in full or failed"
	}
	return best, "the earliest"
}

func earlier(a, b *reconcile.Transaction) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	return a.ID < b.ID
}

// unexpectedMoney is the finding for a transaction no effect links to.
func unexpectedMoney(tx *reconcile.Transaction, pageFrom map[string]int64) reconcile.Discrepancy {
	d := reconcile.Discrepancy{Class: reconcile.ClassUnexpected, Provider: tx.Provider, Currency: tx.Amount.Currency,
		ObservedMinor: abs(tx.Amount.Minor), Transactions: []reconcile.Transaction{*tx}}
	d.Reason = fmt.Sprintf("%s %s of %s links to no effect of ours", tx.Kind, tx.ID, money(abs(tx.Amount.Minor), tx.Amount.Currency))
	if tx.Conflict != "" {
		d.Reason = fmt.Sprintf("%s %s is in conflict: %s; it is linked to no effect, and the effects it names wait for a person",
			tx.Kind, tx.ID, tx.Conflict)
		d.Actions = []reconcile.Action{escalate(tx.Provider+":"+tx.ID, reconcile.ClassUnexpected)}
		return d
	}
	if tx.ParentKey != "" {
		d.Reason += fmt.Sprintf(" (it belongs to %s)", tx.ParentKey)
	}
	if from, ok := pageFrom[tx.Amount.Currency]; ok && abs(tx.Amount.Minor) >= from {
		d.Actions = []reconcile.Action{escalate(tx.Provider+":"+tx.ID, reconcile.ClassUnexpected)}
	}
	return d
}

func escalate(subject string, c reconcile.Class) reconcile.Action {
	return reconcile.Action{Kind: reconcile.ActionEscalate, Key: reconcile.EscalationKey(subject, c), Target: subject, Outcome: reconcile.OutcomePlanned}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func money(minor int64, cur string) string {
	if cur == "" {
		return fmt.Sprintf("%d (minor units)", minor)
	}
	return reconcile.Money{Minor: minor, Currency: cur}.String()
}

// Transactions merges evidence records that describe the same provider
// transaction (a webhook and a settlement line, a webhook delivered twice, a
// reissued report line) into one, in a stable order. Records are the same
// transaction when they share provider, kind and id; a record with no id is
// matched to its payment intent's charge when one is known, and is a
// transaction of its own otherwise (two malformed rows never merge).
func Transactions(evidence []reconcile.Evidence) []reconcile.Transaction {
	recs := make([]*reconcile.Evidence, len(evidence))
	for i := range evidence {
		recs[i] = &evidence[i]
	}
	sortRecords(recs)
	type intent struct{ provider, id string }
	chargeOfIntent := map[intent]string{}
	// Only a record without an id asks it: most partitions have none.
	if slices.ContainsFunc(recs, func(r *reconcile.Evidence) bool { return r.TxID == "" && r.PaymentIntent != "" }) {
		for _, r := range recs {
			if r.Kind == reconcile.KindCharge && r.TxID != "" && r.PaymentIntent != "" {
				if _, ok := chargeOfIntent[intent{r.Provider, r.PaymentIntent}]; !ok {
					chargeOfIntent[intent{r.Provider, r.PaymentIntent}] = r.TxID
				}
			}
		}
	}
	// The transactions are found by id, then among those of one id (most
	// ids have one) by provider, kind and reversal, which tells a
	// dispute's reinstatement (money back to us) from its withdrawal: one
	// dispute id, two movements of money. A map keyed by the id alone
	// hashes one string where a key of all four hashed three.
	index := make(map[string]int32, len(recs)) // the first transaction of each id
	txs := make([]reconcile.Transaction, 0, len(recs))
	next := make([]int32, 0, len(recs)) // the next of the same id, or -1
	reversal := make([]bool, 0, len(recs))
	find := func(provider string, kind reconcile.Kind, id string, rev bool) (int, bool) {
		j, ok := index[id]
		for ok && j >= 0 {
			if t := &txs[j]; t.Provider == provider && t.Kind == kind && reversal[j] == rev {
				return int(j), true
			}
			j = next[j]
		}
		return 0, false
	}
	for _, r := range recs {
		id := r.TxID
		if id == "" && r.PaymentIntent != "" {
			if ch, ok := chargeOfIntent[intent{r.Provider, r.PaymentIntent}]; ok && r.Kind == reconcile.KindCharge {
				id = ch
			} else {
				id = r.PaymentIntent
			}
		}
		if id == "" {
			// A record of its own, named by where it was read; records that
			// share a line (entries of a one-line JSON array) are told apart
			// by what they say, never by their position among the others,
			// so that the name does not depend on which other records are
			// matched with it.
			id = r.URI + ":" + strconv.Itoa(r.Line)
			if _, dup := find(r.Provider, r.Kind, id, false); dup {
				base := id + "#" + recordHash(r)
				id = base
				for n := 2; ; n++ {
					if _, dup := find(r.Provider, r.Kind, id, false); !dup {
						break
					}
					id = base + "." + strconv.Itoa(n)
				}
			}
		}
		rev := r.Kind == reconcile.KindDispute && r.Amount.Minor > 0
		i, ok := find(r.Provider, r.Kind, id, rev)
		if !ok {
			i = len(txs)
			first, had := index[id]
			if !had {
				first = -1
			}
			index[id] = int32(i)
			next, reversal = append(next, first), append(reversal, rev)
			txs = append(txs, reconcile.Transaction{Provider: r.Provider, ID: id, Kind: r.Kind, Amount: r.Amount, Time: r.Time, Pending: true})
		}
		merge(&txs[i], r)
	}
	// Sorted by index, then moved into place once, cycle by cycle: a
	// transaction is too large to move at every step of a sort, and a
	// sorted copy would double what a partition allocates. Each index is
	// sorted with its provider's rank and its id's first eight bytes,
	// which decide most comparisons without reading the transactions.
	rank := map[string]uint64{}
	for i := range txs {
		rank[txs[i].Provider] = 0
	}
	for i, p := range slices.Sorted(maps.Keys(rank)) {
		rank[p] = uint64(i)
	}
	type sortKey struct {
		provider, id uint64
		i            int32
	}
	keys := make([]sortKey, len(txs))
	for i := range txs {
		keys[i] = sortKey{rank[txs[i].Provider], prefix8(txs[i].ID), int32(i)}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if a.provider != b.provider {
			return cmp.Compare(a.provider, b.provider)
		}
		if a.id != b.id { // bytes of the ids as strings.Compare reads them, or none: then the ids decide
			return cmp.Compare(a.id, b.id)
		}
		return compareTx(&txs[a.i], &txs[b.i])
	})
	order := make([]int32, len(txs))
	for i, k := range keys {
		order[i] = k.i
	}
	for i := range order {
		if order[i] < 0 {
			continue
		}
		held := txs[i] // position i takes order[i]'s transaction, which takes its own order's, until the cycle closes
		j := i
		for {
			k := int(order[j])
			order[j] = -1
			if k == i {
				txs[j] = held
				break
			}
			txs[j] = txs[k]
			j = k
		}
	}
	return txs
}

// compareTx orders transactions as Transactions gives them. Written out,
// as compareRecords is: cmp.Or would compare every field of every pair.
func compareTx(a, b *reconcile.Transaction) int {
	if c := strings.Compare(a.Provider, b.Provider); c != 0 {
		return c
	}
	if c := strings.Compare(a.ID, b.ID); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	return cmp.Compare(a.Amount.Minor, b.Amount.Minor) // a dispute's withdrawal and reinstatement
}

// sortRecords orders recs by compareRecords. A partition's records come
// as a few runs already in that order (each source's, by line, as read):
// those are merged; records in no such order are sorted.
func sortRecords(recs []*reconcile.Evidence) {
	var ends []int // where each run ends
	for i := 1; i < len(recs); i++ {
		if compareRecords(recs[i-1], recs[i]) > 0 {
			if ends = append(ends, i); len(ends) > 16 {
				slices.SortFunc(recs, compareRecords)
				return
			}
		}
	}
	if len(ends) == 0 {
		return
	}
	ends = append(ends, len(recs))
	src, dst := recs, make([]*reconcile.Evidence, len(recs))
	for len(ends) > 1 { // each pass merges the runs two by two
		var next []int
		start := 0
		for k := 0; k < len(ends); k += 2 {
			mid, end := ends[k], ends[k]
			if k+1 < len(ends) {
				end = ends[k+1]
			}
			a, b, i := src[start:mid], src[mid:end], start
			for ; len(a) > 0 && len(b) > 0; i++ {
				if compareRecords(b[0], a[0]) < 0 {
					dst[i], b = b[0], b[1:]
				} else {
					dst[i], a = a[0], a[1:]
				}
			}
			copy(dst[i+copy(dst[i:], a):], b)
			next, start = append(next, end), end
		}
		src, dst, ends = dst, src, next
	}
	copy(recs, src)
}

// compareRecords orders evidence records by where they were read, then by
// everything the matcher reads of them, so that the order (and with it the
// record whose amount a merged transaction keeps) does not depend on the
// order of the inputs. Records equal in all of it are interchangeable.
func compareRecords(a, b *reconcile.Evidence) int {
	// Written out rather than with cmp.Or, which would compare every field
	// of every pair before choosing: records mostly differ in their line.
	if c := strings.Compare(a.URI, b.URI); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Line, b.Line); c != 0 {
		return c
	}
	if c := strings.Compare(a.TxID, b.TxID); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Amount.Minor, b.Amount.Minor); c != 0 {
		return c
	}
	if c := strings.Compare(a.Amount.Currency, b.Amount.Currency); c != 0 {
		return c
	}
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	return cmp.Or(
		strings.Compare(a.EffectKey, b.EffectKey),
		strings.Compare(a.PaymentIntent, b.PaymentIntent),
		strings.Compare(a.ParentTxID, b.ParentTxID),
		strings.Compare(a.ParentEffectKey, b.ParentEffectKey),
		strings.Compare(a.Provider, b.Provider),
		compareBool(a.Failed, b.Failed),
		compareBool(a.Pending, b.Pending),
	)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// recordHash is a short digest of what a record says, which names a record
// with no provider id apart from others on the same line.
func recordHash(r *reconcile.Evidence) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s\x00%s\x00%s\x00%s\x00%s\x00%v\x00%v",
		r.Kind, r.Provider, r.Amount.Minor, r.Amount.Currency, r.Time.Format(time.RFC3339Nano), r.EffectKey, r.ParentEffectKey, r.ParentTxID, r.Failed, r.Pending)
	return fmt.Sprintf("%08x", h.Sum32())
}

// merge folds one more record of a transaction into it: the first record's
// amount stands, links are taken from the first record that has them, the
// earliest time wins, any failure fails it, and it is pending only while
// every record says so. A record of another amount or currency puts the
// transaction in conflict: one of the two accounts is wrong, and which one
// is for a person to say; the larger amount stands, as the money at risk.
// A failure is the same money going back (a charge_failure line after its
// charge): of the opposite sign, it agrees.
func merge(tx *reconcile.Transaction, r *reconcile.Evidence) {
	reversal := r.Failed != tx.Failed && r.Amount.Minor == -tx.Amount.Minor && strings.EqualFold(r.Amount.Currency, tx.Amount.Currency)
	if tx.Records > 0 && !reversal && (r.Amount.Minor != tx.Amount.Minor || !strings.EqualFold(r.Amount.Currency, tx.Amount.Currency)) {
		if tx.Conflict == "" {
			tx.Conflict = fmt.Sprintf("its records disagree on the amount: %s and %s (%s line %d)",
				money(tx.Amount.Minor, tx.Amount.Currency), money(r.Amount.Minor, r.Amount.Currency), r.URI, r.Line)
		}
		if abs(r.Amount.Minor) > abs(tx.Amount.Minor) {
			tx.Amount = r.Amount
		}
	}
	tx.Records++
	tx.Corroborated = tx.Corroborated || !r.Webhook
	tx.Failed = tx.Failed || r.Failed
	tx.Pending = tx.Pending && r.Pending
	if !r.Time.IsZero() && (tx.Time.IsZero() || r.Time.Before(tx.Time)) {
		tx.Time = r.Time
	}
	first := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	if r.EffectKey != "" {
		i := sort.SearchStrings(tx.EffectKeys, r.EffectKey)
		if i == len(tx.EffectKeys) || tx.EffectKeys[i] != r.EffectKey {
			tx.EffectKeys = append(tx.EffectKeys[:i], append([]string{r.EffectKey}, tx.EffectKeys[i:]...)...)
		}
	}
	first(&tx.ParentKey, r.ParentEffectKey)
	first(&tx.PaymentIntent, r.PaymentIntent)
	first(&tx.ParentTxID, r.ParentTxID)
}
