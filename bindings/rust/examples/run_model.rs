//! Loads a .grp model, gives it random weights, runs one entry on generated inputs and prints
//! the outputs.
//!
//!     cargo run --example run_model -- [MODEL.grp] [-D NAME=VALUE]... [--entry NAME]
//!                                      [--dim NAME=SIZE]... [--seed N]
//!
//! Without arguments it runs the repository's examples/mlp.grp with -D D=32 -D H=64 -D C=10.
//! Symbolic dims (B, S, ...) are 2 unless --dim sets them. Inputs are a deterministic ramp.

use std::collections::HashMap;
use std::process::ExitCode;

use grape::{Bf16, DType, Model, ModelOptions, SessionOptions, F16};

struct Args {
    model: String,
    opts: ModelOptions,
    entry: Option<String>,
    dims: HashMap<String, i64>,
    seed: u64,
}

fn parse_assignment(s: &str) -> Result<(String, i64), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, got {s:?}"))?;
    let value = value
        .parse()
        .map_err(|_| format!("{name}: expected an integer, got {value:?}"))?;
    Ok((name.to_string(), value))
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        model: String::new(),
        opts: ModelOptions::new(),
        entry: None,
        dims: HashMap::new(),
        seed: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |what: &str| it.next().ok_or_else(|| format!("{a} needs {what}"));
        match a.as_str() {
            "-D" => {
                let (n, v) = parse_assignment(&value("NAME=VALUE")?)?;
                args.opts = args.opts.define(n, v);
            }
            "--entry" => args.entry = Some(value("an entry name")?),
            "--dim" => {
                let (n, v) = parse_assignment(&value("NAME=SIZE")?)?;
                args.dims.insert(n, v);
            }
            "--seed" => {
                args.seed = value("a number")?
                    .parse()
                    .map_err(|_| "--seed needs a number".to_string())?
            }
            "-h" | "--help" => {
                return Err(
                    "usage: run_model [MODEL.grp] [-D NAME=VALUE]... [--entry NAME] [--dim NAME=SIZE]... [--seed N]"
                        .into(),
                )
            }
            _ if a.starts_with('-') => return Err(format!("unknown option {a}")),
            _ => args.model = a,
        }
    }
    if args.model.is_empty() {
        args.model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/mlp.grp").to_string();
        if args.opts.defines.is_empty() {
            args.opts = args.opts.define("D", 32).define("H", 64).define("C", 10);
        }
    }
    Ok(args)
}

fn run(args: Args) -> grape::Result<()> {
    println!(
        "grape {} (libgrape {})",
        env!("CARGO_PKG_VERSION"),
        grape::version_string()
    );
    let model = Model::load_file(&args.model, &args.opts)?;
    model.set_random_weights(args.seed)?;
    let mut opts = SessionOptions::new();
    if let Some(e) = &args.entry {
        opts = opts.entry(e.as_str());
    }
    let mut session = model.session(&opts)?;
    for info in session.inputs()? {
        let shape: Vec<i64> = info
            .dims
            .iter()
            .map(|d| d.size.unwrap_or_else(|| *args.dims.get(&d.expr).unwrap_or(&2)))
            .collect();
        let n: i64 = shape.iter().product();
        let ramp = (0..n).map(|k| (k % 17) as f32 / 17.0 - 0.5);
        println!("input  {info} = {shape:?} ramp");
        match info.dtype {
            DType::F32 => session.set_input(&info.name, &shape, &ramp.collect::<Vec<f32>>())?,
            DType::F16 => session.set_input(&info.name, &shape, &ramp.map(F16::from_f32).collect::<Vec<_>>())?,
            DType::BF16 => session.set_input(&info.name, &shape, &ramp.map(Bf16::from_f32).collect::<Vec<_>>())?,
            DType::I32 => session.set_input(&info.name, &shape, &(0..n as i32).map(|k| k % 7).collect::<Vec<_>>())?,
            DType::I64 => session.set_input(&info.name, &shape, &(0..n).map(|k| k % 7).collect::<Vec<_>>())?,
            DType::Bool => session.set_input(&info.name, &shape, &vec![true; n as usize])?,
        }
    }
    session.run()?;
    for (i, info) in session.outputs()?.iter().enumerate() {
        let out = session.output(i)?;
        println!("output {info} = {}{:?}", out.dtype(), out.shape());
        let values = out.to_f32_vec();
        let row = *out.shape().last().unwrap_or(&1) as usize;
        for chunk in values.chunks(row.max(1)).take(8) {
            let cells: Vec<String> = chunk.iter().map(|v| format!("{v:9.4}")).collect();
            println!("  [{}]", cells.join(", "));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error ({}): {e}", e.code);
            ExitCode::FAILURE
        }
    }
}
