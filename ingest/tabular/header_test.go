package tabular

import "testing"

// A header that names a column twice is refused when the column is one the
// parser reads, whichever spelling it has; a repeated column it does not
// read is not.
func TestHeaderUniqueNamesARepeatedColumn(t *testing.T) {
	h := NewHeader([]string{"id", "Gross", "fee", "note", " gross ", "note"})
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"id", "fee"}, ""},
		{[]string{"id", "gross", "fee"}, `the header names column "Gross" twice (columns 2 and 5)`},
		{[]string{"GROSS"}, `the header names column "Gross" twice (columns 2 and 5)`},
		{[]string{"missing", "note"}, `the header names column "note" twice (columns 4 and 6)`},
	} {
		if got := errString(h.Unique(tc.names...)); got != tc.want {
			t.Errorf("Unique(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}
