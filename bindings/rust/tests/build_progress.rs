//! The kernel-build progress callback. Its own test binary: the count is process-wide, and the
//! builds of tests running beside it would add to it.

mod common;

use common::{load, temp_path};
use grape::Code;

#[test]
fn build_progress_counts_the_kernels_of_a_bundle() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    let calls = Arc::new(AtomicUsize::new(0));
    let last = Arc::new(Mutex::new((0usize, 0usize)));
    let (c, l) = (calls.clone(), last.clone());
    grape::set_build_progress(Some(Box::new(move |done, total| {
        c.fetch_add(1, Ordering::SeqCst);
        *l.lock().unwrap() = (done, total);
    })));
    let m = load("fn main(x: f32[4], y: f32[4]) -> f32[4] {\n  return x * y - 3.0\n}\n");
    let path = temp_path("progress.grpkb");
    match m.write_kernel_bundle("compute_80", &path) {
        Err(e) if e.code == Code::NoDevice => {
            grape::set_build_progress(None);
            eprintln!("skipped: NVRTC cannot be loaded: {e}");
            return;
        }
        r => {
            r.unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let (done, total) = *last.lock().unwrap();
    assert!(total > 0 && done == total, "last call ({done}, {total})");
    assert!(calls.load(Ordering::SeqCst) >= total);
    grape::set_build_progress(None);
    let before = calls.load(Ordering::SeqCst);
    m.write_kernel_bundle("compute_80", &path)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(calls.load(Ordering::SeqCst), before, "called after removal");
}
