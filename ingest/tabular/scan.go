package tabular

import (
	"encoding/binary"
	"math/bits"
)

// Fields are short, a few bytes to a few dozen, and bytes.IndexByte pays
// more to start than it saves on them. These look at eight bytes at a time.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// zeros has the high bit of each byte of v that is zero set; bits above
// the lowest one found may be wrong, so only the lowest is used.
func zeros(v uint64) uint64 { return (v - lsb) &^ v & msb }

// index1 returns the position of the first x in b at or after i, or len(b).
func index1(b []byte, i int, x byte) int {
	xx := lsb * uint64(x)
	for ; i+8 <= len(b); i += 8 {
		if t := zeros(binary.LittleEndian.Uint64(b[i:]) ^ xx); t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
	}
	for ; i < len(b); i++ {
		if b[i] == x {
			return i
		}
	}
	return len(b)
}

// index2 returns the position of the first x or y in b at or after i, or
// len(b).
func index2(b []byte, i int, x, y byte) int {
	xx, yy := lsb*uint64(x), lsb*uint64(y)
	for ; i+8 <= len(b); i += 8 {
		v := binary.LittleEndian.Uint64(b[i:])
		if t := zeros(v^xx) | zeros(v^yy); t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
	}
	for ; i < len(b); i++ {
		if b[i] == x || b[i] == y {
			return i
		}
	}
	return len(b)
}

// HasExponent reports whether s holds an 'e' or 'E' followed by '+' or '-',
// as every number a spreadsheet writes in scientific notation ("1.8137E+15")
// does. reconcile.Mangled is only true for such text, so a line without one
// need not have its fields checked one by one.
func HasExponent(s string) bool {
	// Eight bytes at a time: the bytes that are 'e' or 'E', moved up one
	// place, against the bytes that are '+' or '-'.
	var carry uint64 // an 'e' or 'E' as the last byte of the eight before
	i := 0
	for ; i+8 <= len(s); i += 8 {
		v := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		e := exactZeros(v | lsb*0x20 ^ lsb*'e')
		if (e<<8|carry)&(exactZeros(v^lsb*'+')|exactZeros(v^lsb*'-')) != 0 {
			return true
		}
		carry = e >> 56
	}
	for ; i < len(s); i++ {
		if (s[i] == '+' || s[i] == '-') && i > 0 && s[i-1]|0x20 == 'e' {
			return true
		}
	}
	return false
}

// exactZeros has the high bit of each byte of v that is zero set, and no
// other bit.
func exactZeros(v uint64) uint64 {
	const low7 = lsb * 0x7f
	return ^((v&low7 + low7) | v) & msb
}
