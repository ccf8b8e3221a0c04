//! Sessions move between threads (Send); one model is shared by many threads (Arc<Model>), each
//! with its own session.

mod common;

use std::sync::Arc;
use std::thread;

use common::load;
use grape::{Model, Session, SessionOptions};

const PROGRAM: &str = r#"
weights { w: f32[4, 4] }
state calls: i32[] = zeros
fn main(x: f32[B, 4]) -> (f32[B, 4], i32[]) {
  calls = calls + 1
  return (tanh(x @ w), calls)
}
"#;

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}

#[test]
fn handles_are_send_and_models_sync() {
    assert_send::<Model>();
    assert_sync::<Model>();
    assert_send::<Session>();
    assert_send::<grape::Error>();
    assert_sync::<grape::Error>();
}

fn input(seed: usize) -> Vec<f32> {
    (0..8).map(|k| ((k * 7 + seed * 3) % 11) as f32 / 11.0 - 0.5).collect()
}

fn reference(model: &Model, seed: usize) -> Vec<f32> {
    let mut s = model.session(&SessionOptions::new()).unwrap();
    s.set_input("x", &[2, 4], &input(seed)).unwrap();
    s.run().unwrap();
    s.output_vec(0).unwrap()
}

#[test]
fn a_session_moves_to_another_thread() {
    let model = load(PROGRAM);
    model.set_random_weights(5).unwrap();
    let want = reference(&model, 1);
    let mut s = model.session(&SessionOptions::new()).unwrap();
    s.set_input("x", &[2, 4], &input(1)).unwrap();
    s.run().unwrap();
    drop(model); // sessions keep what they need alive
    let (s, got) = thread::spawn(move || {
        s.run().unwrap();
        let got: Vec<f32> = s.output_vec(0).unwrap();
        (s, got)
    })
    .join()
    .unwrap();
    assert_eq!(got, want);
    assert_eq!(s.output_vec::<i32>(1).unwrap(), [2]);
}

#[test]
fn many_threads_share_one_model() {
    let model = Arc::new(load(PROGRAM));
    model.set_random_weights(9).unwrap();
    let want: Vec<Vec<f32>> = (0..8).map(|t| reference(&model, t)).collect();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let model = Arc::clone(&model);
            thread::spawn(move || {
                let mut s = model.session(&SessionOptions::new()).unwrap();
                let mut outs = Vec::new();
                for _ in 0..20 {
                    s.set_input("x", &[2, 4], &input(t)).unwrap();
                    s.run().unwrap();
                    outs.push(s.output_vec::<f32>(0).unwrap());
                }
                (outs, s.output_vec::<i32>(1).unwrap())
            })
        })
        .collect();
    for (t, h) in handles.into_iter().enumerate() {
        let (outs, calls) = h.join().unwrap();
        assert!(outs.iter().all(|o| *o == want[t]), "thread {t}");
        assert_eq!(calls, [20], "thread {t}: each session has its own state");
    }
}

#[test]
fn new_weights_reach_only_new_sessions() {
    let model = Arc::new(load(PROGRAM));
    model.set_random_weights(1).unwrap();
    let mut old = model.session(&SessionOptions::new()).unwrap();
    let before = reference(&model, 2);
    let m2 = Arc::clone(&model);
    thread::spawn(move || m2.set_random_weights(2).unwrap()).join().unwrap();
    old.set_input("x", &[2, 4], &input(2)).unwrap();
    old.run().unwrap();
    assert_eq!(old.output_vec::<f32>(0).unwrap(), before);
    assert_ne!(reference(&model, 2), before);
}
