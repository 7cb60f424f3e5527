package matcher

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkRouterJoin joins a first night's worth of values: 2.4M nodes
// (1M effects), 5.6M values of which about 3.2M distinct.
func BenchmarkRouterJoin(b *testing.B) {
	const effects, records = 1_000_000, 1_400_000
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([][2]uint64, 0, 6_000_000)
	for n := range effects + records {
		k := uint64(n % effects)
		vals = append(vals, [2]uint64{uint64(n), k*0x9E3779B97F4A7C15 ^ 1})
		if r.IntN(2) == 0 {
			vals = append(vals, [2]uint64{uint64(n), k*0x9E3779B97F4A7C15 ^ 2})
		}
		if n >= effects {
			vals = append(vals, [2]uint64{uint64(n), r.Uint64()})
		}
	}
	for b.Loop() {
		router := NewRouter(0)
		for range effects {
			router.AddEffect("")
		}
		for range records {
			router.AddRecord()
		}
		if true {
			router.Reserve(len(vals))
		}
		for _, v := range vals {
			router.Join(uint32(v[0]), v[1])
		}
		router.Forget()
		router.Partitions(50_000)
	}
}
