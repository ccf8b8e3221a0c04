//! Control flow with a known result, and state that persists across runs until reset.

mod common;

use common::load;
use grape::{Code, SessionOptions};

const LOOP: &str = r#"
# Sums 0, 1, 2, ... while the sum stays <= limit; also returns the last term added.
fn main(limit: i32[]) -> (i32[], i32[]) {
  var s = 0
  var k = 0
  for i in 0..100 {
    if s + i > limit { break }
    s = s + i
    k = i
  }
  return (s, k)
}

# Counts up with while/continue/break: the sum of the odd numbers below n, stopping at 1000.
fn odd(n: i32[]) -> i32[] {
  var i = 0
  var s = 0
  while i < n max 1000 {
    i = i + 1
    if i % 2 == 0 { continue }
    if s + i > 1000 { break }
    s = s + i
  }
  return s
}
"#;

#[test]
fn loop_with_break() {
    let model = load(LOOP);
    let mut s = model.session(&SessionOptions::new()).unwrap();
    for (limit, sum, last) in [(20, 15, 5), (21, 21, 6), (0, 0, 0), (10_000, 4950, 99)] {
        s.set_input("limit", &[], &[limit]).unwrap();
        s.run().unwrap();
        assert_eq!(s.output_vec::<i32>(0).unwrap(), [sum], "limit {limit}");
        assert_eq!(s.output_vec::<i32>(1).unwrap(), [last], "limit {limit}");
        assert_eq!(s.output(0).unwrap().shape(), [0i64; 0]);
    }
}

#[test]
fn while_with_continue_and_break() {
    let model = load(LOOP);
    let mut s = model.session(&SessionOptions::new().entry("odd")).unwrap();
    let by_hand = |n: i32| {
        let mut s = 0;
        for i in (1..=n).filter(|i| i % 2 == 1) {
            if s + i > 1000 {
                break;
            }
            s += i;
        }
        s
    };
    for n in [0, 1, 10, 63, 64, 500] {
        s.set_input("n", &[], &[n]).unwrap();
        s.run().unwrap();
        assert_eq!(s.output_vec::<i32>(0).unwrap(), [by_hand(n)], "n {n}");
    }
}

const COUNTER: &str = r#"
state count: i32[] = zeros
state acc: f32[N] = zeros

fn step(x: f32[N]) -> (f32[N], i32[]) {
  acc = acc + x
  count = count + 1
  return (acc, count)
}
"#;

#[test]
fn state_persists_across_runs_until_reset() {
    let model = load(COUNTER);
    let mut s = model.session(&SessionOptions::new().entry("step")).unwrap();
    assert_eq!(s.state_names(), ["count", "acc"]);
    assert_eq!(s.state("acc").unwrap_err().code, Code::InvalidArgument); // not created yet
    s.set_input("x", &[3], &[1.0f32, 2.0, 3.0]).unwrap();
    for n in 1..=3 {
        s.run().unwrap();
        assert_eq!(s.output_vec::<i32>(1).unwrap(), [n]);
        assert_eq!(
            s.output_vec::<f32>(0).unwrap(),
            [n as f32, 2.0 * n as f32, 3.0 * n as f32]
        );
    }
    assert_eq!(s.state_vec::<i32>("count").unwrap(), [3]);
    let acc = s.state("acc").unwrap();
    assert_eq!((acc.dtype(), acc.shape()), (grape::DType::F32, &[3i64][..]));

    // Reset forgets the state and the outputs, keeps the inputs.
    s.reset_state().unwrap();
    assert_eq!(s.output(0).unwrap_err().code, Code::InvalidArgument);
    s.run().unwrap();
    assert_eq!(s.output_vec::<i32>(1).unwrap(), [1]);

    // set_state replaces a value; the next run continues from it.
    s.set_state("count", &[], &[41i32]).unwrap();
    s.set_state("acc", &[3], &[0.5f32; 3]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<i32>(1).unwrap(), [42]);
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [1.5, 2.5, 3.5]);
    assert_eq!(s.set_state("count", &[], &[1.0f32]).unwrap_err().code, Code::Type);
    assert_eq!(
        s.set_state("nope", &[], &[1i32]).unwrap_err().code,
        Code::InvalidArgument
    );

    // A second session of the same model has its own state.
    let mut other = model.session(&SessionOptions::new().entry("step")).unwrap();
    other.set_input("x", &[3], &[1.0f32, 1.0, 1.0]).unwrap();
    other.run().unwrap();
    assert_eq!(other.output_vec::<i32>(1).unwrap(), [1]);

    // A run binding N differently fails and leaves the state as it was.
    s.set_input("x", &[2], &[1.0f32, 1.0]).unwrap();
    assert!(s.run().is_err());
    assert_eq!(s.state_vec::<i32>("count").unwrap(), [42]);
    assert_eq!(s.output_vec::<i32>(1).unwrap(), [42]);
}
