//! Ahead-of-time kernel compiles and bundles: `compile_kernels`, a bundle written through a model
//! and read back, and the errors of bad arguments and files.

mod common;

use common::{load, temp_path};
use grape::Code;

const ADD: &str = "fn main(x: f32[4]) -> f32[4] {\n  return x * 2.0 + 1.0\n}\n";

#[test]
fn write_then_use() {
    let m = load(ADD);
    let path = temp_path("add.grpkb");
    let report = match m.write_kernel_bundle("compute_80", &path) {
        Err(e) if e.code == Code::NoDevice => {
            eprintln!("skipped: NVRTC cannot be loaded: {e}");
            return;
        }
        r => r.unwrap_or_else(|e| panic!("{e}")),
    };
    assert!(report.contains(&format!("bundle: {path}")), "{report}");
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
    grape::use_kernel_bundle(&path).unwrap_or_else(|e| panic!("{e}"));
    let e = m.write_kernel_bundle("sm80", &path).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
}

#[test]
fn bad_row_counts_are_refused_before_compiling() {
    let m = load(ADD);
    let path = temp_path("rows.grpkb");
    for bad in ["0", "17", "5,x"] {
        let e = m.write_kernel_bundle_rows("compute_80", bad, &path).unwrap_err();
        assert_eq!(e.code, Code::InvalidArgument, "{e}");
        assert!(e.to_string().contains("is not a row count from 1 to 16"), "{e}");
    }
    assert!(std::fs::metadata(&path).is_err());
}

#[test]
fn bad_files_are_errors_naming_the_file() {
    let missing = temp_path("missing.grpkb");
    let e = grape::use_kernel_bundle(&missing).unwrap_err();
    assert_eq!(e.code, Code::Io, "{e}");
    assert!(e.message.contains("missing.grpkb"), "{e}");
    let text = temp_path("text.grpkb");
    std::fs::write(&text, b"not a bundle at all, just text").unwrap();
    let e = grape::use_kernel_bundle(&text).unwrap_err();
    assert_eq!(e.code, Code::Format, "{e}");
    assert!(e.message.contains("text.grpkb"), "{e}");
    let e = grape::use_kernel_bundle("bad\0path").unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
}

#[test]
fn compile_kernels_reports_every_entry() {
    let m = load("fn main(x: f32[4]) -> f32[4] {\n  return x * 2.0 + 1.0\n}\nfn other(x: f32[4]) -> f32[4] {\n  return x - 1.0\n}\n");
    // Bad target lists are refused before NVRTC is needed.
    let e = m.compile_kernels("").unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
    let e = m.compile_kernels("sm80").unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
    assert!(e.message.contains("'sm80' is not a target name"), "{e}");
    let e = m.compile_kernels("sm_80\0").unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
    let report = match m.compile_kernels("compute_80") {
        Err(e) if e.code == Code::NoDevice => {
            eprintln!("skipped: NVRTC cannot be loaded: {e}");
            return;
        }
        r => r.unwrap_or_else(|e| panic!("{e}")),
    };
    // The targets, each entry with its kernels, the total.
    assert!(report.starts_with("targets: compute_80\n"), "{report}");
    assert!(report.contains("  main: ") && report.contains("  other: "), "{report}");
    assert!(
        report.contains("in 2 entries") && report.contains("no errors or warnings"),
        "{report}"
    );
}
