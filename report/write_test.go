package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"reconcile"
)

// WriteJSON writes exactly what encoding/json writes of the whole result
// (HTML characters unescaped), indented or not, whatever its text holds.
func TestWriteJSONEqualsItsEncoding(t *testing.T) {
	res := &Result{RunID: "rec_1", Counts: map[string]int{"missing": 2}, Inputs: []Input{{URI: `a "discrepancies": [] b.csv`}},
		Discrepancies: []Discrepancy{
			{Class: reconcile.ClassMissing, EffectKey: "r:charge:0", Transactions: []string{}, Actions: []Action{{Kind: reconcile.ActionRedeliver, Key: "r:charge:0"}},
				Reason: `no "charge" <by> the cutoff & "discrepancies":[]`, Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
			{Class: reconcile.ClassUnexpected, Transactions: []string{"ch_u"}, Actions: []Action{}},
		},
		Rejected: []Rejected{{URI: "a.csv", Line: 3, Raw: `"discrepancies":[]`}}, Orphans: []Orphan{}}
	for _, r := range []*Result{res, sampleResult(), {RunID: "rec_2", Discrepancies: []Discrepancy{}}, {RunID: "rec_3"}} {
		for _, indent := range []bool{false, true} {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if indent {
				enc.SetIndent("", "  ")
			}
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
			if !indent {
				want.Truncate(want.Len() - 1) // the encoder's newline
			}
			var got bytes.Buffer
			if err := WriteJSON(&got, r, indent); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%s, indent %v: WriteJSON =\n%s\nwant\n%s", r.RunID, indent, got.String(), want.String())
			}
		}
	}
}
