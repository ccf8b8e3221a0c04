package grape

import "math"

// Float32ToF16 rounds f to the nearest IEEE half (ties to even) and returns its bits.
func Float32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b >> 23) & 0xff)
	man := b & 0x7fffff
	if exp == 0xff { // Inf or NaN (NaN stays a quiet NaN)
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // subnormal half, or zero
		if e < -10 {
			return sign
		}
		man |= 0x800000
		shift := uint32(14 - e)
		half := man >> shift
		rem := man & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, up to Inf: correct
	}
	return sign | uint16(half)
}

// F16ToFloat32 converts IEEE half bits to float32 (exactly).
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	f := float32(man) / (1 << 24) // subnormal: man * 2^-24
	if sign != 0 {
		return -f
	}
	return f
}

// Float32ToBF16 rounds f to the nearest bfloat16 (ties to even) and returns its bits.
func Float32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40 // quiet NaN
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToFloat32 converts bfloat16 bits to float32 (exactly).
func BF16ToFloat32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}
