package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// The operations a fault can be aimed at.
const (
	OpCreatePaymentIntent = "create_payment_intent"
	OpGetPaymentIntent    = "get_payment_intent"
	OpGetCharge           = "get_charge"
	OpSearch              = "search"
	OpRefund              = "refund"
	OpListRefunds         = "list_refunds"
)

// The kinds of fault.
const (
	// FaultLatency sleeps Delay, then serves normally. The delay is on the
	// way in: when the caller gives up first, nothing is done.
	FaultLatency = "latency"
	// FaultError500 answers 500 without doing anything.
	FaultError500 = "error_500"
	// FaultRateLimit answers 429 without doing anything.
	FaultRateLimit = "rate_limit"
	// FaultDropAfter does the work, keeps the answer under the idempotency
	// key, then closes the connection without answering.
	FaultDropAfter = "drop_after"
	// FaultHang takes the idempotency key, sleeps Delay, then does the work,
	// even when the caller has gone: a call that outlives its caller's
	// timeout. A second request with the key meanwhile gets a 409.
	FaultHang = "hang"
	// FaultUnavailable answers 503 without doing anything.
	FaultUnavailable = "unavailable"
)

var (
	faultOps   = []string{"", OpCreatePaymentIntent, OpGetPaymentIntent, OpGetCharge, OpSearch, OpRefund, OpListRefunds}
	faultKinds = []string{FaultLatency, FaultError500, FaultRateLimit, FaultDropAfter, FaultHang, FaultUnavailable}
)

// Fault is a failure to inject into the requests that match it.
type Fault struct {
	Op    string        `json:"op"`    // one of the Op constants; "" matches any
	Key   string        `json:"key"`   // the Idempotency-Key to match; "" matches any request
	Kind  string        `json:"kind"`  // one of the Fault constants
	Times int           `json:"times"` // how many requests it hits; 0 until cleared
	Delay time.Duration `json:"delay"` // for latency and hang
}

func (f Fault) validate() error {
	if !slices.Contains(faultKinds, f.Kind) {
		return fmt.Errorf("unknown fault kind %q (want one of %v)", f.Kind, faultKinds)
	}
	if !slices.Contains(faultOps, f.Op) {
		return fmt.Errorf("unknown fault op %q (want one of %q)", f.Op, faultOps)
	}
	if f.Times < 0 || f.Delay < 0 {
		return fmt.Errorf("fault %s: times and delay must not be negative", f.Kind)
	}
	return nil
}

// Inject arms a fault. Faults are tried in the order they were injected; a
// request meets at most one. It panics on an unknown kind or op, a mistake
// in the test that calls it.
func (s *Server) Inject(f Fault) {
	if err := f.validate(); err != nil {
		panic("sandbox: " + err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// ClearFaults disarms every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// takeFault returns the first fault that matches a request, counting the
// hit, or nil.
func (s *Server) takeFault(op, key string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if (f.Op != "" && f.Op != op) || (f.Key != "" && f.Key != key) {
			continue
		}
		hit := *f
		if f.Times > 0 {
			if f.Times--; f.Times == 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
		}
		return &hit
	}
	return nil
}

// postFaults arms faults sent as JSON, one object or an array of them, so
// that another process can inject them. A delay is a Go duration string
// ("250ms") or a number of nanoseconds.
func (s *Server) postFaults(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		http.Error(w, "faults: "+err.Error(), http.StatusBadRequest)
		return
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		raw = append(append([]byte{'['}, raw...), ']')
	}
	var in []struct {
		Fault
		Delay json.RawMessage `json:"delay"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		http.Error(w, "faults: "+err.Error(), http.StatusBadRequest)
		return
	}
	var faults []Fault
	for _, f := range in {
		d, err := parseDelay(f.Delay)
		if err != nil {
			http.Error(w, "faults: "+err.Error(), http.StatusBadRequest)
			return
		}
		f.Fault.Delay = d
		if err := f.Fault.validate(); err != nil {
			http.Error(w, "faults: "+err.Error(), http.StatusBadRequest)
			return
		}
		faults = append(faults, f.Fault)
	}
	for _, f := range faults {
		s.Inject(f)
	}
	w.WriteHeader(http.StatusNoContent)
}

// parseDelay reads a delay written as "1.5s" or as nanoseconds.
func parseDelay(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("delay %s is neither a duration like \"250ms\" nor nanoseconds", raw)
	}
	return time.Duration(n), nil
}
