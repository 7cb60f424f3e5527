package ingest_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

// A row that holds a NUL byte, or a byte that is not UTF-8, anywhere (its
// raw text or a field made from it, as a JSON \u0000 is) is rejected with
// its line and the byte, and its raw text and reason are kept with those
// bytes escaped as \xhh, which every ledger stores; the other rows are
// evidence.
func TestRowsHoldingNULOrInvalidUTF8AreRejected(t *testing.T) {
	lines := strings.SplitAfter(itemized, "\n")
	csv := lines[0] + lines[1] + strings.Replace(lines[2], "ch_2,ch_2", "ch_2,ch_\xe92", 1) + strings.Replace(lines[3], "re_1", "re\x00_1", 1)
	event := strings.Replace(liveEvents, `"effect_key":"run_1:charge:0"`, `"effect_key":"run_1:charge:0\u0000"`, 1)
	for _, tc := range []struct {
		name     string
		data     string
		evidence int
		want     []reconcile.Rejected
	}{
		{"csv", csv, 1, []reconcile.Rejected{
			{URI: "-", Line: 3, Reason: "line 3 is not valid UTF-8 (byte 0xE9 at column 62)",
				Raw: strings.TrimSuffix(strings.Replace(lines[2], "ch_2,ch_2", `ch_2,ch_\xe92`, 1), "\n")},
			{URI: "-", Line: 4, Reason: "line 4 holds a NUL byte (column 59)",
				Raw: strings.TrimSuffix(strings.Replace(lines[3], "re_1", `re\x00_1`, 1), "\n")}}},
		{"webhook event", event, 1, []reconcile.Rejected{
			{URI: "-", Line: 1, Reason: "line 1: its effect key holds a NUL byte (byte 15)", Raw: event[:strings.Index(event, "\n")]}}},
	} {
		in, c, err := readStdin(t, []byte(tc.data), nil)
		if err != nil {
			t.Fatalf("%s: Read: %v", tc.name, err)
		}
		if in.Evidence != tc.evidence {
			t.Errorf("%s: %d evidence, want %d", tc.name, in.Evidence, tc.evidence)
		}
		if diff := cmp.Diff(tc.want, c.rejected); diff != "" {
			t.Errorf("%s: rejected (-want +got):\n%s", tc.name, diff)
		}
	}
}
