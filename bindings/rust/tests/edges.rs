//! Edge cases at the boundary: empty tensors, allocations too large to make, several live views.

mod common;

use common::load;
use grape::{Code, SessionOptions};

const PROGRAM: &str = r#"
state acc: f32[N] = zeros
state count: i32[] = zeros
fn main(x: f32[B, 3]) -> f32[B, 3] {
  return x * 2.0
}
fn step(v: f32[N]) -> f32[N] {
  acc = acc + v
  count = count + 1
  return acc
}
"#;

#[test]
fn empty_batches_run() {
    let m = load(PROGRAM);
    let mut s = m.session(&SessionOptions::new()).unwrap();
    s.set_input::<f32>("x", &[0, 3], &[]).unwrap();
    s.run().unwrap();
    let y = s.output(0).unwrap();
    assert_eq!(y.shape(), [0, 3]);
    assert!(y.as_slice::<f32>().unwrap().is_empty());
    assert!(s.input_buffer::<f32>("x", &[0, 3]).unwrap().is_empty());
    s.run().unwrap();
}

#[test]
fn impossible_sizes_are_errors_not_crashes() {
    let m = load(PROGRAM);
    let mut s = m.session(&SessionOptions::new()).unwrap();
    let e = s.input_buffer::<f32>("x", &[1 << 50, 3]).unwrap_err();
    assert!(matches!(e.code, Code::OutOfMemory | Code::InvalidArgument), "{e:?}");
    let e = s.input_buffer::<f32>("x", &[i64::MAX, 3]).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    let e = s.set_input::<f32>("x", &[i64::MAX, i64::MAX], &[]).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    // Still usable.
    s.set_input("x", &[1, 3], &[1.0f32, 2.0, 3.0]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 4.0, 6.0]);
}

#[test]
fn several_state_views_live_at_once() {
    let m = load(PROGRAM);
    let mut s = m.session(&SessionOptions::new().entry("step")).unwrap();
    s.set_input("v", &[2], &[1.0f32, 2.0]).unwrap();
    s.run().unwrap();
    s.run().unwrap();
    let a = s.state("acc").unwrap();
    let c = s.state("count").unwrap();
    let a2 = s.state("acc").unwrap();
    let out = s.output(0).unwrap();
    assert_eq!(a.as_slice::<f32>().unwrap(), [2.0, 4.0]);
    assert_eq!(a2.as_slice::<f32>().unwrap(), [2.0, 4.0]);
    assert_eq!(a.shape(), [2]);
    assert_eq!(c.as_slice::<i32>().unwrap(), [2]);
    assert_eq!(out.as_slice::<f32>().unwrap(), [2.0, 4.0]);
}
