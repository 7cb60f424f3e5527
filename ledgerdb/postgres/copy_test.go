package postgres

import (
	"io"
	"testing"
	"testing/iotest"
)

// A value goes to COPY with its backslashes, tabs and line ends escaped,
// whatever size the reads come in, and ends its row.
func TestCopyTextEscapes(t *testing.T) {
	in := "{\"a\": \"x\\\"y\\\\z\",\n\t\"b\": \"\r\"}"
	want := "{\"a\": \"x\\\\\"y\\\\\\\\z\",\\n\\t\"b\": \"\\r\"}\n"
	for name, r := range map[string]io.Reader{
		"whole":       &copyText{b: []byte(in)},
		"byte a read": iotest.OneByteReader(&copyText{b: []byte(in)}),
	} {
		got, err := io.ReadAll(r)
		if err != nil || string(got) != want {
			t.Errorf("%s: copyText(%q) = %q, %v; want %q", name, in, got, err, want)
		}
	}
	if got, _ := io.ReadAll(&copyText{}); string(got) != "\n" {
		t.Errorf("copyText of nothing = %q, want an empty row", got)
	}
}
