package job

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"reconcile"
)

// TestKeptFindingsComeBackAsAdded: the findings a run keeps through its
// partitions are held encoded; each must come back exactly as it was
// added, in the order added, whatever it holds: nil and empty lists,
// zero, UTC and local times, negative and extreme amounts, text of any
// kind.
func TestKeptFindingsComeBackAsAdded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var want []reconcile.Discrepancy
	var wantCreated, wantSince []time.Time
	var k keptFindings
	for i := range 3000 {
		d, created, since := randomFinding(r, i), randomTime(r), randomTime(r)
		want, wantCreated, wantSince = append(want, d), append(wantCreated, created), append(wantSince, since)
		k.add(&d, created, since)
	}
	got, created, since := k.all()
	if len(got) != len(want) || len(created) != len(want) || len(since) != len(want) {
		t.Fatalf("%d findings back (%d and %d times), %d added", len(got), len(created), len(since), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("finding %d came back as\n%#v\nnot\n%#v", i, got[i], want[i])
		}
		if !reflect.DeepEqual(created[i], wantCreated[i]) || !reflect.DeepEqual(since[i], wantSince[i]) {
			t.Fatalf("finding %d's times came back as %v, %v, not %v, %v", i, created[i], since[i], wantCreated[i], wantSince[i])
		}
	}
	if again, _, _ := k.all(); !reflect.DeepEqual(again, got) {
		t.Fatal("taken twice, the findings differ")
	}
	var empty keptFindings
	if got, _, _ := empty.all(); len(got) != 0 {
		t.Fatalf("no finding added, %d back", len(got))
	}
}

func randomTime(r *rand.Rand) time.Time {
	switch r.IntN(3) {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(r.Int64N(4e9)-1e9, r.Int64N(1e9)).UTC()
	default:
		return time.Unix(r.Int64N(4e9), r.Int64N(1e9)) // local
	}
}

func randomFinding(r *rand.Rand, i int) reconcile.Discrepancy {
	str := func() string {
		switch r.IntN(6) {
		case 0:
			return ""
		case 1:
			return "effect-" + string(rune('a'+r.IntN(26))) + "-é€😀"
		case 2:
			b := make([]byte, r.IntN(300)) // longer than a one-byte length
			for j := range b {
				b[j] = byte(r.IntN(256))
			}
			return string(b)
		default:
			return "ch_" + time.Unix(r.Int64N(1e9), 0).UTC().Format("150405")
		}
	}
	amount := func() int64 {
		switch r.IntN(4) {
		case 0:
			return -1 << 63
		case 1:
			return 1<<63 - 1
		default:
			return r.Int64N(2e9) - 1e9
		}
	}
	strs := func() []string {
		switch n := r.IntN(4); n {
		case 0:
			return nil
		case 1:
			return []string{}
		default:
			out := make([]string, n)
			for j := range out {
				out[j] = str()
			}
			return out
		}
	}
	txs := func() []reconcile.Transaction {
		n := r.IntN(4)
		if n == 0 {
			return nil
		}
		out := make([]reconcile.Transaction, n-1) // n-1 == 0: an empty list, not nil
		for j := range out {
			out[j] = reconcile.Transaction{Provider: str(), ID: str(), Kind: reconcile.Kind(str()),
				Amount: reconcile.Money{Minor: amount(), Currency: str()}, Time: randomTime(r), Pending: r.IntN(2) == 0,
				Failed: r.IntN(2) == 0, EffectKeys: strs(), ParentKey: str(), PaymentIntent: str(), ParentTxID: str(),
				Records: r.IntN(1 << 20), Corroborated: r.IntN(2) == 0, Conflict: str()}
		}
		return out
	}
	d := reconcile.Discrepancy{Class: reconcile.Class(str()), EffectKey: str(), Provider: str(), Currency: str(),
		ExpectedMinor: amount(), ObservedMinor: amount(), Transactions: txs(), Related: txs(), Reason: str()}
	if n := r.IntN(4); n > 0 {
		d.Actions = make([]reconcile.Action, n-1)
		for j := range d.Actions {
			d.Actions[j] = reconcile.Action{Kind: reconcile.ActionKind(str()), Key: str(), Target: str(), Outcome: reconcile.Outcome(str()),
				Amount: reconcile.Money{Minor: amount(), Currency: str()}, Made: str(), Note: str()}
		}
	}
	if i == 0 {
		d = reconcile.Discrepancy{} // all zero
	}
	return d
}
