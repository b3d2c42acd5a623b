//! Property test: every generated well-typed Program written by `ir::program_to_json` parses
//! back to the same Program (node ids, literals bit for bit). The GPU worker process receives
//! the inspector's Programs this way, so a lossy writer would run a different kernel.

use proptest::prelude::*;
use vyrescope::gen::{valid_program, Config};
use vyrescope::ir::{parse_program, program_to_json};

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn generated_programs_round_trip(seed in any::<u64>()) {
        let p = valid_program(seed, &Config::default());
        let text = program_to_json(&p).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(!text.contains('\n'), "one line: {text}");
        let q = parse_program(&text, "written.json")
            .map_err(|e| TestCaseError::fail(format!("seed {seed}: {e}\n{text}")))?;
        // Debug text also compares NaN literals, which PartialEq would call unequal.
        prop_assert_eq!(format!("{q:?}"), format!("{p:?}"), "seed {}: {}", seed, text);
    }
}
