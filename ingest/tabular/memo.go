package tabular

// Memo remembers what a parser made of the first few distinct values of a
// column, such as a transaction type or a currency: a report holds a
// handful, and comparing a value with each of them costs less than hashing
// it for a map.
type Memo[V any] struct {
	keys []string
	vals []V
}

// memoSize bounds a Memo, so that a column of distinct values (ids where a
// type should be) does not make every lookup long.
const memoSize = 16

// Get returns what was remembered for s.
func (m *Memo[V]) Get(s string) (V, bool) {
	for i, k := range m.keys {
		if k == s {
			return m.vals[i], true
		}
	}
	var zero V
	return zero, false
}

// Put remembers v for s, unless the Memo is full.
func (m *Memo[V]) Put(s string, v V) {
	if len(m.keys) < memoSize {
		m.keys = append(m.keys, s)
		m.vals = append(m.vals, v)
	}
}
