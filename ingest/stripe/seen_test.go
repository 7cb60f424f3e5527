package stripe

import (
	"fmt"
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
			for i := range 5000 {
				id := fmt.Sprintf("evt_%d", i)
				if _, ok := s.line(id); ok {
					t.Fatalf("%s found before it was added", id)
				}
				s.add(id, i+1)
			}
			for i := range 5000 {
				id := fmt.Sprintf("evt_%d", i)
				if line, ok := s.line(id); !ok || line != i+1 {
					t.Fatalf("%s: line %d, %v; added at %d", id, line, ok, i+1)
				}
				for _, other := range []string{id + "x", "x" + id, id[:len(id)-1] + "_"} {
					if line, ok := s.line(other); ok && other != fmt.Sprintf("evt_%d", line-1) {
						t.Fatalf("%s found at line %d, never added", other, line)
					}
				}
			}
		})
	}
}
