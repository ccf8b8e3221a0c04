//! Device memory and caller streams (`input_device_buffer`, `bind_input_device`, `set_stream`):
//! what the CPU backend answers, which every machine can check, and, where CUDA is available,
//! device memory read in place.

mod common;

use std::os::raw::c_void;
use std::ptr;

use common::load;
use grape::{backend_available, Code, DType, SessionOptions};

const PROGRAM: &str = r#"
fn main(x: f32[B, 3]) -> f32[B, 3] {
  return x * 2.0
}
"#;

fn cpu_session() -> grape::Session {
    load(PROGRAM).session(&SessionOptions::new().backend("cpu")).unwrap()
}

#[test]
fn input_device_buffer_is_unsupported_on_the_cpu() {
    let mut s = cpu_session();
    let e = s.input_device_buffer("x", DType::F32, &[2, 3]).unwrap_err();
    assert_eq!(e.code, Code::Unsupported, "{e:?}");
    assert!(
        e.message
            .contains("device memory is for sessions on the CUDA backend; this one runs on the CPU"),
        "{e}"
    );
    // The type is checked first, as for input_buffer.
    let e = s.input_device_buffer("x", DType::I32, &[2, 3]).unwrap_err();
    assert_eq!(e.code, Code::Type, "{e:?}");
    let e = s.input_device_buffer("nope", DType::F32, &[2, 3]).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    let e = s.input_device_buffer("x", DType::F32, &[-1, 3]).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    // Nothing was set: the input is still missing, and the session still works.
    assert!(s.run().is_err());
    s.set_input("x", &[1, 3], &[1.0f32, 2.0, 3.0]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 4.0, 6.0]);
}

#[test]
fn cpu_sessions_accept_only_the_null_stream() {
    let mut s = cpu_session();
    s.clear_stream().unwrap();
    unsafe { s.set_stream(ptr::null_mut()) }.unwrap();
    // SAFETY: the CPU backend refuses any non-null stream without using it.
    let bogus = ptr::NonNull::<c_void>::dangling().as_ptr();
    let e = unsafe { s.set_stream(bogus) }.unwrap_err();
    assert_eq!(e.code, Code::Unsupported, "{e:?}");
    assert!(
        e.message
            .contains("set_stream: the CPU backend has no streams; only NULL is accepted"),
        "{e}"
    );
    // Refused, and the session runs as before.
    s.set_input("x", &[1, 3], &[1.0f32, 2.0, 3.0]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 4.0, 6.0]);
    s.clear_stream().unwrap();
}

#[test]
fn bind_input_device_of_host_memory_is_read_in_place_on_the_cpu() {
    // Declared before the session, so dropped after it: the bound memory outlives the binding.
    let mut x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let mut s = cpu_session();
    // SAFETY: host memory of 6 f32s that outlives `s` and is written only between runs.
    unsafe { s.bind_input_device("x", DType::F32, &[2, 3], x.as_ptr().cast()) }.unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    // The session keeps the pointer: a change between runs is seen by the next run.
    x[0] = 10.0;
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap()[0], 20.0);

    // Checked like set_input: type, shape, and a null pointer for non-empty data.
    let e = unsafe { s.bind_input_device("x", DType::I32, &[2, 3], x.as_ptr().cast()) }.unwrap_err();
    assert_eq!(e.code, Code::Type, "{e:?}");
    let e = unsafe { s.bind_input_device("x", DType::F32, &[2, 4], x.as_ptr().cast()) }.unwrap_err();
    assert_eq!(e.code, Code::Type, "{e:?}");
    let e = unsafe { s.bind_input_device("x", DType::F32, &[2, 3], ptr::null()) }.unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    let e = unsafe { s.bind_input_device("x", DType::F32, &[i64::MAX, 3], x.as_ptr().cast()) }.unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    // An empty tensor may be null.
    unsafe { s.bind_input_device("x", DType::F32, &[0, 3], ptr::null()) }.unwrap();
    s.run().unwrap();
    assert_eq!(s.output(0).unwrap().shape(), [0, 3]);
    // Setting the input again drops the binding.
    s.set_input("x", &[1, 3], &[1.0f32, 1.0, 1.0]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), [2.0, 2.0, 2.0]);
}

/// Device memory for real: one CUDA session's device input buffer, bound into another CUDA
/// session (read in place) and refused by a CPU session. Skipped without CUDA.
#[test]
fn device_memory_on_cuda() {
    if !backend_available("cuda") {
        eprintln!("skipped: no CUDA backend");
        return;
    }
    let m = load(PROGRAM);
    let mut owner = m.session(&SessionOptions::new().backend("cuda")).unwrap();
    let buf = owner.input_device_buffer("x", DType::F32, &[2, 3]).unwrap();
    assert_eq!(buf.len(), 24);
    assert!(!buf.is_empty() && !buf.as_ptr().is_null());
    assert_eq!(buf.device_ptr(), buf.as_ptr() as usize as u64);
    assert_eq!((buf.dtype(), buf.shape()), (DType::F32, &[2i64, 3][..]));
    let dev = buf.as_ptr().cast_const();
    // Zero-filled.
    owner.run().unwrap();
    assert_eq!(owner.output_vec::<f32>(0).unwrap(), [0.0; 6]);
    unsafe { owner.set_stream(ptr::null_mut()) }.unwrap();
    owner.clear_stream().unwrap();

    // SAFETY: `dev` is 24 bytes of device memory of GPU 0 owned by `owner`, whose input "x" is
    // not replaced while `reader` lives; nothing writes it.
    let mut reader = m.session(&SessionOptions::new().backend("cuda")).unwrap();
    unsafe { reader.bind_input_device("x", DType::F32, &[2, 3], dev) }.unwrap();
    reader.run().unwrap();
    assert_eq!(reader.output_vec::<f32>(0).unwrap(), [0.0; 6]);
    drop(reader);

    let mut cpu = m.session(&SessionOptions::new().backend("cpu")).unwrap();
    let e = unsafe { cpu.bind_input_device("x", DType::F32, &[2, 3], dev) }.unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e:?}");
    assert!(e.message.contains("this session runs on the CPU backend"), "{e}");
}
