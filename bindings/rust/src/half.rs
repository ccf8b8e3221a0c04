//! 16-bit floats as raw bits: `F16` (IEEE binary16) and `Bf16` (bfloat16), with conversions from
//! and to `f32` (round to nearest, ties to even; NaN stays NaN). Grape computes in these types;
//! Rust has no built-in half type and this crate takes no dependencies.

use std::fmt;

/// An IEEE 754 binary16 value, stored as its bits.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct F16(pub u16);

/// A bfloat16 value (the upper half of an f32), stored as its bits.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Bf16(pub u16);

impl F16 {
    pub fn from_f32(x: f32) -> F16 {
        F16(f32_to_f16_bits(x))
    }
    pub fn to_f32(self) -> f32 {
        f16_bits_to_f32(self.0)
    }
}

impl Bf16 {
    pub fn from_f32(x: f32) -> Bf16 {
        Bf16(f32_to_bf16_bits(x))
    }
    pub fn to_f32(self) -> f32 {
        bf16_bits_to_f32(self.0)
    }
}

impl fmt::Debug for F16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_f32(), f)
    }
}

impl fmt::Debug for Bf16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_f32(), f)
    }
}

/// Rounds half of the discarded low `shift` bits of `m` to even.
fn round_shift(m: u32, shift: u32) -> u32 {
    let kept = m >> shift;
    let rem = m & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rem > half || (rem == half && kept & 1 == 1) {
        kept + 1
    } else {
        kept
    }
}

pub fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        let nan = if man != 0 { 0x200 | (man >> 13) as u16 } else { 0 };
        return sign | 0x7c00 | nan;
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // Subnormal: the value in units of 2^-24 is (1.man) * 2^(e - 14 + 23) / 2^23.
        return sign | round_shift(man | 0x80_0000, (14 - e) as u32) as u16;
    }
    // A carry out of the mantissa correctly bumps the exponent (up to infinity).
    sign | round_shift(((e as u32) << 23) | man, 13) as u16
}

pub fn f16_bits_to_f32(h: u16) -> f32 {
    let negative = h & 0x8000 != 0;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let sign = if negative { 0x8000_0000 } else { 0 };
    match exp {
        0 => {
            let v = man as f32 / 16_777_216.0;
            if negative {
                -v
            } else {
                v
            }
        }
        0x1f => f32::from_bits(sign | 0x7f80_0000 | (man << 13)),
        _ => f32::from_bits(sign | ((exp + 112) << 23) | (man << 13)),
    }
}

pub fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

pub fn bf16_bits_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trips_every_value() {
        for h in 0..=u16::MAX {
            let x = f16_bits_to_f32(h);
            if x.is_nan() {
                assert!(f16_bits_to_f32(f32_to_f16_bits(x)).is_nan());
            } else {
                assert_eq!(f32_to_f16_bits(x), h, "{h:#06x} -> {x}");
            }
        }
    }

    #[test]
    fn f16_rounds_to_nearest_even() {
        assert_eq!(f32_to_f16_bits(1.0), 0x3c00);
        assert_eq!(f32_to_f16_bits(-2.0), 0xc000);
        assert_eq!(f32_to_f16_bits(65504.0), 0x7bff);
        assert_eq!(f32_to_f16_bits(65520.0), 0x7c00); // halfway to the next binade: infinity
        assert_eq!(f32_to_f16_bits(1.0 + 1.0 / 2048.0), 0x3c00); // tie, to even
        assert_eq!(f32_to_f16_bits(1.0 + 3.0 / 2048.0), 0x3c02); // tie, to even
        assert_eq!(f32_to_f16_bits(2.0f32.powi(-25)), 0); // tie with zero
        assert_eq!(f32_to_f16_bits(2.0f32.powi(-25) * 1.5), 1);
        assert_eq!(f32_to_f16_bits(1e-10), 0);
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(f32_to_bf16_bits(1.0), 0x3f80);
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert!(bf16_bits_to_f32(f32_to_bf16_bits(f32::NAN)).is_nan());
        assert_eq!(bf16_bits_to_f32(0xc000), -2.0);
    }
}
