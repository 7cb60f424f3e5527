package matcher

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

// world is a random small world generated from a truth the test knows: for
// every effect, how many distinct provider transactions really happened,
// whether their amount was right, and whether the effect is older than the
// cutoff. The oracle reads the class straight off that truth.
type world struct {
	effects    []Effect
	evidence   []reconcile.Evidence
	want       map[string]reconcile.Class // effect key → class
	keeper     map[string]string          // effect key → the transaction a duplicate keeps
	txs        map[string][]string        // effect key → its transactions
	unexpected int
}

func randomWorld(r *rand.Rand) *world {
	w := &world{want: map[string]reconcile.Class{}, keeper: map[string]string{}, txs: map[string][]string{}}
	line := 1
	add := func(e reconcile.Evidence) {
		line++
		e.Provider, e.Line, e.URI = "stripe", line, []string{"a.csv", "b.jsonl", "c.csv"}[r.IntN(3)]
		// Each transaction is described by one to three records (a webhook
		// delivered twice, a settlement line), only some of which carry links.
		for n := 1 + r.IntN(3); n > 0; n-- {
			rec := e
			if n > 1 && r.IntN(2) == 0 {
				rec.EffectKey = ""
			}
			rec.Line = line
			line++
			w.evidence = append(w.evidence, rec)
		}
	}
	for i := range 1 + r.IntN(12) {
		comp := r.IntN(4) == 0
		e := Effect{Key: fmt.Sprintf("run_%d:charge:%d", r.IntN(3), i), Provider: "stripe", Step: "charge",
			Status: reconcile.StatusAttempted, Amount: int64(100 * (1 + r.IntN(50))), HasAmount: true, Currency: "EUR",
			CreatedAt: t0.Add(time.Duration(r.IntN(48)) * time.Hour)}
		kind := reconcile.KindCharge
		sign := int64(1)
		if comp {
			e.Key, e.Step, kind, sign = e.Key+":compensate:ch_x"+fmt.Sprint(i), "compensate", reconcile.KindRefund, -1
		}
		n := r.IntN(4)
		wrong := n == 1 && r.IntN(4) == 0
		byExternalID := n > 0 && !comp && r.IntN(3) == 0
		var ids []string
		for j := range n {
			id := fmt.Sprintf("ch_%d_%d", i, j)
			if comp {
				id = fmt.Sprintf("re_%d_%d", i, j)
			}
			ids = append(ids, id)
			amount := e.Amount
			if wrong {
				amount += 1
			}
			ev := reconcile.Evidence{TxID: id, Kind: kind, Amount: reconcile.Money{Minor: sign * amount, Currency: "EUR"},
				Time: t0.Add(time.Duration(r.IntN(1000)) * time.Minute), EffectKey: e.Key}
			if byExternalID {
				ev.EffectKey = ""
				ev.PaymentIntent = "pi_" + e.Key
			}
			add(ev)
		}
		if byExternalID {
			e.ExternalID = "pi_" + e.Key
		}
		due := !e.CreatedAt.After(cutoff)
		switch {
		case n == 0 && !due:
			w.want[e.Key] = reconcile.ClassPending
		case comp && (n != 1 || wrong || n == 0):
			w.want[e.Key] = reconcile.ClassEscalated
		case n == 0:
			w.want[e.Key] = reconcile.ClassMissing
		case n == 1 && wrong:
			w.want[e.Key] = reconcile.ClassMismatched
		case n == 1:
			w.want[e.Key] = reconcile.ClassConfirmed
		default:
			w.want[e.Key] = reconcile.ClassDuplicated
		}
		w.txs[e.Key] = ids
		w.effects = append(w.effects, e)
	}
	for k := range r.IntN(4) {
		add(reconcile.Evidence{TxID: fmt.Sprintf("ch_u%d", k), Kind: reconcile.KindCharge, Amount: reconcile.Money{Minor: 777, Currency: "EUR"}, Time: t0})
		w.unexpected++
	}
	if r.IntN(2) == 0 { // noise that must not count
		add(reconcile.Evidence{Kind: reconcile.KindFee, Amount: reconcile.Money{Minor: -30, Currency: "EUR"}, Time: t0})
	}
	// The keeper of a duplicate: the earliest transaction (no test effect
	// names one by external id that is also a transaction id).
	for _, e := range w.effects {
		if w.want[e.Key] != reconcile.ClassDuplicated {
			continue
		}
		txs := Transactions(w.evidence)
		var best *reconcile.Transaction
		for i := range txs {
			for _, id := range w.txs[e.Key] {
				if txs[i].ID == id && (best == nil || earlier(&txs[i], best)) {
					best = &txs[i]
				}
			}
		}
		w.keeper[e.Key] = best.ID
	}
	return w
}

func (w *world) input() *Input {
	return &Input{Effects: w.effects, Evidence: w.evidence, Cutoff: map[string]time.Time{"stripe": cutoff},
		Scope: map[Coverage]bool{{"stripe", reconcile.KindCharge}: true, {"stripe", reconcile.KindRefund}: true}}
}

func TestMatchAgreesWithTheTruthOnRandomWorlds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		w := randomWorld(r)
		res := Match(w.input())
		got := map[string]reconcile.Class{}
		unexpected := 0
		for _, d := range res.Discrepancies {
			if d.Class == reconcile.ClassUnexpected {
				unexpected++
				continue
			}
			got[d.EffectKey] = d.Class
			if d.Class != reconcile.ClassDuplicated {
				continue
			}
			var comps []string
			for _, a := range d.Actions {
				comps = append(comps, a.Key)
			}
			var want []string
			for _, id := range w.txs[d.EffectKey] {
				if id != w.keeper[d.EffectKey] {
					want = append(want, reconcile.CompensationKey(d.EffectKey, id))
				}
			}
			if diff := cmp.Diff(want, comps); diff != "" {
				t.Fatalf("%s: compensations (-want +got):\n%s", d.EffectKey, diff)
			}
		}
		if diff := cmp.Diff(w.want, got); diff != "" {
			t.Fatalf("classes (-truth +matcher):\n%s", diff)
		}
		if unexpected != w.unexpected {
			t.Fatalf("%d unexpected transactions, want %d", unexpected, w.unexpected)
		}
	}
}

func TestMatchIgnoresTheOrderOfInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		w := randomWorld(r)
		want := Match(w.input())
		r.Shuffle(len(w.evidence), func(i, j int) { w.evidence[i], w.evidence[j] = w.evidence[j], w.evidence[i] })
		r.Shuffle(len(w.effects), func(i, j int) { w.effects[i], w.effects[j] = w.effects[j], w.effects[i] })
		if diff := cmp.Diff(want, Match(w.input())); diff != "" {
			t.Fatalf("shuffled inputs changed the result (-before +after):\n%s", diff)
		}
	}
}
