package driver

import (
	"encoding/json"
	"slices"
)

// AppendMetadata appends a record's metadata as JSON, byte for byte as
// json.Marshal writes it (keys sorted; <, > and & escaped, as are control
// characters, U+2028, U+2029 and bytes that are not UTF-8), at a fraction
// of its cost: json.Marshal was 7% of a 1M run's CPU in its profile.
// A string with anything to escape goes through json.Marshal itself.
func AppendMetadata(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendJSONString(b, k), ':')
		b = appendJSONString(b, m[k])
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string, as json.Marshal does.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
