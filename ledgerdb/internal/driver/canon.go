package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CanonicalJSON returns the JSON object in raw with insignificant
// differences removed: white space and the order of object fields. Numbers
// are kept exactly as written, so an amount never passes through float64.
// Two requests are the same request when their canonical forms are equal.
func CanonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("request is not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("request has trailing data after its JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("request must be a JSON object")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
