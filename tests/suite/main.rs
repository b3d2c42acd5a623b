//! Every integration test in one binary: one link instead of one per file, which keeps a
//! fresh `cargo test` build short. Run one area with `cargo test --test suite <module>::`.

mod support;
mod tui_helpers;
mod tui_marks;
mod tui_pin;
mod tui_pipeline;
mod tui_profile;

mod atomic_order;
#[cfg(feature = "vyre")]
mod capture_view;
mod ci_script;
mod cli_check;
mod cli_diff;
mod cli_json_errors;
mod cli_occupancy;
mod cli_plan;
mod cli_run;
mod cli_scripting;
mod cli_stderr;
mod cli_tune;
mod compile_diagnostics;
mod diagnostics_rules;
mod dispatch_race_script;
mod docs_links;
mod emit_map;
mod emit_opt;
mod emit_ptxas_props;
mod emit_snapshots;
mod f32_literals;
mod fixtures_coverage;
mod fixtures_reference;
mod fuzz;
mod fuzz_children;
mod fuzz_pipelines;
mod gpu_worker;
mod hostile_files;
mod hostile_inputs;
mod hostile_round4;
mod interp_props;
mod invalid_fixtures;
mod ir_print;
mod ir_write;
mod large_data;
mod launch_list;
mod layers;
mod megakernel_dataflow;
mod megakernel_forward;
mod megakernel_fuse;
mod megakernel_halo;
mod megakernel_mixed;
mod occupancy_h200_table;
mod occupancy_model;
mod pipeline_cli;
mod pipeline_invalid;
mod pipeline_parse;
mod pipeline_run;
mod profile;
mod ptxas;
mod reg_estimate;
#[cfg(feature = "vyre")]
mod replay;
mod runtime_without_gpu;
mod sass_cli;
mod sass_control;
mod sass_map;
mod sass_tui;
mod selftest_fuzz;
mod subtask_barrier;
mod target_decision;
mod timeline;
mod tui_gpu;
mod tui_screens;
mod tui_scroll;
mod tui_snapshots;
mod tui_timeline;
mod tui_tmux;
mod tui_tmux_live;
mod tui_update;
mod validate_props;
#[cfg(feature = "vyre")]
mod vyre_backend;
#[cfg(feature = "vyre")]
mod vyre_both;
#[cfg(feature = "vyre")]
mod vyre_catalog;
#[cfg(feature = "vyre")]
mod vyre_export;
#[cfg(feature = "vyre")]
mod vyre_fixed_point;
#[cfg(feature = "vyre")]
mod vyre_graph;
#[cfg(feature = "vyre")]
mod vyre_hostile;
#[cfg(feature = "vyre")]
mod vyre_import;
#[cfg(not(feature = "vyre"))]
mod vyre_off;
#[cfg(feature = "vyre")]
mod vyre_roundtrip;
#[cfg(feature = "vyre")]
mod vyre_upstream_graphs;
#[cfg(not(feature = "vyre"))]
mod vyre_without_feature;
mod wg_dependence;
