// Package sandbox is a stateful server for the subset of Stripe's API that
// reconcile calls: payment intents (create, retrieve, search), charges
// (retrieve) and refunds (create, list), with Stripe's idempotency
// semantics, keys that expire, a search that lags its writes, injected
// faults, and exports of what it did in the formats Stripe's own reports and
// webhook dumps take. Besides what callers ask, a test can have a charge
// taken back (Dispute), a bank debit settled or returned (Settle, Return)
// and a refund failed (FailRefund): test payment methods choose a declined card, one that wants
// authentication, or a bank debit (pm_sepa_debit, pm_us_bank_account).
//
// It is a test and demo tool, not a mock: what it answers follows from what
// it was asked before, so a test can check what a client really made.
package sandbox

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Options configures a Server. The zero value remembers idempotency keys for
// 24 hours of real time.
type Options struct {
	// KeyTTL is how long idempotency keys are remembered, counted from the
	// first request that used them; 0 means 24h, as Stripe keeps them.
	KeyTTL time.Duration
	// Now is the server's clock; nil means time.Now.
	Now func() time.Time
	// Livemode is what every payment intent, charge and webhook event says
	// in its livemode field. The zero value is test mode, as Stripe's test
	// keys get.
	Livemode bool
	// SearchLag is how long a payment intent stays out of search results
	// after it is made: Stripe's search is eventually consistent ("data is
	// usually searchable within a minute"), retrieval by id is not. 0
	// means at once.
	SearchLag time.Duration
}

// Server is the sandbox: an http.Handler that keeps payment intents, charges
// and refunds in memory. It is safe for concurrent use.
type Server struct {
	ttl      time.Duration
	now      func() time.Time
	livemode bool
	lag      time.Duration
	mux      *http.ServeMux

	mu       sync.Mutex
	payments []*payment          // in the order they were made
	intents  map[string]*payment // by pi_ id
	charges  map[string]*payment // by ch_ id
	refunds  []*refund           // in the order they were made
	disputes []*dispute          // in the order they were made
	keys     map[string]*keyEntry
	faults   []*Fault
	events   []json.RawMessage        // webhook events, in the order they happened
	made     int                      // POSTs that made something
	arrivals map[string]chan struct{} // the channels Arrived gave out, by key
	landings map[string]chan struct{} // the channels Landed gave out, by key
}

// New returns an empty sandbox.
func New(opt Options) *Server {
	s := &Server{
		ttl:      opt.KeyTTL,
		now:      opt.Now,
		livemode: opt.Livemode,
		lag:      opt.SearchLag,
		mux:      http.NewServeMux(),
		intents:  map[string]*payment{},
		charges:  map[string]*payment{},
		keys:     map[string]*keyEntry{},
		arrivals: map[string]chan struct{}{},
		landings: map[string]chan struct{}{},
	}
	if s.ttl <= 0 {
		s.ttl = 24 * time.Hour
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.mux.HandleFunc("POST /v1/payment_intents", s.serve(OpCreatePaymentIntent, (*Server).createPaymentIntent))
	s.mux.HandleFunc("GET /v1/payment_intents/search", s.serve(OpSearch, (*Server).searchPaymentIntents))
	s.mux.HandleFunc("GET /v1/payment_intents/{id}", s.serve(OpGetPaymentIntent, (*Server).getPaymentIntent))
	s.mux.HandleFunc("GET /v1/charges/{id}", s.serve(OpGetCharge, (*Server).getCharge))
	s.mux.HandleFunc("POST /v1/refunds", s.serve(OpRefund, (*Server).createRefund))
	s.mux.HandleFunc("GET /v1/refunds", s.serve(OpListRefunds, (*Server).listRefunds))
	s.mux.HandleFunc("POST /_sandbox/faults", s.postFaults)
	s.mux.HandleFunc("DELETE /_sandbox/faults", func(w http.ResponseWriter, r *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("POST /_sandbox/forget-keys", func(w http.ResponseWriter, r *http.Request) {
		s.ForgetKeys()
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("GET /_sandbox/export/itemized", func(w http.ResponseWriter, r *http.Request) {
		var since time.Time
		if v := r.URL.Query().Get("since"); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				http.Error(w, "since: want an RFC 3339 time", http.StatusBadRequest)
				return
			}
			since = t
		}
		w.Header().Set("Content-Type", "text/csv")
		w.Header().Set("Content-Disposition", `attachment; filename="sandbox.itemized.csv"`)
		s.ExportItemizedSince(w, since)
	})
	s.mux.HandleFunc("GET /_sandbox/export/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		s.ExportEvents(w)
	})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, apiError{Type: "invalid_request_error",
			Message: fmt.Sprintf("Unrecognized request URL (%s: %s).", r.Method, r.URL.Path)})
	})
	return s
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Requests returns how many POSTs made something: a payment intent or a
// refund. Replays and refused requests make nothing.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.made
}

// response is what an endpoint answers.
type response struct {
	status int
	body   []byte
	// executed is true when the endpoint began its work: such an answer is
	// kept under the idempotency key and replayed, as Stripe does. Requests
	// that fail validation are not kept and may be retried.
	executed bool
}

// endpoint does one operation's work with s.mu held. key is the request's
// Idempotency-Key and reqID its request id.
type endpoint func(s *Server, r *http.Request, form url.Values, key, reqID string) response

// serve wraps an endpoint with what every request goes through: the API
// key, injected faults and, for POSTs, the idempotency layer.
func (s *Server) serve(op string, fn endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reqID := newID("req_")
		w.Header().Set("Request-Id", reqID)
		if !authorized(r) {
			writeError(w, http.StatusUnauthorized, apiError{Type: "invalid_request_error",
				Message: "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY')."})
			return
		}
		if err := r.ParseForm(); err != nil {
			writeError(w, http.StatusBadRequest, apiError{Type: "invalid_request_error", Message: "Invalid request body: " + err.Error()})
			return
		}
		form := r.URL.Query()
		key := ""
		if r.Method == http.MethodPost {
			form = r.PostForm
			if key = strings.TrimSpace(r.Header.Get("Idempotency-Key")); key != "" {
				w.Header().Set("Idempotency-Key", key)
			}
		}

		f := s.takeFault(op, key)
		s.arrive(key)
		kind := ""
		if f != nil {
			kind = f.Kind
		}
		switch kind {
		case FaultError500:
			writeError(w, http.StatusInternalServerError, apiError{Type: "api_error",
				Message: "An unknown error occurred (injected by the sandbox)."})
			return
		case FaultRateLimit:
			writeError(w, http.StatusTooManyRequests, apiError{Type: "invalid_request_error", Code: "rate_limit",
				Message: "Too many requests hit the API too quickly (injected by the sandbox)."})
			return
		case FaultUnavailable:
			writeError(w, http.StatusServiceUnavailable, apiError{Type: "api_error",
				Message: "The service is temporarily unavailable (injected by the sandbox)."})
			return
		case FaultLatency:
			// The delay is on the way in: a caller that gives up first
			// never reaches the provider, and nothing is made.
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
		}

		resp, replayed := s.run(r, fn, form, key, reqID, f)
		if kind == FaultDropAfter {
			drop(w)
			return
		}
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.status)
		w.Write(resp.body)
	}
}

// run answers a request: from the idempotency store when its key was seen,
// else by doing the work. A hang fault sleeps after the key is taken and
// before the work, whether or not the caller is still there.
func (s *Server) run(r *http.Request, fn endpoint, form url.Values, key, reqID string, f *Fault) (response, bool) {
	if key != "" {
		s.mu.Lock()
		resp, state := s.begin(key, r.URL.Path, form)
		s.mu.Unlock()
		if state != keyNew {
			return resp, state == keyReplay
		}
	}
	if f != nil && f.Kind == FaultHang {
		time.Sleep(f.Delay)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := fn(s, r, form, key, reqID)
	if key != "" {
		s.finish(key, resp)
		notify(s.landings, key)
	}
	return resp, false
}

// drop closes the connection without an answer, as a network failure after
// the provider did the work would.
func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // closes the stream under HTTP/2
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// authorized reports whether the request carries an API key, as Bearer
// auth or as the user of basic auth, the two ways Stripe accepts.
func authorized(r *http.Request) bool {
	if user, _, ok := r.BasicAuth(); ok {
		return user != ""
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && strings.TrimSpace(tok) != ""
}

// apiError is the body of a Stripe error: {"error": {...}}.
type apiError struct {
	Type          string          `json:"type"`
	Code          string          `json:"code,omitempty"`
	DeclineCode   string          `json:"decline_code,omitempty"`
	Message       string          `json:"message"`
	Param         string          `json:"param,omitempty"`
	PaymentIntent json.RawMessage `json:"payment_intent,omitempty"`
}

// errorResponse is an error answer. Errors from validation are not kept
// under the idempotency key; pass executed for those found while working.
func errorResponse(status int, e apiError, executed bool) response {
	body, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{e})
	return response{status: status, body: append(body, '\n'), executed: executed}
}

func writeError(w http.ResponseWriter, status int, e apiError) {
	resp := errorResponse(status, e, false)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(resp.body)
}

// invalid is a 400 for a request that failed validation.
func invalid(code, param, format string, args ...any) response {
	return errorResponse(http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: code, Param: param,
		Message: fmt.Sprintf(format, args...)}, false)
}

// ok is a 200 with v as JSON.
func ok(v any, executed bool) response {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // our own types always marshal
	}
	return response{status: http.StatusOK, body: append(body, '\n'), executed: executed}
}

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newID returns a Stripe-looking id: the prefix and 24 random alphanumerics.
func newID(prefix string) string {
	b := make([]byte, len(prefix)+24)
	copy(b, prefix)
	for i := len(prefix); i < len(b); i++ {
		b[i] = idChars[rand.IntN(len(idChars))]
	}
	return string(b)
}

// metadata collects the metadata[...] parameters of a form.
func metadata(form url.Values) map[string]string {
	m := map[string]string{}
	for k, v := range form {
		name, ok := strings.CutPrefix(k, "metadata[")
		if !ok || !strings.HasSuffix(name, "]") || len(v) == 0 {
			continue
		}
		if v[len(v)-1] != "" { // an empty value unsets a key in Stripe
			m[strings.TrimSuffix(name, "]")] = v[len(v)-1]
		}
	}
	return m
}
