package stripe

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSeenIDsRemembersEachIDExactly: the event ids seen are held by their
// hash, without pointers; an id is found only when that very id was
// added, with the line it was first seen on, even when every id has the
// same hash.
func TestSeenIDsRemembersEachIDExactly(t *testing.T) {
	for _, c := range []struct {
		name string
		hash func(string) uint64
	}{{"hashed", nil}, {"every id one hash", func(string) uint64 { return 7 }}} {
		t.Run(c.name, func(t *testing.T) {
			s := newSeenIDs()
			if c.hash != nil {
				s.hash = c.hash
			}
			ids := stripeIDs("evt_", 5000)
			line := map[string]int{}
			for i, id := range ids {
				if _, ok := s.line(id); ok {
					t.Fatalf("%s found before it was added", id)
				}
				s.add(id, i+1)
				line[id] = i + 1
			}
			for i, id := range ids {
				if got, ok := s.line(id); !ok || got != i+1 {
					t.Fatalf("%s: line %d, %v; added at %d", id, got, ok, i+1)
				}
				for _, other := range []string{id + "x", "x" + id, id[:len(id)-1], strings.ToLower(id)} {
					if got, ok := s.line(other); ok && got != line[other] {
						t.Fatalf("%s found at line %d, never added", other, got)
					}
				}
			}
		})
	}
}

// stripeIDs makes n distinct ids as Stripe writes them: the prefix and 24
// letters and digits (evt_1NG8Du2eZvKYlo2CUI79vXWy).
func stripeIDs(prefix string, n int) []string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	r := rand.New(rand.NewPCG(4, 2))
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		b := []byte(prefix + "1")
		for range 23 {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		if id := string(b); !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
