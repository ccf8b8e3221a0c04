//! Helpers shared by the integration tests.
#![allow(dead_code)]

use grape::{Model, ModelOptions};

/// A path `name` in this test process's own temporary directory.
pub fn temp_path(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("grape_rust_tests_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).to_string_lossy().into_owned()
}

pub fn load(src: &str) -> Model {
    Model::load_source(src, "test.grp", &ModelOptions::new()).unwrap_or_else(|e| panic!("{e}"))
}

/// The bytes of a safetensors file holding f32 tensors (name, shape, values).
pub fn safetensors_f32(tensors: &[(&str, &[i64], &[f32])]) -> Vec<u8> {
    let mut header = String::from("{");
    let mut data = Vec::new();
    for (k, (name, shape, values)) in tensors.iter().enumerate() {
        let begin = data.len();
        for v in *values {
            data.extend_from_slice(&v.to_le_bytes());
        }
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        header += &format!(
            "{}\"{name}\":{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{begin},{}]}}",
            if k > 0 { "," } else { "" },
            dims.join(","),
            data.len()
        );
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&data);
    file
}

pub fn assert_close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "lengths differ: {got:?} vs {want:?}");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "element {k}: got {g}, want {w}\n got {got:?}\nwant {want:?}"
        );
    }
}
