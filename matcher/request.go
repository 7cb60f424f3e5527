package matcher

import (
	"bytes"
	"strconv"
	"strings"
)

// IsPlainRequest reports whether a request is already in the form a
// ledger hands it over in (plainRequest): a driver that reduces requests
// itself passes such a one on as it is.
func IsPlainRequest(b []byte) bool {
	_, _, _, ok := plainRequest(b)
	return ok
}

// plainRequest reads a request that names nothing but its amount and
// currency, as a ledger hands it over for matching ({"amount": 1420000,
// "currency": "eur"}), without the cost of encoding/json. It gives up (ok
// false) on anything else: other members, a fraction or an exponent,
// escapes, non-ASCII text, repeated members. FromLedger then decodes the
// request in full, so both paths agree on every request this one accepts.
func plainRequest(b []byte) (amount int64, hasAmount bool, currency string, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, false, "", false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return 0, false, "", true
	}
	var seenAmount, seenCurrency bool
	for {
		name, j, good := plainString(b, i)
		if !good {
			return 0, false, "", false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return 0, false, "", false
		}
		i = skipSpace(b, i+1)
		null := bytes.HasPrefix(b[i:], []byte("null"))
		switch {
		case name == "amount" && !seenAmount:
			seenAmount = true
			if null {
				i += 4
				break
			}
			j := i
			if j < len(b) && b[j] == '-' {
				j++
			}
			start := j
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			if j == start || (b[start] == '0' && j-start > 1) || (j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E')) {
				return 0, false, "", false
			}
			n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
			if err != nil {
				return 0, false, "", false
			}
			amount, hasAmount, i = n, true, j
		case name == "currency" && !seenCurrency:
			seenCurrency = true
			if null {
				i += 4
				break
			}
			s, j, good := plainString(b, i)
			if !good {
				return 0, false, "", false
			}
			currency, i = strings.ToUpper(strings.TrimSpace(s)), j
		default:
			return 0, false, "", false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, false, "", false
		}
		switch b[i] {
		case '}':
			return amount, hasAmount, currency, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return 0, false, "", false
		}
	}
}

// plainString reads a JSON string at b[i] that has no escapes and only
// printable ASCII, and returns it and the index after its closing quote.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return string(b[i+1 : j]), j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", 0, false
		}
	}
	return "", 0, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
