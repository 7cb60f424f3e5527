package matcher

import (
	"hash/maphash"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

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
// Values are compared by 43 bits of a 64-bit hash: two values that
// collide only join two groups, which costs memory, never a wrong link,
// since Match compares the values themselves (the sixteen million values
// a run joins at a time make about fifteen such pairs, by the birthday
// bound). A Router holds
// four bytes per node and, until the next Forget, eight bytes per value
// joined, not the rows.
type Router struct {
	// buckets holds the values joined since the last Forget by the top
	// bucketBits of their hash, each as the next 32 bits and the node
	// that named it (hash<<32 | node): grouped bucket by bucket, a
	// bucket's values stay in the processor's cache where a map of every
	// value would not.
	buckets [][]uint64
	parent  []uint32 // union-find forest over the nodes
	effects int      // the first nodes are effects
	ranks   []uint64 // of each effect, the first eight bytes of its key (Partitions)
	values  []uint64
}

const bucketBits = 11 // 2,048 buckets

// seed is the values' hash seed, the same for every Router of a process.
var seed = maphash.MakeSeed()

// NewRouter returns an empty Router; n is about how many nodes it will get.
func NewRouter(n int) *Router {
	return &Router{parent: make([]uint32, 0, n), buckets: make([][]uint64, 1<<bucketBits)}
}

// Effect adds an effect in scope as the next node, and joins it by its
// values. Effects come before records.
func (r *Router) Effect(provider, key, externalID string) {
	r.values = EffectValues(r.values[:0], provider, key, externalID)
	r.joinAll(r.AddEffect(key), r.values)
}

// Record adds a record as the next node, and joins it by its values.
func (r *Router) Record(e *reconcile.Evidence) {
	r.values = RecordValues(r.values[:0], e)
	r.joinAll(r.AddRecord(), r.values)
}

func (r *Router) joinAll(n uint32, values []uint64) {
	for _, v := range values {
		r.Join(n, v)
	}
}

// AddEffect and AddRecord add a node without joining it: a caller that
// keeps the nodes' values elsewhere joins them later (Join), a share of
// the values at a time, so that the Router never holds them all (Forget).
// An effect's key places its group among the partitions (Partitions).
func (r *Router) AddEffect(key string) uint32 {
	if r.effects != len(r.parent) {
		panic("matcher: an effect added after a record")
	}
	r.ranks = append(r.ranks, prefix8(key))
	r.effects++
	return r.node()
}

// AddRecord adds a record's node (AddEffect).
func (r *Router) AddRecord() uint32 { return r.node() }

// EffectValues appends the hashes of the values an effect is named by.
func EffectValues(dst []uint64, provider, key, externalID string) []uint64 {
	dst = appendValue(dst, 'k', provider, key)
	return appendValue(dst, 'x', provider, externalID)
}

// RecordValues appends the hashes of the values a record names: only the
// fields Match links by are read (provider, ids, effect keys, and URI and
// line for a record with neither id nor payment intent).
func RecordValues(dst []uint64, e *reconcile.Evidence) []uint64 {
	dst = appendValue(dst, 'k', e.Provider, e.EffectKey)
	dst = appendValue(dst, 'k', e.Provider, e.ParentEffectKey)
	dst = appendValue(dst, 'x', e.Provider, e.TxID)
	dst = appendValue(dst, 'x', e.Provider, e.PaymentIntent)
	dst = appendValue(dst, 'x', e.Provider, e.ParentTxID)
	if _, mod, ok := strings.Cut(e.TxID, "/"); ok {
		dst = appendValue(dst, 'x', e.Provider, mod)
	}
	if e.TxID == "" && e.PaymentIntent == "" {
		dst = appendValue(dst, 'l', e.Provider, e.URI+":"+strconv.Itoa(e.Line))
	}
	return dst
}

func appendValue(dst []uint64, tag byte, provider, value string) []uint64 {
	if value == "" {
		return dst
	}
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteByte(tag)
	h.WriteString(provider)
	h.WriteByte(0)
	h.WriteString(value)
	return append(dst, h.Sum64())
}

// Forget joins the nodes that named each value given since the last
// Forget, and lets the values go; the groups stay. Values joined after it
// must be none of those before (another share of them).
func (r *Router) Forget() {
	// Each bucket's entries are rewritten as the first node that named
	// their value and their own (first<<32 | node), through a table of
	// the bucket's values, on every processor: a run's link waits for
	// this, most of the rest of its work done. The groups are then joined
	// on one.
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			var table []uint64 // value<<32 | first node+1; 0 is empty
			for b := w; b < len(r.buckets); b += workers {
				g := r.buckets[b]
				if len(g) > tableMax {
					firstBySort(g)
					continue
				}
				size := 1 << bits.Len(uint(2*len(g)))
				if cap(table) < size {
					table = make([]uint64, size)
				}
				table = table[:size]
				clear(table)
				mask := uint64(size - 1)
				for i, e := range g {
					value, node := e>>32, e&(1<<32-1)
					// The value's 32 bits below the bucket's are evenly
					// spread: their low bits are the slot.
					for slot := value & mask; ; slot = (slot + 1) & mask {
						t := table[slot]
						if t == 0 {
							table[slot] = value<<32 | node + 1
							g[i] = node<<32 | node
							break
						}
						if t>>32 == value {
							g[i] = (t&(1<<32-1)-1)<<32 | node
							break
						}
					}
				}
			}
		})
	}
	wg.Wait()
	for k, g := range r.buckets {
		for _, e := range g {
			if first, node := uint32(e>>32), uint32(e); first != node {
				if a, b := r.find(first), r.find(node); a != b {
					r.parent[max(a, b)] = min(a, b) // the smaller node is the root: a group's first node
				}
			}
		}
		r.buckets[k] = g[:0]
	}
}

// tableMax is the most entries of a bucket grouped through a table,
// which has two to four slots of eight bytes for each: a share of values
// that are mostly one (a degenerate night) would make one bucket of most
// of them, which is sorted instead. A share's buckets hold about 8,000
// entries each.
var tableMax = 1 << 18

// firstBySort rewrites a bucket's entries as Forget's table does, by
// sorting them: equal values come next to each other.
func firstBySort(g []uint64) {
	slices.Sort(g)
	for i := 0; i < len(g); {
		value, first := g[i]>>32, g[i]&(1<<32-1)
		for ; i < len(g) && g[i]>>32 == value; i++ {
			g[i] = first<<32 | g[i]&(1<<32-1)
		}
	}
}

// Partitions assigns every node, in the order they were added, a
// partition: whole groups, filling each partition up to size effects, a
// group without effects counting as one (a group larger than that has a
// partition of its own). Groups come in the order of their first
// effect's key, by four bytes of it past the prefix all the keys share
// (then in the order added), and those without effects last: each
// partition holds a range of keys, so that what a run writes of it by key
// (the effects' states) lands in one part of an index, not all over it,
// whatever order the effects were read in. It returns the assignment and
// how many partitions there are, at least one; the Router is spent.
func (r *Router) Partitions(size int) (part []uint32, count int) {
	size = max(size, 1)
	r.Forget()
	var differ uint64 // the bits of the ranks that are not all alike
	for _, k := range r.ranks {
		differ |= k ^ r.ranks[0]
	}
	shift := bits.LeadingZeros64(differ)
	// A node's parent is never after it, so in node order each parent is
	// already a root: one pass points every node at its group's first.
	// The groups' first effects are sorted by their rank's four bytes and
	// their node, in the ranks' room.
	part, r.parent, r.buckets = r.parent, nil, nil
	roots, rest := r.ranks[:0], []uint32(nil)
	for i := range part {
		part[i] = part[part[i]]
		switch {
		case part[i] != uint32(i):
		case i < r.effects:
			roots = append(roots, r.ranks[i]<<shift>>32<<32|uint64(i))
		default:
			rest = append(rest, uint32(i))
		}
	}
	r.ranks = nil
	slices.Sort(roots)
	weight := make([]uint32, len(part)) // of each group's first node; then its partition
	for i := range r.effects {
		weight[part[i]]++
	}
	count = 1
	var fill uint32
	place := func(root uint32) {
		w := max(weight[root], 1)
		if fill > 0 && fill+w > uint32(size) {
			count, fill = count+1, 0
		}
		weight[root] = uint32(count - 1)
		fill += w
	}
	for _, k := range roots {
		place(uint32(k))
	}
	for _, root := range rest {
		place(root)
	}
	for i, root := range part {
		part[i] = weight[root]
	}
	return part, count
}

func (r *Router) node() uint32 {
	n := uint32(len(r.parent))
	r.parent = append(r.parent, n)
	return n
}

// Reserve makes room for about n more values, spread evenly by their
// hash, to be joined before the next Forget.
func (r *Router) Reserve(n int) {
	per := n>>bucketBits + n>>(bucketBits+3) + 1 // an eighth more, for the spread
	for b, g := range r.buckets {
		r.buckets[b] = slices.Grow(g, per)
	}
}

// Share says which of shares the value whose hash is v falls in, for a
// caller that joins a share of the values at a time (Forget): taken from
// the hash's low bits, which the Router does not compare, so that the
// values of a share are told apart by as many bits as all of them.
func Share(v, shares uint64) uint64 {
	const low = 64 - bucketBits - 32
	return (v & (1<<low - 1)) * shares >> low
}

// Join puts node n in one group with every node that names the value
// whose hash is v, up to the next Forget (or Partitions).
func (r *Router) Join(n uint32, v uint64) {
	b := v >> (64 - bucketBits)
	r.buckets[b] = append(r.buckets[b], v<<bucketBits>>32<<32|uint64(n))
}

func (r *Router) find(n uint32) uint32 {
	for r.parent[n] != n {
		r.parent[n] = r.parent[r.parent[n]]
		n = r.parent[n]
	}
	return n
}
