//! Every error comes back as the right Code, with file:line:col for source errors; the session
//! stays usable after a rejected call.

mod common;

use common::load;
use grape::{Code, Model, ModelOptions, SessionOptions};

const ADD: &str = r#"
const D = 2
fn main(x: f32[B, D], y: i32[]) -> f32[B, D] {
  return x + cast(y, f32)
}
"#;

#[test]
fn syntax_error_has_code_and_location() {
    let src = "fn main(x: f32[2]) -> f32[2] {\n  return x +* 1\n}\n";
    let e = Model::load_source(src, "bad.grp", &ModelOptions::new()).unwrap_err();
    assert_eq!(e.code, Code::Syntax, "{e}");
    let loc = e.location.clone().expect("a syntax error has a location");
    assert_eq!((loc.file.as_str(), loc.line), ("bad.grp", 2));
    let at = format!("bad.grp:{}:{}", loc.line, loc.column);
    assert!(e.message.contains(&at), "message {:?} lacks {at}", e.message);
    assert!(e.to_string().contains("bad.grp:2:"));
    let _: &dyn std::error::Error = &e;
}

#[test]
fn type_error_has_code_and_location() {
    let src = "fn main(x: f16[2], y: f32[2]) -> f16[2] {\n  return x + y\n}\n";
    let e = Model::load_source(src, "types.grp", &ModelOptions::new()).unwrap_err();
    assert_eq!(e.code, Code::Type, "{e}");
    assert!(e.message.contains("types.grp:2:"), "{}", e.message);
    assert_eq!(e.location.map(|l| l.line), Some(2));
}

#[test]
fn load_errors() {
    let e = Model::load_file("/nonexistent/model.grp", &ModelOptions::new()).unwrap_err();
    assert_eq!(e.code, Code::Io, "{e}");
    let e = Model::load_source(ADD, "add.grp", &ModelOptions::new().define("NOPE", 3)).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
    let e = Model::load_source(ADD, "a\0b", &ModelOptions::new()).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
    // A define changes a const.
    let m = Model::load_source(ADD, "add.grp", &ModelOptions::new().define("D", 3)).unwrap();
    let s = m.session(&SessionOptions::new()).unwrap();
    assert_eq!(s.inputs().unwrap()[0].dims[1].size, Some(3));
}

#[test]
fn compiler_limits() {
    // A limit set too low: the compile error names it, at the op that passes it.
    let opts = ModelOptions::new().limit("max_ops", 1);
    let e = Model::load_source(ADD, "add.grp", &opts).unwrap_err();
    assert_eq!(e.code, Code::Type, "{e}");
    assert!(e.message.contains("(the max_ops limit)"), "{e}");
    assert!(e.location.is_some(), "{e:?}");
    // A later entry for the same name wins.
    let opts = ModelOptions::new().limit("max_ops", 1).limit("max_ops", 1000);
    Model::load_source(ADD, "add.grp", &opts).unwrap();
    // An unknown name.
    let e = Model::load_source(ADD, "add.grp", &ModelOptions::new().limit("max_nope", 1)).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
    assert!(e.message.contains("unknown limit 'max_nope'"), "{e}");
    let e = Model::load_source(ADD, "add.grp", &ModelOptions::new().limit("a\0b", 1)).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
}

#[test]
fn session_creation_errors() {
    let m = load(ADD);
    let e = m.session(&SessionOptions::new().entry("mian")).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
    assert!(e.message.contains("main"), "{e}");
    assert_eq!(
        m.session(&SessionOptions::new().backend("cuda")).unwrap_err().code,
        Code::NoDevice
    );
    assert_eq!(
        m.session(&SessionOptions::new().backend("tpu")).unwrap_err().code,
        Code::InvalidArgument
    );
    assert_eq!(
        m.session(&SessionOptions::new().executor("graph")).unwrap_err().code,
        Code::Unsupported
    );
    assert_eq!(
        m.session(&SessionOptions::new().device(1)).unwrap_err().code,
        Code::NoDevice
    );
    assert!(m
        .session(&SessionOptions::new().backend("cpu").executor("auto"))
        .is_ok());

    let with_weights = load("weights { w: f32[2] }\nfn main(x: f32[2]) -> f32[2] {\n  return x * w\n}\n");
    let e = with_weights.session(&SessionOptions::new()).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
}

#[test]
fn input_errors_leave_the_session_usable() {
    let m = load(ADD);
    let mut s = m.session(&SessionOptions::new()).unwrap();
    // Running before every input is set, reading outputs before a run.
    assert_eq!(s.output(0).unwrap_err().code, Code::InvalidArgument);
    s.set_input("x", &[1, 2], &[1.0f32, 2.0]).unwrap();
    assert_eq!(s.run().unwrap_err().code, Code::InvalidArgument);
    s.set_input("y", &[], &[10i32]).unwrap();
    s.run().unwrap();
    let good = [11.0f32, 12.0];
    assert_eq!(s.output_vec::<f32>(0).unwrap(), good);

    let cases: Vec<(Code, grape::Error)> = vec![
        (Code::Type, s.set_input("x", &[1, 2], &[1i32, 2]).unwrap_err()), // wrong dtype
        (Code::Type, s.set_input("x", &[1, 3], &[1.0f32, 2.0, 3.0]).unwrap_err()), // fixed dim
        (Code::Type, s.set_input("x", &[2], &[1.0f32, 2.0]).unwrap_err()), // rank
        (Code::Type, s.set_input("y", &[1], &[1i32]).unwrap_err()),
        (
            Code::InvalidArgument,
            s.set_input("z", &[1, 2], &[1.0f32, 2.0]).unwrap_err(),
        ), // unknown
        (Code::InvalidArgument, s.set_input("x", &[1, 2], &[1.0f32]).unwrap_err()), // slice length
        (
            Code::InvalidArgument,
            s.set_input("x", &[-1, 2], &[1.0f32, 2.0]).unwrap_err(),
        ),
        (
            Code::InvalidArgument,
            s.set_input("x\0", &[1, 2], &[1.0f32, 2.0]).unwrap_err(),
        ),
        (
            Code::InvalidArgument,
            s.set_input_bytes("x", grape::DType::F32, &[1, 2], &[0u8; 7])
                .unwrap_err(),
        ),
        (Code::InvalidArgument, s.input_index("q").unwrap_err()),
        (Code::InvalidArgument, s.output(1).unwrap_err()),
        (Code::Type, s.output_vec::<i32>(0).unwrap_err()), // reading f32 as i32
        (Code::InvalidArgument, s.state("none").unwrap_err()),
    ];
    for (want, got) in cases {
        assert_eq!(got.code, want, "{got}");
        assert!(!got.message.is_empty());
    }
    let unknown = s.set_input("xx", &[1, 2], &[1.0f32, 2.0]).unwrap_err();
    assert!(unknown.message.contains("xx"), "{unknown}");
    // Nothing changed: same outputs, and the same result when run again.
    assert_eq!(s.output_vec::<f32>(0).unwrap(), good);
    s.run().unwrap();
    assert_eq!(s.output_vec::<f32>(0).unwrap(), good);

    // Mismatched symbolic dims are caught by run.
    let m2 = load("fn main(a: f32[N], b: f32[N]) -> f32[N] {\n  return a + b\n}\n");
    let mut s2 = m2.session(&SessionOptions::new()).unwrap();
    s2.set_input("a", &[2], &[1.0f32, 2.0]).unwrap();
    s2.set_input("b", &[3], &[1.0f32, 2.0, 3.0]).unwrap();
    let e = s2.run().unwrap_err();
    assert!(matches!(e.code, Code::Type | Code::InvalidArgument), "{e:?}");
}

#[test]
fn bool_inputs_and_outputs() {
    let m = load("fn main(a: bool[N], x: i64[N]) -> (bool[N], i64[]) {\n  return (not a, sum(where(a, x, 0)))\n}\n");
    let mut s = m.session(&SessionOptions::new()).unwrap();
    s.set_input("a", &[3], &[true, false, true]).unwrap();
    s.set_input("x", &[3], &[1i64 << 40, 5, 7]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output(0).unwrap().as_slice::<bool>().unwrap(), [false, true, false]);
    assert_eq!(s.output_vec::<i64>(1).unwrap(), [(1i64 << 40) + 7]);
    assert_eq!(s.output(0).unwrap().to_f32_vec(), [0.0, 1.0, 0.0]);
}

#[test]
fn cpu_backend_does_not_profile_kernels() {
    let m = load(ADD);
    let mut s = m.session(&SessionOptions::new().backend("cpu")).unwrap();
    let e = s.set_profiling(true).unwrap_err();
    assert_eq!(e.code, Code::Unsupported, "{e}");
    assert!(e.message.contains("CUDA backend"), "{e}");
    let p = s.kernel_profile().unwrap();
    assert_eq!(p.runs, 0);
    assert!(p.kernels.is_empty());
}

#[test]
fn bad_bucket_specs_and_graph_budgets_are_refused_on_every_backend() {
    let m = load(ADD);
    let cpu = || SessionOptions::new().backend("cpu");
    let e = grape::Session::new(&m, &cpu().buckets("B=16,8")).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
    assert!(e.message.contains("B=16,8"), "{}", e.message);
    let e = grape::Session::new(&m, &cpu().graph_memory_bytes(-1)).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument, "{e}");
    // Good ones create a session that runs.
    let mut s = grape::Session::new(&m, &cpu().buckets("B=exact").graph_memory_bytes(1 << 20)).unwrap();
    s.set_input("x", &[2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    s.set_input("y", &[], &[1i32]).unwrap();
    s.run().unwrap();
}
