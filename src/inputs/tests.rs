use super::*;
use crate::ir::parse_program;

fn prog(buffers: &str, run: &str) -> Program {
    let text = format!(
        r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1],
            "buffers": [{buffers}], "body": [] {run}}}"#
    );
    parse_program(&text, "t.json").unwrap()
}

const AB: &str = r#"{"name": "a", "binding": 1, "access": "read", "type": "f32"},
                    {"name": "o", "binding": 0, "access": "read_write", "type": "u8"},
                    {"name": "s", "access": "workgroup", "type": "u32", "count": 4}"#;

#[test]
fn grid_from_elements_rounds_up_and_buffers_follow_binding_order() {
    let p = prog(
        AB,
        r#", "run": {"elements": 1000, "inputs": {"a": {"fill": "ones"}}}"#,
    );
    let r = prepare(&p, Path::new("."), None, None).unwrap();
    assert_eq!(r.shape.grid, [16, 1, 1]);
    assert_eq!(r.shape.workgroup_size, [64, 1, 1]);
    let names: Vec<_> = r.buffers.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["o", "a"]);
    assert_eq!(r.buffers[0].len(), 1000);
    assert!(r.buffers[0].data.iter().all(|&b| b == 0));
    assert_eq!(r.buffers[1].data.len(), 4000);
    assert_eq!(&r.buffers[1].data[..4], &1.0f32.to_le_bytes());
}

#[test]
fn overrides_win() {
    let p = prog(AB, r#", "run": {"elements": 1000}"#);
    let r = prepare(&p, Path::new("."), Some([32, 2, 1]), Some([3, 4, 5])).unwrap();
    assert_eq!(r.shape.grid, [3, 4, 5]);
    assert_eq!(r.shape.workgroup_size, [32, 2, 1]);
    let r = prepare(&p, Path::new("."), Some([128, 1, 1]), None).unwrap();
    assert_eq!(r.shape.grid, [8, 1, 1]);
}

#[test]
fn grid_from_largest_writable_buffer() {
    let p = prog(
        AB,
        r#", "run": {"inputs": {"o": {"len": 130, "fill": "iota"}, "a": {"len": 9999, "fill": "zeros"}}}"#,
    );
    let r = prepare(&p, Path::new("."), None, None).unwrap();
    assert_eq!(r.shape.grid, [3, 1, 1]);
    assert_eq!(r.buffers[0].data[129], 129);
    assert_eq!(r.buffers[1].len(), 9999);
}

#[test]
fn no_size_information_is_an_error_with_fix() {
    let p = prog(AB, "");
    let e = prepare(&p, Path::new("."), None, None).unwrap_err();
    assert!(e.to_string().contains("Fix:"), "{e}");
    // With a grid override the default length is the invocation count.
    let r = prepare(&p, Path::new("."), None, Some([2, 1, 1])).unwrap();
    assert_eq!(r.buffers[0].len(), 128);
}

#[test]
fn absurd_sizes_are_errors_not_aborts() {
    let p = prog(AB, r#", "run": {"elements": 4000000000}"#);
    let e = prepare(&p, Path::new("."), None, None).unwrap_err();
    assert!(e.message.contains("GiB"), "{e}");
    let p = prog(AB, r#", "run": {"elements": 5000000000}"#);
    assert!(prepare(&p, Path::new("."), None, None).is_err());
    let p = prog(AB, r#", "run": {"grid": [4294967295, 65535, 65535]}"#);
    assert!(prepare(&p, Path::new("."), Some([1024, 1024, 64]), None).is_err());
    let p = prog(AB, r#", "run": {"elements": 0}"#);
    assert!(prepare(&p, Path::new("."), None, None).is_err());
    let p = prog(AB, r#", "run": {"elements": 10}"#);
    assert!(prepare(&p, Path::new("."), Some([0, 1, 1]), None).is_err());
}

#[test]
fn data_and_file_inputs() {
    let dir = std::env::temp_dir().join(format!("vyrescope-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bytes: Vec<u8> = [1.5f32, -2.0, 3.25]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(dir.join("a.bin"), &bytes).unwrap();
    std::fs::write(dir.join("bad.bin"), [0u8; 5]).unwrap();
    let p = prog(
        AB,
        r#", "run": {"inputs": {"a": {"file": "a.bin"}, "o": {"data": [1, 255, 0]}}}"#,
    );
    let r = prepare(&p, &dir, None, None).unwrap();
    assert_eq!(r.buffers[1].data, bytes);
    assert_eq!(r.buffers[0].data, vec![1, 255, 0]);
    assert_eq!(r.shape.grid, [1, 1, 1]);

    let p = prog(
        AB,
        r#", "run": {"elements": 3, "inputs": {"a": {"file": "bad.bin"}}}"#,
    );
    let e = prepare(&p, &dir, None, None).unwrap_err();
    assert!(e.message.contains("multiple"), "{e}");
    let p = prog(
        AB,
        r#", "run": {"elements": 3, "inputs": {"a": {"file": "missing.bin"}}}"#,
    );
    assert!(prepare(&p, &dir, None, None).is_err());
    let p = prog(AB, r#", "run": {"inputs": {"o": {"data": [256]}}}"#);
    assert!(prepare(&p, &dir, None, None).is_err());
    let p = prog(AB, r#", "run": {"inputs": {"o": {"len": 4, "data": [1]}}}"#);
    assert!(prepare(&p, &dir, None, None).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inputs_must_name_host_buffers() {
    let p = prog(
        AB,
        r#", "run": {"elements": 3, "inputs": {"s": {"fill": "zeros"}}}"#,
    );
    assert!(prepare(&p, Path::new("."), None, None).is_err());
    let p = prog(
        AB,
        r#", "run": {"elements": 3, "inputs": {"zz": {"fill": "zeros"}}}"#,
    );
    assert!(prepare(&p, Path::new("."), None, None).is_err());
}
