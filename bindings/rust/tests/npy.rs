//! Host tensors and .npy files.

use grape::{Code, DType, HostTensor};

#[test]
fn npy_round_trip() {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("grape-rust-{}.npy", std::process::id()));
    grape::write_npy(&path, &[2, 3], &[1i32, 2, 3, 4, 5, 6]).unwrap();
    let t = HostTensor::read_npy(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let v = t.view();
    assert_eq!((v.dtype(), v.shape()), (DType::I32, &[2i64, 3][..]));
    assert_eq!(v.as_slice::<i32>().unwrap(), [1, 2, 3, 4, 5, 6]);

    let made = HostTensor::new(&[], &[2.5f32]).unwrap();
    assert_eq!(made.view().shape(), [0i64; 0]);
    assert_eq!(made.view().to_vec::<f32>().unwrap(), [2.5]);
    assert_eq!(
        HostTensor::new(&[3], &[1.0f32]).unwrap_err().code,
        Code::InvalidArgument
    );
    let empty = HostTensor::new::<f32>(&[0, 4], &[]).unwrap();
    assert!(empty.view().is_empty());

    assert_eq!(HostTensor::read_npy("/nonexistent.npy").unwrap_err().code, Code::Io);
    let junk = dir.join(format!("grape-rust-junk-{}.npy", std::process::id()));
    std::fs::write(&junk, b"not a npy file").unwrap();
    assert_eq!(HostTensor::read_npy(&junk).unwrap_err().code, Code::Format);
    std::fs::remove_file(&junk).unwrap();
}
