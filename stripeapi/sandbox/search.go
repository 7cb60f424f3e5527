package sandbox

import (
	"fmt"
	"strings"
)

// query is a parsed search query: clauses that must all hold. The sandbox
// reads the part of Stripe's search query language that finds payment
// intents by exact value: metadata['key']:'value', status:'succeeded',
// currency:'eur' and customer:'cus_…', joined by AND. Values are quoted with
// ' or "; a backslash escapes the next character.
type query []clause

type clause struct {
	field string // metadata, status, currency or customer
	key   string // the metadata key
	value string
}

// searchFields are the fields a clause may name, besides metadata.
var searchFields = map[string]bool{"status": true, "currency": true, "customer": true}

func parseQuery(s string) (query, error) {
	var q query
	rest := strings.TrimSpace(s)
	if rest == "" {
		return nil, fmt.Errorf("Missing required param: query.")
	}
	for {
		var c clause
		var err error
		if c, rest, err = parseClause(rest); err != nil {
			return nil, fmt.Errorf("Invalid search query %q: %v", s, err)
		}
		q = append(q, c)
		rest = strings.TrimSpace(rest)
		if rest == "" {
			return q, nil
		}
		var ok bool
		if rest, ok = strings.CutPrefix(rest, "AND "); !ok {
			return nil, fmt.Errorf("Invalid search query %q: clauses are joined by AND (the sandbox reads no other operator)", s)
		}
		rest = strings.TrimSpace(rest)
	}
}

// parseClause reads one field:'value' clause from the start of s.
func parseClause(s string) (clause, string, error) {
	var c clause
	if rest, ok := strings.CutPrefix(s, "metadata["); ok {
		key, rest, err := quoted(rest)
		if err != nil {
			return c, "", fmt.Errorf("metadata key: %v", err)
		}
		if rest, ok = strings.CutPrefix(rest, "]"); !ok {
			return c, "", fmt.Errorf("metadata key not closed by ]")
		}
		c.field, c.key, s = "metadata", key, rest
	} else {
		i := strings.IndexByte(s, ':')
		if i < 0 || !searchFields[s[:i]] {
			return c, "", fmt.Errorf("want metadata['key'], status, currency or customer, then :")
		}
		c.field, s = s[:i], s[i:]
	}
	s, ok := strings.CutPrefix(s, ":")
	if !ok {
		return c, "", fmt.Errorf("want : after %s", c.field)
	}
	value, rest, err := quoted(s)
	if err != nil {
		return c, "", fmt.Errorf("value of %s: %v", c.field, err)
	}
	c.value = value
	return c, rest, nil
}

// quoted reads a string in ' or " quotes from the start of s.
func quoted(s string) (string, string, error) {
	if s == "" || (s[0] != '\'' && s[0] != '"') {
		return "", "", fmt.Errorf("want a quoted string")
	}
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 == len(s) {
				return "", "", fmt.Errorf("unterminated string")
			}
			i++
			b.WriteByte(s[i])
		case q:
			return b.String(), s[i+1:], nil
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", fmt.Errorf("unterminated string")
}

// matches reports whether every clause holds for p.
func (q query) matches(p *payment) bool {
	for _, c := range q {
		var v string
		switch c.field {
		case "metadata":
			v = p.Metadata[c.key]
		case "status":
			v = p.Status
		case "currency":
			v = p.Currency
			c.value = strings.ToLower(c.value)
		case "customer":
			v = p.Params.Get("customer")
		}
		if v != c.value {
			return false
		}
	}
	return true
}
