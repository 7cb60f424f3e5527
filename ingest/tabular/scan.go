package tabular

import (
	"encoding/binary"
	"math/bits"
	"strings"
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

// exactZeros has the high bit of each byte of v that is zero set, and no
// other bits: unlike zeros, every byte found is one.
func exactZeros(v uint64) uint64 {
	const low7 = lsb * 0x7f
	return ^((v&low7 + low7) | v | low7)
}

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
	// Lines hold few signs, and strings.IndexByte, which is vectorized,
	// finds each faster than a look at every byte would.
	for _, sign := range [2]byte{'+', '-'} {
		for t := s; ; {
			i := strings.IndexByte(t, sign)
			if i < 0 {
				break
			}
			if i > 0 && t[i-1]|0x20 == 'e' {
				return true
			}
			t = t[i+1:]
		}
	}
	return false
}
