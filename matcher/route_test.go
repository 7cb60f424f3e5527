package matcher

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

// tangledWorld draws effects and records from small pools of keys and
// ids, so that records name several effects, share payment intents and
// parents, refund charges no effect made, and share lines: every way a
// record can relate to another, many times over.
func tangledWorld(r *rand.Rand) ([]Effect, []reconcile.Evidence) {
	pick := func(pool ...string) string { return pool[r.IntN(len(pool))] }
	ids := func(prefix string, n int) []string {
		out := []string{""}
		for i := range n {
			out = append(out, fmt.Sprintf("%s%d", prefix, i))
		}
		return out
	}
	keys, chs, pis := ids("k", 14), ids("ch_", 10), ids("pi_", 6)
	chs = append(chs, "PSP1/MOD1", "PSP2/MOD2", "MOD1")
	steps := []string{"charge", "charge", "refund", "compensate", "payout", "email"}
	var effects []Effect
	for i := range 1 + r.IntN(10) {
		e := Effect{Key: fmt.Sprintf("k%d", i), Provider: pick("stripe", "stripe", "adyen"), Step: pick(steps...),
			Status: reconcile.Status(pick("attempted", "confirmed", "abandoned")), ExternalID: pick(append(chs, pis...)...),
			CreatedAt: t0.Add(time.Duration(r.IntN(48)) * time.Hour), Amount: int64(100 * r.IntN(4)), HasAmount: r.IntN(4) > 0,
			Currency: pick("EUR", "USD")}
		effects = append(effects, e)
	}
	var evidence []reconcile.Evidence
	for range r.IntN(25) {
		e := reconcile.Evidence{Provider: pick("stripe", "stripe", "adyen"), Kind: reconcile.Kind(pick("charge", "refund", "dispute", "payout")),
			TxID: pick(chs...), PaymentIntent: pick(pis...), ParentTxID: pick("", "", "ch_1", "PSP1", "pi_2"),
			EffectKey: pick(keys...), ParentEffectKey: pick("", "", "k1", "k2"),
			Amount: reconcile.Money{Minor: int64(100 * (r.IntN(7) - 3)), Currency: pick("EUR", "USD")},
			Time:   t0.Add(time.Duration(r.IntN(48)) * time.Hour), URI: pick("a.csv", "b.jsonl"), Line: 1 + r.IntN(4),
			Pending: r.IntN(8) == 0, Failed: r.IntN(8) == 0, Webhook: r.IntN(3) == 0}
		if r.IntN(5) == 0 { // a record of its own, named by its line
			e.TxID, e.PaymentIntent = "", ""
		}
		evidence = append(evidence, e)
	}
	return effects, evidence
}

func TestMatchingThePartitionsOfARouterEqualsOneMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	splits := 0
	for range 3000 {
		effects, evidence := tangledWorld(r)
		in := &Input{Cutoff: map[string]time.Time{"stripe": cutoff, "adyen": cutoff},
			Scope:              map[Coverage]bool{{"stripe", reconcile.KindCharge}: true, {"adyen", reconcile.KindRefund}: true},
			EscalateUnexpected: map[string]int64{"EUR": 200}}
		one := *in
		one.Effects, one.Evidence = effects, evidence
		want := Match(&one)

		router := NewRouter(len(effects) + len(evidence))
		for i := range effects {
			router.Effect(effects[i].Provider, effects[i].Key, effects[i].ExternalID)
		}
		for i := range evidence {
			router.Record(&evidence[i])
		}
		part, count := router.Partitions(1 + r.IntN(4))
		if count > 1 {
			splits++
		}
		got := &Result{}
		for p := range count {
			each := *in
			for i := range effects {
				if part[i] == uint32(p) {
					each.Effects = append(each.Effects, effects[i])
				}
			}
			for i := range evidence {
				if part[len(effects)+i] == uint32(p) {
					each.Evidence = append(each.Evidence, evidence[i])
				}
			}
			res := Match(&each)
			got.Discrepancies = append(got.Discrepancies, res.Discrepancies...)
			got.OutOfScope += res.OutOfScope
		}
		if diff := cmp.Diff(findingsOf(want), findingsOf(got)); diff != "" || want.OutOfScope != got.OutOfScope {
			t.Fatalf("partitioned (%d) differs from one match (out of scope %d, %d) (-one +partitioned):\n%s\neffects %+v\nevidence %+v",
				count, want.OutOfScope, got.OutOfScope, diff, effects, evidence)
		}
	}
	if splits < 1000 {
		t.Fatalf("only %d of the worlds were cut into more than one partition: the test proves little", splits)
	}
}

// findingsOf gives the findings as sorted JSON: partitions give them in
// another order than one match.
func findingsOf(r *Result) []string {
	out := make([]string, len(r.Discrepancies))
	for i := range r.Discrepancies {
		b, _ := json.Marshal(&r.Discrepancies[i])
		out[i] = string(b)
	}
	slices.Sort(out)
	return out
}

// Nodes that share a value end in one partition, and nodes that share
// none in partitions of their own, however many values a share holds:
// here enough that every bucket Forget sorts holds hundreds, in random
// order.
func TestARouterJoinsEveryNodeThatSharesAValue(t *testing.T) {
	const pairs = 300_000
	for _, max := range []int{tableMax, 100} { // through tables; and by sorting, the buckets larger than 100
		r := rand.New(rand.NewPCG(7, 8))
		router := NewRouter(0)
		for range 2*pairs + 1000 {
			router.AddEffect("")
		}
		// Node i and node pairs+i share a value; each node has one of its
		// own; and the last thousand share one value among them.
		order := r.Perm(2 * pairs)
		for _, n := range order {
			pair := uint64(n % pairs)
			router.Join(uint32(n), pair*0x9E3779B97F4A7C15+1)
			router.Join(uint32(n), r.Uint64())
		}
		shared := r.Uint64()
		for n := range 1000 {
			router.Join(uint32(2*pairs+n), shared)
		}
		tableMax = max
		part, count := router.Partitions(1)
		tableMax = 1 << 18
		if count != pairs+1 {
			t.Fatalf("grouped by table up to %d: %d partitions, want one for each of the %d pairs and one more", max, count, pairs)
		}
		for i := range pairs {
			if part[i] != part[pairs+i] {
				t.Fatalf("grouped by table up to %d: nodes %d and %d share a value but fell in partitions %d and %d", max, i, pairs+i, part[i], part[pairs+i])
			}
		}
		for n := range 1000 {
			if part[2*pairs+n] != part[2*pairs] {
				t.Fatalf("grouped by table up to %d: node %d names the value of node %d but fell in another partition", max, 2*pairs+n, 2*pairs)
			}
		}
	}
}

// Each partition holds a range of keys, whatever order the effects came
// in, so that what a run writes of a partition by key (the effects'
// states) lands in one part of an index: here keys in no order (an
// application's run ids) behind a prefix they share; keys alike in their
// first eight bytes come in the order added. A group lies where its first
// effect does; records of no effect come last.
func TestAPartitionHoldsARangeOfKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, prefix := range []string{"run_", "tenant-acme-production:"} {
		const n = 10_000
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("%s%08x:charge:%d", prefix, r.Uint32(), i%4)
		}
		router := NewRouter(n)
		for _, k := range keys {
			router.Effect("stripe", k, "")
		}
		router.Record(&reconcile.Evidence{Provider: "stripe", TxID: "ch_1", EffectKey: keys[7], ParentEffectKey: keys[3]})
		router.Record(&reconcile.Evidence{Provider: "stripe", TxID: "ch_orphan"})
		part, count := router.Partitions(100)
		if count < 100 {
			t.Fatalf("%s: %d partitions of 100 effects; want at least 100", prefix, count)
		}
		if part[3] != part[7] || part[n] != part[3] || part[n+1] != uint32(count-1) {
			t.Fatalf("%s: the group of effects 3 and 7 in partitions %d, %d and %d, the record of no effect in %d of %d",
				prefix, part[3], part[7], part[n], part[n+1], count)
		}
		var order []int // the effects as they should lie, effect 7 with its group
		for i := range n {
			if i != 7 {
				order = append(order, i)
			}
		}
		slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(keys[a][:8], keys[b][:8]) })
		for i := 1; i < len(order); i++ {
			if a, b := part[order[i-1]], part[order[i]]; a > b {
				t.Fatalf("%s: %s in partition %d comes before %s in partition %d", prefix, keys[order[i-1]], a, keys[order[i]], b)
			}
		}
	}
}

// Terse leaves out the reason of a confirmed effect that is not a
// compensation, and changes nothing else: a compensation confirmed keeps
// its reason, which a run reports.
func TestTerseLeavesOutOnlyTheReasonsOfConfirmedEffects(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	left := 0
	for range 2000 {
		effects, evidence := tangledWorld(r)
		in := &Input{Effects: effects, Evidence: evidence, Cutoff: map[string]time.Time{"stripe": cutoff, "adyen": cutoff},
			Scope: map[Coverage]bool{{"stripe", reconcile.KindCharge}: true, {"adyen", reconcile.KindRefund}: true}}
		want := Match(in)
		in.Terse = true
		got := Match(in)
		for i := range want.Discrepancies {
			d := &want.Discrepancies[i]
			if d.Class != reconcile.ClassConfirmed {
				continue
			}
			if j := slices.IndexFunc(effects, func(e Effect) bool { return e.Key == d.EffectKey }); !IsCompensation(&effects[j]) {
				d.Reason = ""
				left++
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("terse (-want +got):\n%s\neffects %+v\nevidence %+v", diff, effects, evidence)
		}
	}
	if left < 100 {
		t.Fatalf("only %d reasons left out: the test proves little", left)
	}
}
