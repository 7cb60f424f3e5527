package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"reconcile"
)

// WriteJSON writes exactly what encoding/json writes of the whole result
// (HTML characters unescaped), indented or not, whatever its text holds
// and however many discrepancies it has.
func TestWriteJSONEqualsItsEncoding(t *testing.T) {
	res := &Result{RunID: "rec_1", Counts: map[string]int{"missing": 2}, Inputs: []Input{{URI: `a "discrepancies": [] b.csv`}},
		Discrepancies: []Discrepancy{
			{Class: reconcile.ClassMissing, EffectKey: "r:charge:0", Transactions: []string{}, Actions: []Action{{Kind: reconcile.ActionRedeliver, Key: "r:charge:0"}},
				Reason: `no "charge" <by> the cutoff & "discrepancies":[]`, Time: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
			{Class: reconcile.ClassUnexpected, Transactions: []string{"ch_u"}, Actions: []Action{}},
		},
		Rejected: []Rejected{{URI: "a.csv", Line: 3, Raw: `"discrepancies":[]`}}, Orphans: []Orphan{}}
	// More discrepancies than fit in one block, and a part of one.
	many := &Result{RunID: "rec_4", Counts: map[string]int{}}
	for i := range 2*jsonBlock + 17 {
		d := Discrepancy{Class: reconcile.Classes[i%len(reconcile.Classes)], EffectKey: fmt.Sprintf("r:charge:%d", i),
			Transactions: []string{fmt.Sprintf("ch_%d", i)}, Actions: []Action{}, Reason: fmt.Sprintf("<%d> & \"%d\"\n", i, i)}
		if i%3 == 0 {
			d.Transactions = nil
		}
		many.Discrepancies = append(many.Discrepancies, d)
	}
	for _, r := range []*Result{res, sampleResult(), {RunID: "rec_2", Discrepancies: []Discrepancy{}}, {RunID: "rec_3"}, many} {
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
