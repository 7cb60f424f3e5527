package sandbox

import (
	"net/http"
	"net/url"
	"time"
)

// keyEntry is what the sandbox remembers of an idempotency key: the first
// request's endpoint and parameters and, once its work is done, the answer.
type keyEntry struct {
	path   string
	params string // the form, canonically encoded: parameter order does not matter
	at     time.Time
	done   bool
	resp   response
}

// What begin found for a key.
const (
	keyNew     = iota // not seen (or forgotten): the caller does the work
	keyReplay         // seen with the same parameters: replay the answer
	keyRefused        // in flight, or seen with other parameters: answer the error
)

// begin looks up key for a request to path with form, with s.mu held. A key
// not seen before is taken (in flight) until finish.
func (s *Server) begin(key, path string, form url.Values) (response, int) {
	params := form.Encode()
	e := s.keys[key]
	if e != nil && e.done && s.now().Sub(e.at) >= s.ttl {
		delete(s.keys, key)
		e = nil
	}
	switch {
	case e == nil:
		s.keys[key] = &keyEntry{path: path, params: params, at: s.now()}
		return response{}, keyNew
	case !e.done:
		// Stripe's answer to a second request while the first one with
		// the key is still running: 409 Conflict, idempotency_key_in_use.
		return errorResponse(http.StatusConflict, apiError{Type: "idempotency_error", Code: "idempotency_key_in_use",
			Message: "There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): " + key + ". Please try again later."}, false), keyRefused
	case e.path != path:
		return errorResponse(http.StatusBadRequest, apiError{Type: "idempotency_error",
			Message: "Keys for idempotent requests can only be used for the same endpoint they were first used for ('" + path + "' vs '" + e.path + "'). Try using a key other than '" + key + "' if you meant to execute a different request."}, false), keyRefused
	case e.params != params:
		return errorResponse(http.StatusBadRequest, apiError{Type: "idempotency_error",
			Message: "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '" + key + "' if you meant to execute a different request."}, false), keyRefused
	}
	return e.resp, keyReplay
}

// finish records the answer to the request that took key, with s.mu held.
// An answer from a request that failed validation is not kept: the key is
// free again, as at Stripe.
func (s *Server) finish(key string, resp response) {
	e := s.keys[key]
	if e == nil {
		return
	}
	if !resp.executed {
		delete(s.keys, key)
		return
	}
	e.done, e.resp = true, resp
}

// ForgetKeys forgets every idempotency key whose request has finished, as a
// provider that pruned its keys early would: the same key then makes a new
// object.
func (s *Server) ForgetKeys() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.keys {
		if e.done {
			delete(s.keys, k)
		}
	}
}

// InFlight returns how many idempotency keys belong to requests that are
// still being processed (held by a hang fault): a test waits for it before
// sending a second request with the same key.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.keys {
		if !e.done {
			n++
		}
	}
	return n
}

// Arrived returns a channel that is closed when the next POST under the
// Idempotency-Key key arrives, once it has met its fault, if any. A test
// calls it before the request is sent, then waits on it, without sleeping,
// until the call is at the provider (held there by a latency or hang fault,
// say) before it moves on; a request that arrived before the call is not
// seen.
func (s *Server) Arrived(key string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return watch(s.arrivals, key)
}

// Landed returns a channel that is closed when the next POST under key
// that takes the key has done its work, whether or not its caller is still
// there: a hung call closes it when it finally lands. Once it is closed,
// what the request made is in Payments or Refunds. Replays, and requests
// refused because the key is in use or was used otherwise, do not land. As
// with Arrived, only requests after the call are seen.
func (s *Server) Landed(key string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return watch(s.landings, key)
}

// arrive closes the channel Arrived gave out for key, if any.
func (s *Server) arrive(key string) {
	if key == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	notify(s.arrivals, key)
}

// watch returns the channel in m that the next notify of key closes, with
// s.mu held. Only keys somebody waits on are kept, so a long-running sandbox
// does not grow with them.
func watch(m map[string]chan struct{}, key string) chan struct{} {
	ch := m[key]
	if ch == nil {
		ch = make(chan struct{})
		m[key] = ch
	}
	return ch
}

// notify closes and forgets the channel in m watching key, with s.mu held.
func notify(m map[string]chan struct{}, key string) {
	if ch := m[key]; ch != nil {
		close(ch)
		delete(m, key)
	}
}
