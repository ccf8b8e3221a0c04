//! Compile worker processes (grp_set_compile_worker): an executable that cannot start leaves the
//! build in this process with the same kernels; this test binary is no worker.

mod common;

use common::{load, temp_path};
use grape::Code;
use std::path::Path;

#[test]
fn a_worker_that_cannot_start_changes_no_kernel() {
    assert_eq!(grape::run_compile_worker_if_asked(), None);
    let m = load("fn main(x: f32[4], y: f32[4]) -> f32[4] {\n  return x * y - 3.0\n}\n");
    let (a, b) = (temp_path("threads.grpkb"), temp_path("missing-worker.grpkb"));
    match m.write_kernel_bundle("compute_80", &a) {
        Err(e) if e.code == Code::NoDevice => {
            eprintln!("skipped: NVRTC cannot be loaded: {e}");
            return;
        }
        r => {
            r.unwrap_or_else(|e| panic!("{e}"));
        }
    }
    grape::set_compile_worker(Some(Path::new("/nonexistent/grape"))).unwrap();
    m.write_kernel_bundle("compute_80", &b)
        .unwrap_or_else(|e| panic!("{e}"));
    grape::set_compile_worker(None).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let e = grape::set_compile_worker(Some(Path::new("bad\0path"))).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
}
