package report

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s fit for a terminal: text from inputs and the ledger
// (ids, file names, reasons, a provider's error) cannot move the cursor,
// start a line, colour the screen or reverse the text after it. C0
// controls and DEL are written as Go writes them in a string (\n, \r, \t,
// \x1b, \x7f), C1 controls and the Unicode line separators and bidi
// controls as \u009b, \u2028, \u202e, and a byte that is not UTF-8 as
// \xe9. Every other character, printable Unicode included, stays as it is;
// so does a backslash, which keeps Windows paths readable.
func Printable(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for rest := s[i:]; rest != ""; {
		r, n := utf8.DecodeRuneInString(rest)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, rest[0])
		case unsafe(r):
			b.WriteString(escape(r))
		default:
			b.WriteString(rest[:n])
		}
		rest = rest[n:]
	}
	return b.String()
}

// firstUnsafe is the index of the first rune of s that Printable escapes,
// or -1.
func firstUnsafe(s string) int {
	for i, r := range s {
		if unsafe(r) {
			return i
		}
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return -1
}

// unsafe says whether r must not reach a terminal as it is.
func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, 0x80 <= r && r < 0xa0:
		return true // C0, DEL, C1
	case r == '\u2028', r == '\u2029':
		return true // line and paragraph separators
	case r == '\u061c', r == '\u200e', r == '\u200f', '\u202a' <= r && r <= '\u202e', '\u2066' <= r && r <= '\u2069':
		return true // bidi marks, embeddings, overrides and isolates
	}
	return false
}

func escape(r rune) string {
	switch r {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}
