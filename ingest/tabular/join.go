package tabular

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Join writes rec back as one delimited line, quoting fields as
// encoding/csv's Writer would; it is how a record's raw text is kept
// (Reader.Joined gives it without building it when the input already is
// written so). It builds the line directly, since a csv.Writer per row (and
// its 4 KiB buffer) was most of a parse's allocations.
func Join(rec []string, comma rune) string {
	n := len(rec) * utf8.RuneLen(comma)
	for _, f := range rec {
		n += len(f) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for i, f := range rec {
		if i > 0 {
			if comma < utf8.RuneSelf {
				b.WriteByte(byte(comma))
			} else {
				b.WriteRune(comma)
			}
		}
		if !needsQuotes(f, comma) {
			b.WriteString(f)
			continue
		}
		writeQuoted(&b, f)
	}
	return b.String()
}

// writeQuoted writes f in quotes, doubling the quotes in it.
func writeQuoted(b *strings.Builder, f string) {
	b.WriteByte('"')
	for {
		j := strings.IndexByte(f, '"')
		if j < 0 {
			break
		}
		b.WriteString(f[:j+1])
		b.WriteByte('"')
		f = f[j+1:]
	}
	b.WriteString(f)
	b.WriteByte('"')
}

// needsQuotes is encoding/csv's rule for quoting a field on output.
func needsQuotes(f string, comma rune) bool {
	if f == "" {
		return false
	}
	if f == `\.` {
		return true
	}
	if comma < utf8.RuneSelf {
		c := byte(comma)
		for i := 0; i < len(f); i++ {
			// '"', '\n' and '\r' are all at most '"'.
			if b := f[i]; b == c || b <= '"' && (b == '"' || b == '\n' || b == '\r') {
				return true
			}
		}
	} else if strings.ContainsRune(f, comma) || strings.ContainsAny(f, "\"\r\n") {
		return true
	}
	return leadingSpace(f)
}

// leadingSpace reports whether f starts with a space, as unicode.IsSpace
// has it.
func leadingSpace(f string) bool {
	if c := f[0]; c < utf8.RuneSelf {
		return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
	}
	r, _ := utf8.DecodeRuneInString(f)
	return unicode.IsSpace(r)
}

// Trim is strings.TrimSpace, without a call for the fields that neither
// start nor end with a space, as most fields do: their first and last bytes
// are ASCII from '!' on (0x21 to 0x7F).
func Trim(f string) string {
	if f != "" && (f[0]-'!' > 0x5e || f[len(f)-1]-'!' > 0x5e) {
		f = strings.TrimSpace(f)
	}
	return f
}
