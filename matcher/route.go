package matcher

import (
	"hash/maphash"
	"strconv"
	"strings"

	"reconcile"
)

// Router cuts a run into partitions that Match can classify apart. Match
// relates a record to an effect, or to another record, only through a
// value both name: an effect key, a provider id (a transaction id, a
// payment intent, a parent, the modification part of an Adyen reference)
// that is another record's or an effect's external id, or the line a
// record with no id was read from. The Router joins every effect and
// record that share such a value into one group, transitively, and never
// splits a group: matching the partitions one by one gives what one match
// of everything gives, whatever the rules decide inside a group.
//
// Values are compared by a 64-bit hash: two values that collide only join
// two groups, which costs memory, never a wrong link, since Match compares
// the values themselves. A Router holds a few dozen bytes per node and
// per distinct value, not the rows.
type Router struct {
	h      maphash.Hash
	first  map[uint64]uint32 // a value's hash → the first node that named it
	parent []uint32          // union-find forest over the nodes
	effect []bool            // which nodes are effects
}

// NewRouter returns an empty Router; n is about how many nodes it will get.
func NewRouter(n int) *Router {
	return &Router{first: make(map[uint64]uint32, 2*n), parent: make([]uint32, 0, n), effect: make([]bool, 0, n)}
}

// Effect adds an effect in scope as the next node.
func (r *Router) Effect(provider, key, externalID string) {
	n := r.node()
	r.effect[n] = true
	r.join(n, 'k', provider, key)
	r.join(n, 'x', provider, externalID)
}

// Record adds a record as the next node. Only the fields Match links by
// are read: provider, ids, effect keys, and URI and line for a record
// with neither id nor payment intent.
func (r *Router) Record(e *reconcile.Evidence) {
	n := r.node()
	r.join(n, 'k', e.Provider, e.EffectKey)
	r.join(n, 'k', e.Provider, e.ParentEffectKey)
	r.join(n, 'x', e.Provider, e.TxID)
	r.join(n, 'x', e.Provider, e.PaymentIntent)
	r.join(n, 'x', e.Provider, e.ParentTxID)
	if _, mod, ok := strings.Cut(e.TxID, "/"); ok {
		r.join(n, 'x', e.Provider, mod)
	}
	if e.TxID == "" && e.PaymentIntent == "" {
		r.join(n, 'l', e.Provider, e.URI+":"+strconv.Itoa(e.Line))
	}
}

// Partitions assigns every node, in the order they were added, a
// partition: whole groups, in the order of their first node, filling
// each partition up to size effects, a group without effects counting as
// one (a group larger than that has a partition of its own). It returns
// the assignment and how many partitions there are, at least one.
func (r *Router) Partitions(size int) (part []uint32, count int) {
	size = max(size, 1)
	weight := make([]uint32, len(r.parent))
	for i, e := range r.effect {
		if e {
			weight[r.find(uint32(i))]++
		}
	}
	for i := range weight {
		if r.find(uint32(i)) == uint32(i) {
			weight[i] = max(weight[i], 1)
		}
	}
	part = make([]uint32, len(r.parent))
	count = 1
	var fill uint32
	for i := range r.parent {
		root := r.find(uint32(i))
		if uint32(i) != root {
			part[i] = part[root] // a root is its group's first node
			continue
		}
		if fill > 0 && fill+weight[i] > uint32(size) {
			count, fill = count+1, 0
		}
		part[i] = uint32(count - 1)
		fill += weight[i]
	}
	return part, count
}

func (r *Router) node() uint32 {
	n := uint32(len(r.parent))
	r.parent = append(r.parent, n)
	r.effect = append(r.effect, false)
	return n
}

// join puts node n in one group with every node that named value.
func (r *Router) join(n uint32, tag byte, provider, value string) {
	if value == "" {
		return
	}
	r.h.Reset()
	r.h.WriteByte(tag)
	r.h.WriteString(provider)
	r.h.WriteByte(0)
	r.h.WriteString(value)
	v := r.h.Sum64()
	other, ok := r.first[v]
	if !ok {
		r.first[v] = n
		return
	}
	a, b := r.find(n), r.find(other)
	if a > b {
		a, b = b, a
	}
	r.parent[b] = a // the smaller node is the root: a group's first node
}

func (r *Router) find(n uint32) uint32 {
	for r.parent[n] != n {
		r.parent[n] = r.parent[r.parent[n]]
		n = r.parent[n]
	}
	return n
}
