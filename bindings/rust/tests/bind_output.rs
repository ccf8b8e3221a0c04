//! Outputs written into caller memory (`grp_session_bind_output`): the safe `bind_output` with an
//! `OutputBuffer` the session owns while bound, the unsafe `bind_output_raw`, and what grape.h
//! documents: the value lands in the bound memory after each successful run, `output` reads it
//! there, a run whose output needs more than the capacity fails before executing anything, and
//! unbinding goes back to the session's own memory.

mod common;

use std::ptr;

use common::load;
use grape::{Code, DType, OutputBuffer, SessionOptions};

const PROGRAM: &str = r#"
state calls: i32[] = zeros

fn main(x: f32[B, 3]) -> (f32[B, 3], i32[]) {
  calls = calls + 1
  return (x * 2.0, calls)
}
"#;

fn session() -> grape::Session {
    load(PROGRAM).session(&SessionOptions::new().backend("cpu")).unwrap()
}

#[test]
fn a_bound_buffer_receives_the_output_of_each_run() {
    let mut s = session();
    let buf = OutputBuffer::for_tensor(DType::F32, &[2, 3]).unwrap();
    assert_eq!(buf.len(), 24);
    assert!(buf.output().is_none());
    assert!(s.bind_output(0, buf).unwrap().is_none());

    s.set_input("x", &[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    s.run().unwrap();
    let out = s.output(0).unwrap();
    assert_eq!(out.shape(), [2, 3]);
    assert_eq!(out.to_vec::<f32>().unwrap(), [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    // The unbound output is read from the session's own memory as before.
    assert_eq!(s.output_vec::<i32>(1).unwrap(), [1]);

    // A smaller output fits: the buffer's first bytes hold it.
    s.set_input("x", &[1, 3], &[1.0f32, 1.0, 1.0]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 2.0, 2.0]);

    // Unbinding gives the buffer back holding the last output, with its dtype and shape.
    let buf = s.unbind_output(0).unwrap().expect("the bound buffer");
    let last = buf.output().expect("the last output written");
    assert_eq!((last.dtype(), last.shape()), (DType::F32, &[1i64, 3][..]));
    assert_eq!(last.to_vec::<f32>().unwrap(), [2.0, 2.0, 2.0]);
    assert_eq!(&buf.bytes()[..4], &2.0f32.to_ne_bytes());
    // Until the next run the output is not readable: libgrape would still point at the buffer.
    let e = s.output(0).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    assert!(e.message.contains("run again"), "{e}");
    assert_eq!(s.output_vec::<i32>(1).unwrap(), [2]);
    drop(buf);
    // The next run writes to the session's own memory again.
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 2.0, 2.0]);
    assert!(s.unbind_output(0).unwrap().is_none());
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 2.0, 2.0]);
}

#[test]
fn a_run_that_does_not_fit_fails_and_changes_nothing() {
    let mut s = session();
    s.set_input("x", &[1, 3], &[1.0f32, 2.0, 3.0]).unwrap();
    s.run().unwrap();
    // 12 bytes: one row.
    s.bind_output(0, OutputBuffer::for_tensor(DType::F32, &[1, 3]).unwrap())
        .unwrap();
    s.set_input("x", &[2, 3], &[1.0f32; 6]).unwrap();
    let e = s.run().unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    assert!(
        e.message
            .contains("needs 24 bytes, but the memory bound to it holds 12"),
        "{e}"
    );
    // Nothing executed: the state did not advance, the previous outputs stay.
    assert_eq!(s.state_vec::<i32>("calls").unwrap(), [1]);
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 4.0, 6.0]);
    // A buffer given back before any run wrote to it holds no output.
    let buf = s.unbind_output(0).unwrap().unwrap();
    assert!(buf.output().is_none());
    assert_eq!(buf.bytes(), [0u8; 12]);
    // Unbinding a buffer no run wrote to leaves the outputs readable.
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 4.0, 6.0]);
    s.run().unwrap();
    assert_eq!(s.output_vec::<i32>(1).unwrap(), [2]);
}

#[test]
fn binding_again_returns_the_previous_buffer() {
    let mut s = session();
    s.set_input("x", &[1, 3], &[1.0f32, 2.0, 3.0]).unwrap();
    assert!(s.bind_output(1, OutputBuffer::new(4)).unwrap().is_none());
    s.run().unwrap();
    let first = s
        .bind_output(1, OutputBuffer::new(4))
        .unwrap()
        .expect("the first buffer");
    assert_eq!(first.output().unwrap().to_vec::<i32>().unwrap(), [1]);
    s.run().unwrap();
    assert_eq!(s.output_vec::<i32>(1).unwrap(), [2]);
    let second = s.unbind_output(1).unwrap().unwrap();
    assert_eq!(second.output().unwrap().to_vec::<i32>().unwrap(), [2]);
    // The first buffer is the caller's again, untouched by the second run.
    assert_eq!(first.output().unwrap().to_vec::<i32>().unwrap(), [1]);
}

#[test]
fn reset_state_forgets_outputs_of_bound_memory_too() {
    let mut s = session();
    s.set_input("x", &[1, 3], &[1.0f32, 2.0, 3.0]).unwrap();
    s.bind_output(0, OutputBuffer::new(12)).unwrap();
    s.run().unwrap();
    s.reset_state().unwrap();
    assert_eq!(s.output(0).unwrap_err().code, Code::InvalidArgument);
    // Unbinding after a reset: nothing was delivered since, so no output is recorded.
    let buf = s.unbind_output(0).unwrap().unwrap();
    assert!(buf.output().is_none());
    assert_eq!(s.output(0).unwrap_err().code, Code::InvalidArgument);
}

#[test]
fn bad_indices_are_errors_that_change_nothing() {
    let mut s = session();
    let e = s.bind_output(2, OutputBuffer::new(12)).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    assert_eq!(s.unbind_output(7).unwrap_err().code, Code::InvalidArgument);
    let e = unsafe { s.bind_output_raw(0, ptr::null_mut(), 12) }.unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    assert!(e.message.contains("data is NULL but capacity is 12"), "{e}");
    let e = OutputBuffer::for_tensor(DType::F32, &[-1, 3]).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    let e = OutputBuffer::for_tensor(DType::I64, &[i64::MAX, 2]).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    // An empty buffer binds with capacity 0: only empty outputs fit.
    s.bind_output(0, OutputBuffer::new(0)).unwrap();
    s.set_input("x", &[0, 3], &[] as &[f32]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output(0).unwrap().shape(), [0, 3]);
    s.set_input("x", &[1, 3], &[1.0f32; 3]).unwrap();
    assert_eq!(s.run().unwrap_err().code, Code::InvalidArgument);
}

#[test]
fn raw_memory_receives_the_output_in_place() {
    // Declared before the session, so dropped after it: the memory outlives the binding.
    let mut out = [0.0f32; 6];
    let mut s = session();
    // SAFETY: 24 writable bytes that outlive `s`, read below only between runs.
    let previous = unsafe { s.bind_output_raw(0, out.as_mut_ptr().cast(), 24) }.unwrap();
    assert!(previous.is_none());
    s.set_input("x", &[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    s.run().unwrap();
    // get_output returns the bound memory itself.
    assert_eq!(s.output(0).unwrap().bytes().as_ptr(), out.as_ptr().cast::<u8>());
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    // Null unbinds; a raw binding gives no buffer back.
    assert!(unsafe { s.bind_output_raw(0, ptr::null_mut(), 0) }.unwrap().is_none());
    assert_eq!(s.output(0).unwrap_err().code, Code::InvalidArgument);
    assert_eq!(out, [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    out = [0.0; 6];
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    assert_eq!(out, [0.0; 6]);
    // Replacing a raw binding by an owned buffer returns nothing either.
    unsafe { s.bind_output_raw(0, out.as_mut_ptr().cast(), 24) }.unwrap();
    assert!(s.bind_output(0, OutputBuffer::new(24)).unwrap().is_none());
}

#[test]
fn a_session_dropped_with_bound_buffers_frees_them_even_if_an_interrupter_lives() {
    let mut s = session();
    let stop = s.interrupter();
    s.bind_output(0, OutputBuffer::new(24)).unwrap();
    s.set_input("x", &[2, 3], &[1.0f32; 6]).unwrap();
    s.run().unwrap();
    drop(s);
    stop.interrupt();
}
