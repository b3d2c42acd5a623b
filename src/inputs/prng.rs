//! SplitMix64, the documented generator behind `"fill": "random"`.
//!
//! Algorithm (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014;
//! the variant used to seed xoshiro): the state is one `u64`, starting at `seed`. Each draw adds
//! the golden-ratio increment `0x9E37_79B9_7F4A_7C15` (wrapping) to the state and returns
//!
//! ```text
//! z = state
//! z = (z ^ (z >> 30)) * 0xBF58_476D_1CE4_E5B9   (wrapping)
//! z = (z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB   (wrapping)
//! z ^ (z >> 31)
//! ```
//!
//! Element `i` of a random buffer is made from draw number `i` (one draw per element), so a
//! buffer's prefix does not depend on its length.

/// SplitMix64 state.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// Golden-ratio increment added to the state before every draw.
    pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

    /// A generator whose first draw mixes `seed + GAMMA`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_reference_values() {
        // Reference outputs of the SplitMix64 C code (Vigna, splitmix64.c) for seed 1234567.
        let mut g = SplitMix64::new(1234567);
        let want = [
            6457827717110365317u64,
            3203168211198807973,
            9817491932198370423,
            4593380528125082431,
            16408922859458223821,
        ];
        for w in want {
            assert_eq!(g.next_u64(), w);
        }
    }
}
