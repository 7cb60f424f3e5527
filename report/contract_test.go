package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// A result as the run writes it keeps the contract, and every way of
// breaking the contract is found and named; a member beyond it is welcome.
func TestCheckContract(t *testing.T) {
	r := sampleResult()
	for i := range r.Discrepancies { // as the run builds them: lists, never null
		d := &r.Discrepancies[i]
		d.Transactions, d.Actions = append([]string{}, d.Transactions...), append([]Action{}, d.Actions...)
	}
	valid, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckContract(strings.NewReader(string(valid))); err != nil {
		t.Fatalf("the sample result: %v", err)
	}
	for _, c := range []struct {
		name, want string
		edit       func(m map[string]any)
	}{
		{"a member beyond the contract", "", func(m map[string]any) { m["extra"] = []any{1, "x"} }},
		{"no run id", "run_id: missing", func(m map[string]any) { delete(m, "run_id") }},
		{"no discrepancies", "discrepancies: missing", func(m map[string]any) { delete(m, "discrepancies") }},
		{"applied as text", "applied: not true or false", func(m map[string]any) { m["applied"] = "yes" }},
		{"a class not counted", "counts.deferred: not a count", func(m map[string]any) { delete(m["counts"].(map[string]any), "deferred") }},
		{"a count below zero", "counts.missing: not a count", func(m map[string]any) { m["counts"].(map[string]any)["missing"] = -1 }},
		{"an input without rows", "inputs[1].rows: missing", func(m map[string]any) { delete(input(m, 1), "rows") }},
		{"a lower-case currency", "discrepancies[0].currency: eur is not an upper-case currency code", func(m map[string]any) { finding(m, 0)["currency"] = "eur" }},
		{"an amount with decimals", "discrepancies[1].expected_minor: not an integer", func(m map[string]any) { finding(m, 1)["expected_minor"] = 50.5 }},
		{"an unknown class", "discrepancies[0].class: doubled is not one of", func(m map[string]any) { finding(m, 0)["class"] = "doubled" }},
		{"a transaction that is not text", "discrepancies[0].transactions[1]: not a string", func(m map[string]any) { finding(m, 0)["transactions"] = []any{"ch_1", 2} }},
		{"an unknown outcome", "discrepancies[0].actions[0].outcome: done is not one of", func(m map[string]any) {
			finding(m, 0)["actions"].([]any)[0].(map[string]any)["outcome"] = "done"
		}},
		{"an action without a key", "discrepancies[0].actions[0].key: missing", func(m map[string]any) {
			delete(finding(m, 0)["actions"].([]any)[0].(map[string]any), "key")
		}},
		{"a rejected row on line 0", "rejected[0].line: not a line number", func(m map[string]any) { m["rejected"].([]any)[0].(map[string]any)["line"] = 0 }},
		{"not an object", "found [ where { was expected", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(valid, &m); err != nil {
				t.Fatal(err)
			}
			var doc any = m
			if c.edit != nil {
				c.edit(m)
			} else {
				doc = []any{m}
			}
			b, _ := json.Marshal(doc)
			err := CheckContract(strings.NewReader(string(b)))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("CheckContract: %v; want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("CheckContract: %v; want an error containing %q", err, c.want)
			}
		})
	}
}

func input(m map[string]any, i int) map[string]any { return m["inputs"].([]any)[i].(map[string]any) }
func finding(m map[string]any, i int) map[string]any {
	return m["discrepancies"].([]any)[i].(map[string]any)
}
