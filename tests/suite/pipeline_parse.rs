//! The pipeline parser and printer: fixtures load with their Programs, bindings follow the
//! Program's buffer order, errors carry the JSON path and a `Fix:`, program paths cannot
//! leave the pipeline's folder, and the printer prefixes node ids with `steps[i].`.

use std::path::Path;

use vyrescope::ir::pipeline_print::print_pipeline;
use vyrescope::ir::{
    is_pipeline_file, load_pipeline, looks_like_pipeline, parse_pipeline, Fill, InputSource,
};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_fixture_pipeline_loads_and_validates() {
    let mut n = 0;
    for e in std::fs::read_dir(root().join("fixtures/pipelines")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "json") {
            n += 1;
            assert!(is_pipeline_file(&path), "{}", path.display());
            let loaded = vyrescope::validate::pipeline::load_pipeline(&path);
            assert!(
                loaded.is_valid(),
                "{}: {:#?}",
                path.display(),
                loaded.diagnostics
            );
        }
    }
    assert!(n >= 5, "only {n} fixture pipelines");
    // Programs are not pipelines.
    assert!(!is_pipeline_file(
        &root().join("fixtures/programs/vadd_f32.json")
    ));
    assert!(!looks_like_pipeline("not json"));
    assert!(looks_like_pipeline(r#"{"x": [1, {"y": 2}], "steps": []}"#));
}

#[test]
fn chain_fixture_model() {
    let p = load_pipeline(&root().join("fixtures/pipelines/chain.json")).unwrap();
    assert_eq!(p.name, "chain");
    assert_eq!(
        p.buffers
            .iter()
            .map(|b| b.name.as_str())
            .collect::<Vec<_>>(),
        ["x", "y", "out"]
    );
    let x = p.buffer("x").unwrap();
    assert_eq!(x.contents.len, Some(5000));
    assert_eq!(
        x.contents.source,
        InputSource::Fill(Fill::Random {
            seed: 7,
            range: Some((-3.0, 3.0))
        })
    );
    assert_eq!(p.steps[0].program.name, "scale2_f32");
    assert_eq!(
        p.steps[0].program_path.as_deref(),
        Some("programs/scale2_f32.json")
    );
    assert_eq!(p.steps[1].bound("src"), Some("y"));
    assert_eq!(p.steps[1].workgroup(), [256, 1, 1]);
}

#[test]
fn bindings_follow_the_program_buffer_order() {
    let text = r#"{"format": 1, "pipeline": "p",
      "buffers": {"a": {"type": "f32", "len": 4, "fill": "ones"}, "b": {"type": "f32", "data": [1, 2, 3, 4]}},
      "steps": [{"program": {"format": 1, "name": "k", "workgroup_size": [4, 1, 1],
        "buffers": [{"name": "src", "binding": 0, "access": "read", "type": "f32"},
                    {"name": "dst", "binding": 1, "access": "write", "type": "f32"}],
        "body": [{"return": {}}]}, "bind": {"dst": "b", "src": "a"}}]}"#;
    let p = parse_pipeline(text, "t.json", Path::new(".")).unwrap();
    assert_eq!(
        p.steps[0].bind,
        vec![
            ("src".to_string(), "a".to_string()),
            ("dst".to_string(), "b".to_string())
        ]
    );
    assert_eq!(p.steps[0].program_path, None);
}

#[test]
fn errors_carry_the_json_path_and_a_fix() {
    let cases = [
        (
            r#"{"format": 1, "pipeline": "p", "buffers": {"a": {"type": "f32", "len": 1, "fill": "zeros"}},
             "steps": [{"program": "x.json", "bind": {"src": 3}}]}"#,
            "steps[0].bind.src",
        ),
        (
            r#"{"format": 1, "pipeline": "p", "buffers": {"a": {"type": "f99", "len": 1, "fill": "zeros"}},
             "steps": []}"#,
            "buffers.a",
        ),
        (
            r#"{"format": 1, "pipeline": "p", "buffers": {"a": {"type": "f32", "len": 1, "fill": "zeros", "color": 1}},
             "steps": []}"#,
            "buffers.a",
        ),
        // Like a Program file, a wrong format is reported for the document.
        (r#"{"format": 2, "pipeline": "p"}"#, ""),
        (r#"{"format": 1, "pipeline": "1p"}"#, "pipeline"),
        (
            r#"{"format": 1, "pipeline": "p", "buffers": {"a": {"type": "f32", "len": 1, "fill": "zeros"}},
             "steps": [{"program": "x.json", "bind": {"a": "a", "a": "a"}}]}"#,
            "steps[0].bind.a",
        ),
        (
            r#"{"format": 1, "pipeline": "p", "buffers": {"a": {"type": "f32", "len": 1, "fill": "zeros"}},
             "steps": [{"program": "x.json", "bind": {}, "workgroup_size": [0, 1, 1]}]}"#,
            "steps[0].workgroup_size",
        ),
    ];
    for (text, path) in cases {
        let e = parse_pipeline(text, "t.json", Path::new(".")).unwrap_err();
        assert_eq!(e.path, path, "{text}: {e}");
        assert!(!e.fix.is_empty(), "{e}");
        assert!(e.to_string().contains("Fix:"), "{e}");
    }
}

#[test]
fn unknown_buffer_type_names_the_closest_type() {
    let text = r#"{"format": 1, "pipeline": "p", "buffers": {"a": {"type": "f23", "len": 1, "fill": "zeros"}},
        "steps": []}"#;
    let e = parse_pipeline(text, "t.json", Path::new(".")).unwrap_err();
    assert!(e.message.contains("unknown element type `f23`"), "{e}");
    assert!(e.fix.starts_with("did you mean `f32`?"), "{e}");
    assert!(e.fix.contains("bool") && e.fix.contains("f16"), "{e}");
}

#[test]
fn program_paths_stay_inside_the_pipeline_folder() {
    let dir = std::env::temp_dir().join(format!("vyrescope_pipe_paths_{}", std::process::id()));
    let sub = dir.join("inner");
    std::fs::create_dir_all(sub.join("programs")).unwrap();
    let prog =
        std::fs::read_to_string(root().join("fixtures/pipelines/programs/add1_f32.json")).unwrap();
    std::fs::write(dir.join("outside.json"), &prog).unwrap();
    std::fs::write(sub.join("programs/add1.json"), &prog).unwrap();
    let pipe = |program: &str| {
        format!(
            r#"{{"format": 1, "pipeline": "p", "buffers": {{"a": {{"type": "f32", "len": 8, "fill": "iota"}},
                 "b": {{"type": "f32", "len": 8, "fill": "zeros"}}}},
               "steps": [{{"program": "{program}", "bind": {{"src": "a", "dst": "b"}}}}]}}"#
        )
    };
    for (program, ok) in [
        ("programs/add1.json", true),
        ("./programs/../programs/add1.json", true),
        ("../outside.json", false),
        ("programs/../../outside.json", false),
        ("/etc/hostname", false),
    ] {
        let r = parse_pipeline(&pipe(program), "p.json", &sub);
        assert_eq!(r.is_ok(), ok, "{program}: {r:?}");
        if let Err(e) = r {
            assert_eq!(e.path, "steps[0].program");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn printer_prefixes_node_ids_per_step() {
    let p = load_pipeline(&root().join("fixtures/pipelines/transient_intermediate.json")).unwrap();
    let printed = print_pipeline(&p);
    let text = printed.text();
    assert!(
        text.starts_with("pipeline transient_intermediate\n"),
        "{text}"
    );
    assert!(text.contains("f32  t[6000]"), "{text}");
    assert!(text.contains("transient"), "{text}");
    // Every statement of every step appears once, under its prefixed id.
    for (i, s) in p.steps.iter().enumerate() {
        assert!(printed.line_of(&format!("steps[{i}]")).is_some());
        let own = vyrescope::ir::print::print_program(&s.program);
        for l in own.lines.iter().filter_map(|l| l.node.as_ref()) {
            let id = format!("steps[{i}].{l}");
            assert_eq!(
                printed
                    .lines
                    .iter()
                    .filter(|x| x.node.as_deref() == Some(id.as_str()))
                    .count(),
                1,
                "{id}"
            );
        }
    }
    assert!(printed
        .text_with_gutter()
        .contains("steps[2].body[1].then[0] |"));
}
