//! A small MLP with random weights (checked against a computation in this file), known weights
//! from an in-memory safetensors file, zero-copy inputs, and examples/mlp.grp in f16.

mod common;

use common::{assert_close, load, safetensors_f32};
use grape::{DType, Dim, Model, ModelOptions, SessionOptions, F16};

const MLP: &str = r#"
model tiny
const D = 3
const H = 4
const C = 2

weights {
  fc1.weight: f32[H, D]
  fc1.bias:   f32[H]
  fc2.weight: f32[C, H]
}

fn main(x: f32[B, D]) -> f32[B, C] {
  let h = relu(linear(x, fc1.weight, fc1.bias))
  return linear(h, fc2.weight)
}

# Hands the weights out, so that the test can compute main by hand.
fn dump(x: f32[1]) -> (f32[H, D], f32[H], f32[C, H]) {
  return (fc1.weight, fc1.bias, fc2.weight)
}
"#;

/// relu(x w1^T + b1) w2^T, row by row.
fn mlp_by_hand(x: &[f32], w1: &[f32], b1: &[f32], w2: &[f32], d: usize, h: usize, c: usize) -> Vec<f32> {
    let mut out = Vec::new();
    for row in x.chunks(d) {
        let hidden: Vec<f32> = (0..h)
            .map(|j| (b1[j] + (0..d).map(|k| row[k] * w1[j * d + k]).sum::<f32>()).max(0.0))
            .collect();
        out.extend((0..c).map(|i| (0..h).map(|j| hidden[j] * w2[i * h + j]).sum::<f32>()));
    }
    out
}

#[test]
fn random_weights_match_a_hand_computation() {
    let model = load(MLP);
    assert_eq!(model.entry_names(), ["main", "dump"]);
    assert!(!model.has_weights());
    model.set_random_weights(7).unwrap();
    assert!(model.has_weights());
    let weights = model.weights().unwrap();
    let names: Vec<&str> = weights.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["fc1.weight", "fc1.bias", "fc2.weight"]);
    assert_eq!(weights[0].shape, [4, 3]);
    assert_eq!(weights[2].dtype, DType::F32);

    let mut dump = model.session(&SessionOptions::new().entry("dump")).unwrap();
    dump.set_input("x", &[1], &[0.0f32]).unwrap();
    dump.run().unwrap();
    let (w1, b1, w2) = (
        dump.output_vec::<f32>(0).unwrap(),
        dump.output_vec::<f32>(1).unwrap(),
        dump.output_vec::<f32>(2).unwrap(),
    );
    assert_eq!((w1.len(), b1.len(), w2.len()), (12, 4, 8));
    assert!(w1.iter().any(|&v| v != 0.0), "random weights are all zero");

    let mut s = model.session(&SessionOptions::new()).unwrap();
    let x = [0.5f32, -1.0, 2.0, 1.5, 0.25, -0.75];
    s.set_input("x", &[2, 3], &x).unwrap();
    s.run().unwrap();
    let y = s.output(0).unwrap();
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(y.shape(), [2, 2]);
    assert_close(
        y.as_slice::<f32>().unwrap(),
        &mlp_by_hand(&x, &w1, &b1, &w2, 3, 4, 2),
        1e-5,
    );

    // The same seed gives the same weights in another model.
    let again = load(MLP);
    again.set_random_weights(7).unwrap();
    let mut s2 = again.session(&SessionOptions::new()).unwrap();
    s2.set_input("x", &[2, 3], &x).unwrap();
    s2.run().unwrap();
    assert_eq!(s2.output_vec::<f32>(0).unwrap(), s.output_vec::<f32>(0).unwrap());
}

#[test]
fn known_weights_from_memory() {
    let model = load(MLP);
    let w1 = [1.0f32, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0];
    let b1 = [0.0f32, 0.0, 0.0, -10.0];
    let w2 = [1.0f32, 2.0, 3.0, 4.0, -1.0, 0.0, 0.0, 1.0];
    let file = safetensors_f32(&[
        ("fc1.weight", &[4, 3], &w1),
        ("fc1.bias", &[4], &b1),
        ("fc2.weight", &[2, 4], &w2),
        ("unused.buffer", &[1], &[0.0]),
    ]);
    model.set_weights_memory(&file, "mem.safetensors").unwrap();
    let mut s = model.session(&SessionOptions::new()).unwrap();
    s.set_input("x", &[1, 3], &[1.0f32, -2.0, 3.0]).unwrap();
    s.run().unwrap();
    // hidden = relu([1, -2, 3, 2 - 10]) = [1, 0, 3, 0]; out = [1 + 9, -1 + 0]
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [10.0, -1.0]);

    // A file missing a weight is a Format error and leaves the previous weights in place.
    let bad = safetensors_f32(&[("fc1.weight", &[4, 3], &w1)]);
    let e = model.set_weights_memory(&bad, "bad.safetensors").unwrap_err();
    assert_eq!(e.code, grape::Code::Format, "{e}");
    let mut s = model.session(&SessionOptions::new()).unwrap();
    s.set_input("x", &[1, 3], &[1.0f32, -2.0, 3.0]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [10.0, -1.0]);

    // And from a file.
    let path = std::env::temp_dir().join(format!("grape-rust-{}.safetensors", std::process::id()));
    std::fs::write(&path, &file).unwrap();
    let from_file = load(MLP);
    from_file.set_weights_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(from_file.has_weights());
    let e = from_file.set_weights_file("/nonexistent/w.safetensors").unwrap_err();
    assert_eq!(e.code, grape::Code::Io, "{e}");
}

#[test]
fn introspection_names_dtypes_and_symbolic_dims() {
    let model = load(MLP);
    model.set_random_weights(1).unwrap();
    let s = model.session(&SessionOptions::new()).unwrap();
    let inputs = s.inputs().unwrap();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0].name, "x");
    assert_eq!(inputs[0].dtype, DType::F32);
    // A const dim may be reported by name or by value: grape.h says "as declared" (D), libgrape
    // 0.1.0 gives the value (3).
    let dims = &inputs[0].dims;
    assert_eq!(
        dims[0],
        Dim {
            size: None,
            expr: "B".into()
        }
    );
    assert_eq!(dims[1].size, Some(3));
    assert!(["D", "3"].contains(&dims[1].expr.as_str()), "{dims:?}");
    assert!(["x: f32[B, D]", "x: f32[B, 3]"].contains(&inputs[0].to_string().as_str()));
    let outputs = s.outputs().unwrap();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].name, "out0");
    assert_eq!(outputs[0].dims[0].size, None);
    assert_eq!(outputs[0].dims[1].size, Some(2));
    assert_eq!(s.input_index("x").unwrap(), 0);
    assert!(s.state_names().is_empty());
    assert!(model.ir_text(Some("main")).unwrap().contains("linear") || !model.ir_text(None).unwrap().is_empty());
}

#[test]
fn input_buffer_is_zero_copy_and_persists() {
    let model = load(MLP);
    model.set_random_weights(3).unwrap();
    let x = [0.5f32, -1.0, 2.0, 1.5, 0.25, -0.75];
    let mut copied = model.session(&SessionOptions::new()).unwrap();
    copied.set_input("x", &[2, 3], &x).unwrap();
    copied.run().unwrap();

    let mut s = model.session(&SessionOptions::new()).unwrap();
    let buf = s.input_buffer::<f32>("x", &[2, 3]).unwrap();
    assert_eq!(buf, [0.0; 6]);
    buf.copy_from_slice(&x);
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), copied.output_vec::<f32>(0).unwrap());
    // The input keeps its value across runs.
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), copied.output_vec::<f32>(0).unwrap());
    // A wrong dtype or shape is refused, and the old input stays.
    assert_eq!(s.input_buffer::<i32>("x", &[2, 3]).unwrap_err().code, grape::Code::Type);
    assert_eq!(s.input_buffer::<f32>("x", &[2, 4]).unwrap_err().code, grape::Code::Type);
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), copied.output_vec::<f32>(0).unwrap());
}

#[test]
fn examples_mlp_in_f16() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/mlp.grp");
    let opts = ModelOptions::new().define("D", 8).define("H", 16).define("C", 4);
    let model = Model::load_file(path, &opts).unwrap();
    model.set_random_weights(1).unwrap();
    let mut s = model.session(&SessionOptions::new().backend("cpu")).unwrap();
    let x_info = s.inputs().unwrap().remove(0);
    assert_eq!(
        (x_info.dtype, x_info.dims[0].expr.as_str(), x_info.dims[1].size),
        (DType::F16, "B", Some(8))
    );
    let x: Vec<F16> = (0..2 * 8).map(|k| F16::from_f32(k as f32 / 16.0)).collect();
    s.set_input("x", &[2, 8], &x).unwrap();
    s.run().unwrap();
    let y = s.output(0).unwrap();
    assert_eq!((y.dtype(), y.shape()), (DType::F16, &[2i64, 4][..]));
    assert!(y.to_f32_vec().iter().all(|v| v.is_finite()));
    // u16 bits are accepted for f16 too, and read back the same.
    let bits: Vec<u16> = x.iter().map(|h| h.0).collect();
    let first: Vec<u16> = s.output_vec(0).unwrap();
    s.set_input("x", &[2, 8], &bits).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<u16>(0).unwrap(), first);
}
