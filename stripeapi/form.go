package stripeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"

	"github.com/stripe/stripe-go/v82/form"
)

// paymentForm form-encodes a recorded payment request for a redelivery
// under key: the recorded request as recordedRequest reads it, with
// confirm=true.
func paymentForm(key string, request json.RawMessage) (string, error) {
	req, err := recordedRequest(key, request)
	if err != nil {
		return "", err
	}
	req["confirm"] = true
	return formOf(req), nil
}

// refundForm form-encodes a recorded refund request for a redelivery under
// key: the recorded request and metadata[effect_key]=key, nothing more. A
// request that names no charge and no payment intent is an error: Stripe
// would refuse it, and there is nothing to refund.
func refundForm(key string, request json.RawMessage) (string, error) {
	req, err := recordedRequest(key, request)
	if err != nil {
		return "", err
	}
	ch, _ := req["charge"].(string)
	pi, _ := req["payment_intent"].(string)
	if ch == "" && pi == "" {
		return "", fmt.Errorf("recorded refund request names neither a charge nor a payment intent")
	}
	return formOf(req), nil
}

// recordedRequest reads a recorded request, a Stripe-style JSON object, for
// a redelivery under key, with metadata.effect_key set to key. Numbers stay
// their JSON text (never through float64). A recorded metadata.effect_key
// other than key is an error: the ledger contract says they are equal, and
// sending either would be wrong.
func recordedRequest(key string, request json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(request))
	dec.UseNumber()
	var req map[string]any
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("recorded request is not a JSON object: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("recorded request has data after its JSON object")
	}
	if req == nil {
		return nil, fmt.Errorf("recorded request is null, not a JSON object")
	}
	meta, ok := req["metadata"].(map[string]any)
	switch {
	case req["metadata"] == nil:
		meta = map[string]any{}
	case !ok:
		return nil, fmt.Errorf("recorded request's metadata is not a JSON object")
	}
	if k, ok := meta["effect_key"]; ok && k != key {
		return nil, fmt.Errorf("recorded request's metadata.effect_key %v is not its key %q", k, key)
	}
	meta["effect_key"] = key
	req["metadata"] = meta
	return req, nil
}

// formOf form-encodes a request: every field, nested objects as name[key]
// and arrays as name[0].
func formOf(req map[string]any) string {
	var f form.Values
	appendForm(&f, "", req)
	return f.Encode()
}

// appendForm adds v under name the way Stripe's form encoding nests values,
// object keys in sorted order. An empty object or array, or null, is sent
// as an empty value: Stripe's way of writing them.
func appendForm(f *form.Values, name string, v any) {
	nest := func(k string) string {
		if name == "" {
			return k
		}
		return name + "[" + k + "]"
	}
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 && name != "" {
			f.Add(name, "")
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			appendForm(f, nest(k), v[k])
		}
	case []any:
		if len(v) == 0 {
			f.Add(name, "")
		}
		for i, e := range v {
			appendForm(f, nest(strconv.Itoa(i)), e)
		}
	case string:
		f.Add(name, v)
	case json.Number:
		f.Add(name, v.String())
	case bool:
		f.Add(name, strconv.FormatBool(v))
	case nil:
		f.Add(name, "")
	}
}

// encode writes parameters in Stripe's form encoding, keys sorted, with the
// brackets of nested names left as they are.
func encode(v url.Values) string {
	var f form.Values
	for _, k := range slices.Sorted(maps.Keys(v)) {
		for _, s := range v[k] {
			f.Add(k, s)
		}
	}
	return f.Encode()
}
