package sandbox

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
)

// getCharge is GET /v1/charges/{id}, with its payment intent inline when
// asked with expand[]=payment_intent.
func (s *Server) getCharge(r *http.Request, form url.Values, key, reqID string) response {
	expand, resp, bad := expansions(form, "payment_intent")
	if bad {
		return resp
	}
	id := r.PathValue("id")
	p := s.charges[id]
	if p == nil {
		return errorResponse(http.StatusNotFound, apiError{Type: "invalid_request_error", Code: "resource_missing",
			Param: "id", Message: "No such charge: '" + id + "'"}, false)
	}
	o := s.chargeObject(p)
	if expand["payment_intent"] {
		o.PaymentIntent = s.intentObject(p)
	}
	return ok(o, false)
}

// expansions reads a request's expand parameters (expand[], expand[0], ...)
// and answers 400, as Stripe does, for a property other than those allowed.
func expansions(form url.Values, allowed ...string) (map[string]bool, response, bool) {
	out := map[string]bool{}
	for name, values := range form {
		if name != "expand" && !strings.HasPrefix(name, "expand[") {
			continue
		}
		for _, v := range values {
			ok := false
			for _, a := range allowed {
				ok = ok || v == a
			}
			if !ok {
				return nil, invalid("", name, "This property cannot be expanded (%s).", v), true
			}
			out[v] = true
		}
	}
	return out, response{}, false
}

// SetIntentMetadata sets metadata on a payment intent, as
// POST /v1/payment_intents/{id} with metadata[...] would: keys are merged,
// and an empty value unsets one. Like Stripe, it leaves the metadata of the
// intent's charge as it was copied at confirmation. It is a test aid: it
// makes a charge whose effect key is only on its payment intent.
func (s *Server) SetIntentMetadata(id string, metadata map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.intents[id]
	if p == nil {
		return fmt.Errorf("no such payment_intent: '%s'", id)
	}
	m := map[string]string{}
	maps.Copy(m, p.Metadata)
	for k, v := range metadata {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	p.Metadata = m
	return nil
}
