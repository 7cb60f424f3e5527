package driver

import (
	"fmt"
	"strings"
	"testing"

	"reconcile"
)

// Details give back, of the records pick takes, exactly what was added,
// however long a record's fields and whether it has metadata or not.
func TestDetailsGiveBackWhatWasAdded(t *testing.T) {
	d, err := newDetails()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var want []string
	for i := range 3000 {
		e := &reconcile.Evidence{TxID: fmt.Sprint("ch_", i), EffectKey: fmt.Sprint("r:charge:", i%7), Description: strings.Repeat("d", i%5),
			Raw: strings.Repeat(fmt.Sprint(i, ","), i%300)}
		switch i % 3 {
		case 0:
			e.Metadata = map[string]string{"i": fmt.Sprint(i), "q": `"` + "\n", "": "", "payment_metadata[effect_key]": e.EffectKey}
		case 1:
			e.Metadata = map[string]string{} // kept as none
		}
		if i == 7 {
			e.TxID = ""
		}
		if err := d.Add(i+1, e); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 || e.EffectKey == "r:charge:3" {
			md := ""
			if len(e.Metadata) > 0 {
				md = string(AppendMetadata(nil, e.Metadata))
			}
			want = append(want, fmt.Sprintf("%d %q %q %s", i+1, e.Description, e.Raw, md))
		}
	}
	picked := map[uint64]bool{nameHash("r:charge:3"): true}
	for i := 0; i < 3000; i += 10 {
		picked[nameHash(fmt.Sprint("ch_", i))] = true
	}
	pick := func(txID, key uint64) bool { return picked[txID] || picked[key] }
	for range 2 { // read twice: Each does not use the files up
		var got []string
		if err := d.Each(pick, func(x *Detail) error {
			got = append(got, fmt.Sprintf("%d %q %q %s", x.Seq, x.Description, x.Raw, x.Metadata))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("got %d details, want %d; first difference among\n%s\n---\n%s", len(got), len(want), strings.Join(got[:min(5, len(got))], "\n"),
				strings.Join(want[:5], "\n"))
		}
	}
}

// BenchmarkDetailsAdd is the cost of keeping a report line's details.
func BenchmarkDetailsAdd(b *testing.B) {
	d, err := newDetails()
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	e := &reconcile.Evidence{TxID: "ch_3Nq8Xc2eZvKYlo2C0x8Yabcd", EffectKey: "r:charge:1", Description: "Payment for order 1",
		Raw:      "txn_1,2026-12-01 10:00:00,usd,10.00,0.59,9.41,charge,ch_3Nq8Xc2eZvKYlo2C0x8Yabcd,,pi_1,Payment for order 1,r:charge:1,,",
		Metadata: map[string]string{"balance_transaction_id": "txn_1", "reporting_category": "charge", "payment_metadata[effect_key]": "r:charge:1"}}
	for i := 0; b.Loop(); i++ {
		if err := d.Add(i, e); err != nil {
			b.Fatal(err)
		}
	}
}
