//! Bounded and interrupted runs, the backend a session runs on, and what a run reports:
//! `SessionOptions::{max_loop_trips, timeout}`, `Session::interrupter`, `backend`,
//! `fallback_reason`, `last_run_stats`, `auto_decisions`; and the C functions behind them called
//! directly with the arguments the safe API never passes (NULL, a small struct_size, an index out
//! of range).

mod common;

use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::load;
use grape::{ffi, Code, SessionOptions};

/// A device loop without `max`: `n` trips (about a microsecond each on the CPU).
const SPIN: &str = r#"
fn main(n: i32[]) -> i32[] {
  var i = 0
  while i < n {
    i = i + 1
  }
  return i
}
"#;

#[test]
fn max_loop_trips_caps_loops_without_max() {
    let m = load(SPIN);
    let mut s = m.session(&SessionOptions::new().max_loop_trips(10)).unwrap();
    s.set_input("n", &[], &[10i32]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<i32>(0).unwrap(), [10]);
    // One trip past the cap: GRP_ERR_TYPE on the CPU, naming the loop and the cap.
    s.set_input("n", &[], &[11i32]).unwrap();
    let e = s.run().unwrap_err();
    assert_eq!(e.code, Code::Type, "{e:?}");
    assert!(e.message.contains("ran 10 trips without stopping"), "{e}");
    assert!(e.location.is_some(), "{e:?}");
    // The failed run changed nothing.
    assert_eq!(s.output_vec::<i32>(0).unwrap(), [10]);

    let e = m.session(&SessionOptions::new().max_loop_trips(-1)).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
}

#[test]
fn a_run_past_its_timeout_is_interrupted_and_changes_nothing() {
    let m = load(SPIN);
    let opts = SessionOptions::new()
        .max_loop_trips(i64::MAX)
        .timeout(Duration::from_millis(50));
    let mut s = m.session(&opts).unwrap();
    s.set_input("n", &[], &[3i32]).unwrap();
    s.run().unwrap();
    s.set_input("n", &[], &[i32::MAX]).unwrap();
    let start = Instant::now();
    let e = s.run().unwrap_err();
    assert_eq!(e.code, Code::Interrupted, "{e:?}");
    assert!(e.message.contains("longer than its timeout of 0.05 s"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(20), "{:?}", start.elapsed());
    assert_eq!(s.output_vec::<i32>(0).unwrap(), [3]);
    // Still usable.
    s.set_input("n", &[], &[5i32]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<i32>(0).unwrap(), [5]);
    // A zero timeout is none.
    let s = m.session(&SessionOptions::new().timeout(Duration::ZERO)).unwrap();
    drop(s);
}

#[test]
fn an_interrupter_stops_a_run_from_another_thread() {
    let m = load(SPIN);
    // The timeout only keeps a broken interrupt from hanging the test; its message differs.
    let opts = SessionOptions::new()
        .max_loop_trips(i64::MAX)
        .timeout(Duration::from_secs(60));
    let mut s = m.session(&opts).unwrap();
    s.set_input("n", &[], &[2i32]).unwrap();
    s.run().unwrap();

    // With no run in progress an interrupt has no effect: the next run clears it.
    let stop = s.interrupter();
    stop.interrupt();
    s.run().unwrap();

    s.set_input("n", &[], &[i32::MAX]).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let helper = {
        let (stop, done) = (stop.clone(), Arc::clone(&done));
        std::thread::spawn(move || {
            // Until the run has started and seen it.
            while !done.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
                stop.interrupt();
            }
        })
    };
    let e = s.run().unwrap_err();
    done.store(true, Ordering::Release);
    helper.join().unwrap();
    assert_eq!(e.code, Code::Interrupted, "{e:?}");
    assert!(e.message.contains("the run was interrupted"), "{e}");
    // Nothing changed and the session stays usable.
    assert_eq!(s.output_vec::<i32>(0).unwrap(), [2]);
    s.set_input("n", &[], &[7i32]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<i32>(0).unwrap(), [7]);

    // An interrupter may outlive its session: interrupting then is a no-op.
    drop(s);
    stop.interrupt();
    fn send_sync<T: Send + Sync + Clone>(_: &T) {}
    send_sync(&stop);
}

#[test]
fn backend_and_fallback_reason() {
    let m = load(SPIN);
    let cpu = m.session(&SessionOptions::new().backend("cpu")).unwrap();
    assert_eq!(cpu.backend(), "cpu");
    assert_eq!(cpu.fallback_reason(), None);
    let auto = m.session(&SessionOptions::new().backend("auto")).unwrap();
    if grape::backend_available("cuda") {
        assert_eq!(auto.backend(), "cuda");
        assert_eq!(auto.fallback_reason(), None);
    } else {
        // No usable GPU: the CPU, saying why.
        assert_eq!(auto.backend(), "cpu");
        let why = auto.fallback_reason().expect("a reason for the fallback");
        assert!(!why.is_empty());
    }
}

#[test]
fn last_run_stats_on_the_cpu() {
    let m = load(SPIN);
    let mut s = m.session(&SessionOptions::new().backend("cpu")).unwrap();
    let before = s.last_run_stats().unwrap();
    assert_eq!(before.executor, "cpu");
    assert_eq!((before.kernels, before.graph_launches, before.graphs), (0, 0, 0));
    s.set_input("n", &[], &[100i32]).unwrap();
    s.run().unwrap();
    let after = s.last_run_stats().unwrap();
    // The CPU backend launches no kernels and holds no graphs; "auto" has nothing to say.
    assert_eq!(after.executor, "cpu");
    assert_eq!(after.kernels, 0);
    assert_eq!((after.graph_launches, after.graphs, after.graph_bytes), (0, 0, 0));
    assert_eq!(after.auto_state, "");
    // Nothing to tune on the CPU.
    assert_eq!(
        (after.kernels_tuned, after.kernels_retuned, after.tuning_ms),
        (0, 0, 0.0)
    );
}

#[test]
fn auto_decisions_are_empty_on_the_cpu() {
    let m = load(SPIN);
    let mut s = m.session(&SessionOptions::new().backend("cpu")).unwrap();
    assert!(s.auto_decisions().unwrap().is_empty());
    s.set_input("n", &[], &[1i32]).unwrap();
    for _ in 0..3 {
        s.run().unwrap();
    }
    assert!(s.auto_decisions().unwrap().is_empty());
}

/// Reads a C error, freeing it: (code, message).
fn take(e: *mut ffi::grp_error) -> (Code, String) {
    let e = unsafe { grape::check(e) }.expect_err("an error");
    (e.code, e.message)
}

#[test]
fn the_c_functions_reject_what_the_safe_api_never_passes() {
    // A model and a session made by the C API directly (the safe types do not expose handles).
    let mut raw: *mut ffi::grp_session = ptr::null_mut();
    let opts = ffi::session_default_options();
    let model = {
        let mut out = ptr::null_mut();
        let mopts = ffi::model_default_options();
        unsafe {
            grape::check(ffi::grp_model_load_source(
                SPIN.as_ptr().cast(),
                SPIN.len(),
                ptr::null(),
                &mopts,
                &mut out,
            ))
            .unwrap();
        }
        out
    };
    unsafe {
        grape::check(ffi::grp_session_create(model, &opts, &mut raw)).unwrap();
        let mut stats: ffi::grp_run_stats = std::mem::zeroed();

        // grp_session_last_run_stats: NULL session, NULL out, a struct_size below the v1 struct.
        stats.struct_size = std::mem::size_of::<ffi::grp_run_stats>();
        assert_eq!(
            take(ffi::grp_session_last_run_stats(ptr::null(), &mut stats)).0,
            Code::InvalidArgument
        );
        assert_eq!(
            take(ffi::grp_session_last_run_stats(raw, ptr::null_mut())).0,
            Code::InvalidArgument
        );
        stats.struct_size = 16;
        let (code, msg) = take(ffi::grp_session_last_run_stats(raw, &mut stats));
        assert_eq!(code, Code::InvalidArgument);
        assert!(msg.contains("smaller than the v1 struct"), "{msg}");
        // A v1-sized struct is filled up to compile_ms and not beyond.
        stats.struct_size = 48;
        stats.executor = c"untouched".as_ptr();
        grape::check(ffi::grp_session_last_run_stats(raw, &mut stats)).unwrap();
        assert_eq!(std::ffi::CStr::from_ptr(stats.executor).to_str().unwrap(), "untouched");

        // grp_session_auto_decisions / _at: NULL session; index out of range; small struct.
        assert_eq!(
            take(ffi::grp_session_auto_decisions(ptr::null_mut(), ptr::null_mut())).0,
            Code::InvalidArgument
        );
        let mut count = 99usize;
        grape::check(ffi::grp_session_auto_decisions(raw, &mut count)).unwrap();
        assert_eq!(count, 0);
        grape::check(ffi::grp_session_auto_decisions(raw, ptr::null_mut())).unwrap();
        let mut d: ffi::grp_auto_decision = std::mem::zeroed();
        d.struct_size = std::mem::size_of::<ffi::grp_auto_decision>();
        let (code, msg) = take(ffi::grp_session_auto_decision_at(raw, 0, &mut d));
        assert_eq!(code, Code::InvalidArgument);
        assert!(msg.contains("out of range"), "{msg}");
        d.struct_size = 8;
        assert_eq!(
            take(ffi::grp_session_auto_decision_at(raw, 0, &mut d)).0,
            Code::InvalidArgument
        );
        assert_eq!(
            take(ffi::grp_session_auto_decision_at(raw, 0, ptr::null_mut())).0,
            Code::InvalidArgument
        );

        // The accessors of NULL: "" and no crash; interrupt of NULL is a no-op.
        assert_eq!(*ffi::grp_session_backend(ptr::null()), 0);
        assert_eq!(*ffi::grp_session_fallback_reason(ptr::null()), 0);
        ffi::grp_session_interrupt(ptr::null_mut());

        // grp_session_bind_output: NULL session, index out of range, NULL data with a capacity.
        let mut buf = [0u8; 8];
        assert_eq!(
            take(ffi::grp_session_bind_output(
                ptr::null_mut(),
                0,
                buf.as_mut_ptr().cast(),
                8
            ))
            .0,
            Code::InvalidArgument
        );
        assert_eq!(
            take(ffi::grp_session_bind_output(raw, 1, buf.as_mut_ptr().cast(), 8)).0,
            Code::InvalidArgument
        );
        let (code, msg) = take(ffi::grp_session_bind_output(raw, 0, ptr::null_mut(), 8));
        assert_eq!(code, Code::InvalidArgument);
        assert!(msg.contains("data is NULL but capacity is 8"), "{msg}");
        grape::check(ffi::grp_session_bind_output(raw, 0, ptr::null_mut(), 0)).unwrap();

        // grp_model_compile_kernels and grp_cache_info: NULL arguments.
        let mut report: *mut std::os::raw::c_char = ptr::null_mut();
        let archs = c"sm_80";
        assert_eq!(
            take(ffi::grp_model_compile_kernels(ptr::null(), archs.as_ptr(), &mut report)).0,
            Code::InvalidArgument
        );
        assert_eq!(
            take(ffi::grp_model_compile_kernels(model, ptr::null(), &mut report)).0,
            Code::InvalidArgument
        );
        assert_eq!(
            take(ffi::grp_model_compile_kernels(model, archs.as_ptr(), ptr::null_mut())).0,
            Code::InvalidArgument
        );
        assert!(report.is_null());
        assert_eq!(take(ffi::grp_cache_info(ptr::null_mut())).0, Code::InvalidArgument);

        ffi::grp_session_destroy(raw);
        ffi::grp_model_destroy(model);
    }
}
