package driver

// members finds the top-level "amount" and "currency" members of a JSON
// object in one pass, without decoding it: their values as raw JSON text
// (nil where the object has none; the last where it names one twice, as
// encoding/json and jsonb do). It checks the whole text as it goes, and
// gives up (ok false) on anything that is not a valid JSON object or that
// it does not read itself (an escape in a member's name, nesting deeper
// than maxDepth), for ReducedRequest to decode it in full instead.
func members(b []byte) (amount, currency []byte, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, nil, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, nil, skipWS(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, nil, false
		}
		start := i + 1
		end := start
		for end < len(b) && b[end] != '"' && b[end] != '\\' && b[end] >= 0x20 {
			end++
		}
		if end >= len(b) || b[end] != '"' {
			return nil, nil, false
		}
		name := b[start:end]
		i = skipWS(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return nil, nil, false
		}
		i = skipWS(b, i+1)
		j, good := skipValue(b, i, 0)
		if !good {
			return nil, nil, false
		}
		switch string(name) {
		case "amount":
			amount = b[i:j]
		case "currency":
			currency = b[i:j]
		}
		i = skipWS(b, j)
		if i >= len(b) {
			return nil, nil, false
		}
		if b[i] == '}' {
			return amount, currency, skipWS(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return nil, nil, false
		}
		i = skipWS(b, i+1)
	}
}

// maxDepth is how deeply members follows nested values before it leaves
// the request to encoding/json.
const maxDepth = 64

// skipValue returns the end of the JSON value that starts at b[i], and
// whether it is one.
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > maxDepth {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1, true
		}
		for {
			if c == '{' {
				j, ok := skipString(b, i)
				if !ok {
					return j, false
				}
				i = skipWS(b, j)
				if i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = skipWS(b, i+1)
			}
			j, ok := skipValue(b, i, depth+1)
			if !ok {
				return j, false
			}
			i = skipWS(b, j)
			if i >= len(b) {
				return i, false
			}
			if b[i] == closer {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipWS(b, i+1)
		}
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), true
		}
	}
	return i, false
}

// skipString returns the end of the JSON string that starts at b[i].
func skipString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

// skipNumber returns the end of the JSON number that starts at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
