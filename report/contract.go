package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"

	"reconcile"
)

// CheckContract reads a run's JSON result as other tools do, and says
// where it breaks the published contract (README, "The JSON result"): the
// members every consumer may rely on, with their types, the classes and
// outcomes they may hold, and upper-case currencies. Members beyond those
// are allowed. The discrepancies are read one at a time, so that a result
// of millions of them is checked in little memory.
func CheckContract(r io.Reader) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string)
		seen[name] = true
		if name == "discrepancies" {
			err = eachElement(dec, name, checkDiscrepancy)
		} else if check, ok := topLevel[name]; ok {
			var v any
			if err = dec.Decode(&v); err == nil {
				err = check(v)
			}
			if err != nil {
				err = at(name, err)
			}
		} else {
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return err
	}
	for _, name := range append(slices.Sorted(maps.Keys(topLevel)), "discrepancies") {
		if !seen[name] {
			return fmt.Errorf("%s: missing", name)
		}
	}
	return nil
}

var (
	topLevel = map[string]func(any) error{
		"run_id":  nonEmptyString,
		"as_of":   isString,
		"applied": isBool,
		"counts": func(v any) error {
			m, ok := v.(map[string]any)
			if !ok {
				return errors.New("not an object")
			}
			for _, c := range reconcile.Classes {
				if err := count(m[string(c)]); err != nil {
					return at("."+string(c), err)
				}
			}
			return nil
		},
		"inputs": eachOf(members(map[string]func(any) error{"uri": nonEmptyString, "format": isString, "rows": count, "evidence": count, "rejected": count})),
		"rejected": eachOf(members(map[string]func(any) error{"uri": nonEmptyString, "line": func(v any) error {
			if err := count(v); err != nil || v.(json.Number).String() == "0" {
				return errors.New("not a line number (1 or more)")
			}
			return nil
		}, "reason": nonEmptyString})),
	}
	checkDiscrepancy = members(map[string]func(any) error{
		"class":          oneOf(classNames()...),
		"effect_key":     isString,
		"provider":       nonEmptyString,
		"currency":       currency,
		"expected_minor": integer,
		"observed_minor": integer,
		"transactions":   eachOf(isString),
		"actions": eachOf(members(map[string]func(any) error{
			"kind": nonEmptyString, "key": nonEmptyString, "target": isString,
			"outcome": oneOf("planned", "applied", "skipped", "deferred", "escalated", "superseded", "refused"),
		})),
	})
	upperCurrency = regexp.MustCompile(`^([A-Z]{3})?$`)
	integerText   = regexp.MustCompile(`^-?[0-9]+$`)
)

func classNames() []string {
	var out []string
	for _, c := range reconcile.Classes {
		out = append(out, string(c))
	}
	return out
}

// members checks an object's required members, in a stable order so that
// the first error is always the same one.
func members(want map[string]func(any) error) func(any) error {
	names := slices.Sorted(maps.Keys(want))
	return func(v any) error {
		m, ok := v.(map[string]any)
		if !ok {
			return errors.New("not an object")
		}
		for _, name := range names {
			x, ok := m[name]
			if !ok {
				return at("."+name, errors.New("missing"))
			}
			if err := want[name](x); err != nil {
				return at("."+name, err)
			}
		}
		return nil
	}
}

func eachOf(check func(any) error) func(any) error {
	return func(v any) error {
		xs, ok := v.([]any)
		if !ok {
			return errors.New("not an array")
		}
		for i, x := range xs {
			if err := check(x); err != nil {
				return at(fmt.Sprintf("[%d]", i), err)
			}
		}
		return nil
	}
}

// eachElement checks an array member one element at a time.
func eachElement(dec *json.Decoder, name string, check func(any) error) error {
	if err := expectDelim(dec, '['); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for i := 0; dec.More(); i++ {
		var v any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%s[%d]: %w", name, i, err)
		}
		if err := check(v); err != nil {
			return at(fmt.Sprintf("%s[%d]", name, i), err)
		}
	}
	if err := expectDelim(dec, ']'); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// contractError says where in the result the contract breaks, as a path
// (discrepancies[3].actions[0].outcome).
type contractError struct{ path, problem string }

func (e *contractError) Error() string { return e.path + ": " + e.problem }

// at puts prefix before the path of err.
func at(prefix string, err error) error {
	var ce *contractError
	if errors.As(err, &ce) {
		return &contractError{prefix + ce.path, ce.problem}
	}
	return &contractError{prefix, err.Error()}
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("found %v where %v was expected", tok, d)
	}
	return nil
}

func isString(v any) error {
	if _, ok := v.(string); !ok {
		return errors.New("not a string")
	}
	return nil
}

func nonEmptyString(v any) error {
	if s, ok := v.(string); !ok || s == "" {
		return errors.New("not a non-empty string")
	}
	return nil
}

func isBool(v any) error {
	if _, ok := v.(bool); !ok {
		return errors.New("not true or false")
	}
	return nil
}

func integer(v any) error {
	if n, ok := v.(json.Number); !ok || !integerText.MatchString(n.String()) {
		return errors.New("not an integer")
	}
	return nil
}

func count(v any) error {
	if err := integer(v); err != nil || v.(json.Number).String()[0] == '-' {
		return errors.New("not a count (an integer, 0 or more)")
	}
	return nil
}

func currency(v any) error {
	if s, ok := v.(string); !ok || !upperCurrency.MatchString(s) {
		return fmt.Errorf("%v is not an upper-case currency code", v)
	}
	return nil
}

func oneOf(values ...string) func(any) error {
	return func(v any) error {
		if s, ok := v.(string); !ok || !slices.Contains(values, s) {
			return fmt.Errorf("%v is not one of %v", v, values)
		}
		return nil
	}
}
