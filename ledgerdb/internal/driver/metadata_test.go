package driver

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// AppendMetadata writes what json.Marshal writes, for the maps a parser
// makes and for hostile ones: every escape json.Marshal makes, bytes that
// are not UTF-8, keys that sort by bytes, not by letters.
func TestAppendMetadataIsJSONMarshal(t *testing.T) {
	cases := []map[string]string{nil, {}, {"k": "v"}, {"b": "2", "a": "1", "B": "3", "é": "4", "": ""},
		{"order": `say "hi" \ there`, "html": "<a href='x'>&</a>", "ctl": "a\x00b\x01\n\r\t\b\f\x1f\x7f",
			"lines": "a\u2028b\u2029c", "bad": "\xff\xfe x \xc3", "emoji": "😀 ünï", "del": "\x7f"}}
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "Z", "0", " ", "\"", "\\", "<", ">", "&", "\n", "\x00", "\x7f", "\xff", "é", "\u2028", "😀", "\xe2\x80", "/"}
	for range 5000 {
		m := map[string]string{}
		for range r.IntN(5) {
			var k, v []byte
			for range r.IntN(6) {
				k = append(k, alphabet[r.IntN(len(alphabet))]...)
			}
			for range r.IntN(12) {
				v = append(v, alphabet[r.IntN(len(alphabet))]...)
			}
			m[string(k)] = string(v)
		}
		cases = append(cases, m)
	}
	for _, m := range cases {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendMetadata([]byte("x"), m); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("AppendMetadata(%q) = %s, json.Marshal gives %s", m, got, want)
		}
	}
}

func FuzzAppendMetadata(f *testing.F) {
	f.Add("k", "v", "k2", "<&>")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		m := map[string]string{k1: v1, k2: v2}
		want, _ := json.Marshal(m)
		if got := AppendMetadata(nil, m); !bytes.Equal(got, want) {
			t.Fatalf("AppendMetadata(%q) = %s, json.Marshal gives %s", m, got, want)
		}
	})
}

func BenchmarkMetadata(b *testing.B) {
	m := map[string]string{"order_id": "ord_12345", "customer": "cus_ABCDEF", "effect_key": "app_1:charge:123456"}
	b.Run("AppendMetadata", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = AppendMetadata(buf[:0], m)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(m)
		}
	})
}
