//! The benchmark on a host test backend (no GPU): right answers verify, a single wrong bit
//! does not, every part of the report comes from the backend's own answers, and the JSON
//! carries the fields `benches/gpu/vyre_dispatch_race.sh` reads.

use std::collections::HashMap;
use std::sync::Mutex;

use vyre_driver::backend::{
    private, BackendError, DispatchConfig, ResidentOwner, Resource, TimedDispatchResult,
    VyreBackend,
};
use vyre_foundation::ir::Program;
use vyrescope_dispatch_bench::{dispatch_table, run_dispatch_bench, BenchSizes};

/// Small sizes, odd ones included (not a multiple of the workgroup).
const SIZES: BenchSizes = BenchSizes {
    vadd: &[1, 1000, 4099],
    reduce: 3001,
};

/// Host answers for the two benchmark Programs (told apart by their input count), each
/// timed dispatch reporting fixed parts; `flip` flips the lowest bit of output byte 0.
struct HostBackend {
    flip: bool,
    owner: ResidentOwner,
    buffers: Mutex<HashMap<u64, Vec<u8>>>,
    next: Mutex<u64>,
}

impl HostBackend {
    fn new(flip: bool) -> Self {
        HostBackend {
            flip,
            owner: ResidentOwner::new().unwrap(),
            buffers: Mutex::new(HashMap::new()),
            next: Mutex::new(1),
        }
    }

    fn answer(&self, inputs: &[&[u8]]) -> Result<Vec<u8>, BackendError> {
        let words = |b: &[u8]| -> Vec<[u8; 4]> {
            b.chunks_exact(4)
                .map(|c| [c[0], c[1], c[2], c[3]])
                .collect()
        };
        let mut out: Vec<u8> = match inputs {
            [a, b] => words(a)
                .iter()
                .zip(words(b))
                .flat_map(|(x, y)| (f32::from_le_bytes(*x) + f32::from_le_bytes(y)).to_le_bytes())
                .collect(),
            [x] => words(x)
                .iter()
                .fold(0u32, |s, w| s.wrapping_add(u32::from_le_bytes(*w)))
                .to_le_bytes()
                .to_vec(),
            _ => return Err(BackendError::new("Fix: pass one or two inputs")),
        };
        if self.flip {
            out[0] ^= 1;
        }
        Ok(out)
    }

    fn id_of(&self, r: &Resource) -> Result<u64, BackendError> {
        match r {
            Resource::Resident(h) => self.owner.resolve(*h, "host test backend"),
            Resource::Borrowed(_) => Err(BackendError::new("Fix: pass a resident buffer")),
        }
    }
}

impl private::Sealed for HostBackend {}

impl VyreBackend for HostBackend {
    fn id(&self) -> &'static str {
        "host-test"
    }

    fn dispatch(
        &self,
        _program: &Program,
        inputs: &[Vec<u8>],
        _config: &DispatchConfig,
    ) -> Result<Vec<Vec<u8>>, BackendError> {
        let views: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        Ok(vec![self.answer(&views)?])
    }

    fn dispatch_borrowed_timed(
        &self,
        _program: &Program,
        inputs: &[&[u8]],
        _config: &DispatchConfig,
    ) -> Result<TimedDispatchResult, BackendError> {
        Ok(TimedDispatchResult {
            outputs: vec![self.answer(inputs)?],
            wall_ns: 9_000,
            device_ns: Some(3_000),
            enqueue_ns: Some(2_000),
            wait_ns: Some(7_000),
        })
    }

    fn supports_resident_dispatch(&self) -> bool {
        true
    }

    fn allocate_resident(&self, byte_len: usize) -> Result<Resource, BackendError> {
        let mut next = self.next.lock().unwrap();
        *next += 1;
        self.buffers
            .lock()
            .unwrap()
            .insert(*next, vec![0; byte_len]);
        Ok(Resource::Resident(self.owner.handle(*next)))
    }

    fn upload_resident(&self, resource: &Resource, bytes: &[u8]) -> Result<(), BackendError> {
        let id = self.id_of(resource)?;
        let mut map = self.buffers.lock().unwrap();
        let buf = map.get_mut(&id).unwrap();
        if buf.len() != bytes.len() {
            return Err(BackendError::new("Fix: upload the buffer's length"));
        }
        buf.copy_from_slice(bytes);
        Ok(())
    }

    fn free_resident(&self, resource: Resource) -> Result<(), BackendError> {
        let id = self.id_of(&resource)?;
        self.buffers.lock().unwrap().remove(&id);
        Ok(())
    }

    fn dispatch_resident_timed(
        &self,
        _program: &Program,
        resources: &[Resource],
        _config: &DispatchConfig,
    ) -> Result<TimedDispatchResult, BackendError> {
        let ids = resources
            .iter()
            .map(|r| self.id_of(r))
            .collect::<Result<Vec<_>, _>>()?;
        let (out, ins) = ids.split_last().unwrap();
        let mut map = self.buffers.lock().unwrap();
        let views: Vec<Vec<u8>> = ins.iter().map(|i| map[i].clone()).collect();
        let refs: Vec<&[u8]> = views.iter().map(Vec::as_slice).collect();
        let answer = self.answer(&refs)?;
        let slot = map.get_mut(out).unwrap();
        if slot.len() != answer.len() {
            return Err(BackendError::new(
                "Fix: the output resource has the wrong length",
            ));
        }
        slot.copy_from_slice(&answer);
        Ok(TimedDispatchResult {
            outputs: Vec::new(),
            wall_ns: 5_000,
            device_ns: Some(1_500),
            enqueue_ns: None,
            wait_ns: None,
        })
    }
}

#[test]
fn right_answers_verify_and_every_figure_is_the_backends() {
    let be = HostBackend::new(false);
    let rep = run_dispatch_bench(&be, Some((20.0, 25.0)), &SIZES).unwrap();
    assert_eq!(rep.backend, "host-test");
    assert!(rep.passed);
    let shape: Vec<(&str, u64, u64)> = rep
        .rows
        .iter()
        .map(|r| (r.program.as_str(), r.elements, r.bytes_moved))
        .collect();
    assert_eq!(
        shape,
        [
            ("vadd_f32", 1, 12),
            ("vadd_f32", 1000, 12_000),
            ("vadd_f32", 4099, 49_188),
            ("reduce_sum_u32", 3001, 12_008),
        ]
    );
    for r in &rep.rows {
        assert!(r.verified, "{r:?}");
        assert_eq!(r.repeats, 200);
        assert!(r.median_us > 0.0 && r.min_us <= r.median_us, "{r:?}");
        // The split is the backend's timed answers, in µs.
        assert_eq!(r.split.wall_us, 9.0);
        assert_eq!(r.split.before_wait_us, Some(2.0));
        assert_eq!(r.split.device_us, Some(3.0));
        assert_eq!(r.split.after_wait_us, Some(7.0));
        assert_eq!((r.resident_wall_us, r.resident_device_us), (5.0, Some(1.5)));
        // Inputs at 20 GB/s up, outputs at 25 GB/s down.
        let outputs = if r.program == "vadd_f32" {
            4 * r.elements
        } else {
            4
        };
        let inputs = r.bytes_moved - outputs;
        let limit = inputs as f64 / 20e3 + outputs as f64 / 25e3;
        assert!((r.limit_us.unwrap() - limit).abs() < 1e-9, "{r:?}");
        assert!((r.vs_limit.unwrap() - r.median_us / limit).abs() < 1e-9);
    }
    let table = dispatch_table(&rep);
    assert!(table.contains("host->device 20.0 GB/s"), "{table}");
    assert_eq!(table.matches("verified").count(), 4, "{table}");
}

#[test]
fn one_wrong_bit_fails_verification_in_every_row() {
    let be = HostBackend::new(true);
    let rep = run_dispatch_bench(&be, None, &SIZES).unwrap();
    assert!(!rep.passed);
    assert!(rep.rows.iter().all(|r| !r.verified && r.limit_us.is_none()));
    let table = dispatch_table(&rep);
    assert_eq!(table.matches("WRONG").count(), 4, "{table}");
    assert!(table.contains("no copy limit"), "{table}");
}

/// The fields the race script reads from both sides' `--json`.
#[test]
fn the_json_carries_what_the_race_script_reads() {
    let be = HostBackend::new(false);
    let rep = run_dispatch_bench(&be, Some((10.0, 10.0)), &SIZES).unwrap();
    let v = serde_json::to_value(&rep).unwrap();
    assert_eq!(v["backend"], "host-test");
    assert_eq!(v["passed"], true);
    for (r, row) in v["rows"].as_array().unwrap().iter().zip(&rep.rows) {
        assert_eq!(r["program"], row.program.as_str());
        assert_eq!(r["elements"], row.elements);
        assert_eq!(r["median_us"], row.median_us);
        assert_eq!(r["limit_us"], row.limit_us.unwrap());
        assert_eq!(r["verified"], true);
        assert_eq!(r["split"]["device_us"], 3.0);
    }
}

/// A failing backend call names the Program and its size.
#[test]
fn a_backend_error_names_the_program_and_size() {
    struct NoResident(HostBackend);
    impl private::Sealed for NoResident {}
    impl VyreBackend for NoResident {
        fn id(&self) -> &'static str {
            "no-resident"
        }
        fn dispatch(
            &self,
            p: &Program,
            inputs: &[Vec<u8>],
            c: &DispatchConfig,
        ) -> Result<Vec<Vec<u8>>, BackendError> {
            self.0.dispatch(p, inputs, c)
        }
    }
    let err = run_dispatch_bench(&NoResident(HostBackend::new(false)), None, &SIZES).unwrap_err();
    assert_eq!((err.program.as_str(), err.elements), ("vadd_f32", 1));
    assert!(
        err.to_string().starts_with("vadd_f32 (1 elements): "),
        "{err}"
    );
}
