package job

import (
	"encoding/binary"
	"fmt"
	"time"

	"reconcile"
)

// keptFindings holds the findings a run's partitions keep (a few percent
// of its effects: every one not confirmed) until the actions take them,
// encoded in blocks of bytes. Held as structs, those of a 10M night (350k
// findings) grew the live heap through the partitions to 627 MB (433 MB
// once encoded), and the collector went through them at every cycle:
// 111 cycles, 21.9 s of processor time (85, 7.7 s). Blocks of bytes hold
// no pointers, and the collector does not look inside them.
type keptFindings struct {
	blocks [][]byte
	ends   []keptEnd // where each finding ends, in the order added
}

type keptEnd struct{ block, end int32 }

// keptBlock is the size of a block; a finding larger than one has a block
// of its own.
const keptBlock = 1 << 20

// add encodes d, with when its effect was created and first found in its
// class (zero for none), after the findings added before it.
func (k *keptFindings) add(d *reconcile.Discrepancy, created, since time.Time) {
	n := len(k.blocks) - 1
	if n < 0 || len(k.blocks[n]) > keptBlock-4096 {
		k.blocks = append(k.blocks, make([]byte, 0, keptBlock))
		n++
	}
	enc := func(b []byte) []byte { return appendTime(appendTime(appendFinding(b, d), created), since) }
	b := enc(k.blocks[n])
	if len(b) > keptBlock && len(k.blocks[n]) > 0 { // it grew the block: give it one of its own
		b = enc(make([]byte, 0, len(b)-len(k.blocks[n])))
		k.blocks = append(k.blocks, b)
		n++
	}
	k.blocks[n] = b
	k.ends = append(k.ends, keptEnd{int32(n), int32(len(b))})
}

// all decodes the findings, in the order added, and their times.
func (k *keptFindings) all() (ds []reconcile.Discrepancy, created, since []time.Time) {
	ds, created, since = make([]reconcile.Discrepancy, len(k.ends)), make([]time.Time, len(k.ends)), make([]time.Time, len(k.ends))
	start := 0
	for i, e := range k.ends {
		if i > 0 && k.ends[i-1].block != e.block {
			start = 0
		}
		r := findingReader{b: k.blocks[e.block][start:e.end]}
		ds[i] = r.finding()
		created[i], since[i] = r.time(), r.time()
		if r.err != nil || len(r.b) != 0 {
			panic(fmt.Sprintf("kept finding %d of %d does not decode: %v", i, len(k.ends), r.err)) // what add wrote: a bug
		}
		start = int(e.end)
	}
	return ds, created, since
}

// appendFinding appends d, field by field: numbers as varints, text and
// lists after their length (a list's plus one, zero for none), times as
// appendTime writes them.
func appendFinding(b []byte, d *reconcile.Discrepancy) []byte {
	b = appendStr(b, string(d.Class), d.EffectKey, d.Provider, d.Currency)
	b = binary.AppendVarint(b, d.ExpectedMinor)
	b = binary.AppendVarint(b, d.ObservedMinor)
	b = appendTxs(b, d.Transactions)
	b = appendTxs(b, d.Related)
	b = appendLen(b, d.Actions == nil, len(d.Actions))
	for i := range d.Actions {
		a := &d.Actions[i]
		b = appendStr(b, string(a.Kind), a.Key, a.Target, string(a.Outcome))
		b = binary.AppendVarint(b, a.Amount.Minor)
		b = appendStr(b, a.Amount.Currency, a.Made, a.Note)
	}
	return appendStr(b, d.Reason)
}

func appendTxs(b []byte, txs []reconcile.Transaction) []byte {
	b = appendLen(b, txs == nil, len(txs))
	for i := range txs {
		t := &txs[i]
		b = appendStr(b, t.Provider, t.ID, string(t.Kind))
		b = binary.AppendVarint(b, t.Amount.Minor)
		b = appendStr(b, t.Amount.Currency)
		b = appendTime(b, t.Time)
		b = appendLen(b, t.EffectKeys == nil, len(t.EffectKeys))
		b = appendStr(b, t.EffectKeys...)
		b = appendStr(b, t.ParentKey, t.PaymentIntent, t.ParentTxID, t.Conflict)
		b = binary.AppendVarint(b, int64(t.Records))
		b = append(b, flags(t.Pending, t.Failed, t.Corroborated))
	}
	return b
}

func appendStr(b []byte, ss ...string) []byte {
	for _, s := range ss {
		b = binary.AppendVarint(b, int64(len(s)))
		b = append(b, s...)
	}
	return b
}

func appendLen(b []byte, none bool, n int) []byte {
	if none {
		return append(b, 0)
	}
	return binary.AppendVarint(b, int64(n)+1)
}

// appendTime writes a zero time as 0, a time in UTC as 1 and its Unix
// seconds and nanoseconds, and any other as 2 and its MarshalBinary form.
func appendTime(b []byte, t time.Time) []byte {
	switch {
	case t.IsZero() && t.Location() == time.UTC:
		return append(b, 0)
	case t.Location() == time.UTC:
		b = binary.AppendVarint(append(b, 1), t.Unix())
		return binary.AppendVarint(b, int64(t.Nanosecond()))
	}
	m, _ := t.MarshalBinary() // fails only for a zone offset that is not whole minutes, which no time here has
	return appendStr(append(b, 2), string(m))
}

func flags(bs ...bool) byte {
	var f byte
	for i, v := range bs {
		if v {
			f |= 1 << i
		}
	}
	return f
}

// findingReader reads what appendFinding wrote; err is its first fault.
type findingReader struct {
	b   []byte
	err error
}

func (r *findingReader) finding() reconcile.Discrepancy {
	var d reconcile.Discrepancy
	d.Class, d.EffectKey, d.Provider, d.Currency = reconcile.Class(r.str()), r.str(), r.str(), r.str()
	d.ExpectedMinor, d.ObservedMinor = r.varint(), r.varint()
	d.Transactions, d.Related = r.txs(), r.txs()
	if n, ok := r.len(); ok {
		d.Actions = make([]reconcile.Action, n)
		for i := range d.Actions {
			a := &d.Actions[i]
			a.Kind, a.Key, a.Target, a.Outcome = reconcile.ActionKind(r.str()), r.str(), r.str(), reconcile.Outcome(r.str())
			a.Amount.Minor = r.varint()
			a.Amount.Currency, a.Made, a.Note = r.str(), r.str(), r.str()
		}
	}
	d.Reason = r.str()
	return d
}

func (r *findingReader) txs() []reconcile.Transaction {
	n, ok := r.len()
	if !ok {
		return nil
	}
	out := make([]reconcile.Transaction, n)
	for i := range out {
		t := &out[i]
		t.Provider, t.ID, t.Kind = r.str(), r.str(), reconcile.Kind(r.str())
		t.Amount.Minor = r.varint()
		t.Amount.Currency = r.str()
		t.Time = r.time()
		if n, ok := r.len(); ok {
			t.EffectKeys = make([]string, n)
			for j := range t.EffectKeys {
				t.EffectKeys[j] = r.str()
			}
		}
		t.ParentKey, t.PaymentIntent, t.ParentTxID, t.Conflict = r.str(), r.str(), r.str(), r.str()
		t.Records = int(r.varint())
		f := r.byte()
		t.Pending, t.Failed, t.Corroborated = f&1 != 0, f&2 != 0, f&4 != 0
	}
	return out
}

func (r *findingReader) time() time.Time {
	switch r.byte() {
	case 1:
		sec := r.varint()
		return time.Unix(sec, r.varint()).UTC()
	case 2:
		var t time.Time
		if err := t.UnmarshalBinary([]byte(r.str())); err != nil && r.err == nil {
			r.err = err
		}
		return t
	}
	return time.Time{}
}

// len reads a list's length; ok is false for no list at all.
func (r *findingReader) len() (int, bool) {
	n := r.varint()
	if n <= 0 || n-1 > int64(len(r.b)) { // each element takes a byte at least
		if n != 0 {
			r.fail()
		}
		return 0, false
	}
	return int(n - 1), true
}

func (r *findingReader) str() string {
	n := r.varint()
	if n < 0 || n > int64(len(r.b)) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *findingReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *findingReader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *findingReader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("truncated at %d bytes from its end", len(r.b))
	}
	r.b = nil
}
