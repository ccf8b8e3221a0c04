//! Finds libgrape.so and links the crate to it dynamically.
//!
//! Search order (the first hit wins):
//!   1. `GRAPE_LIB_DIR`: a directory holding libgrape.so (an install's lib/ or a build's lib/);
//!   2. pkg-config: `pkg-config --variable=libdir grape` (an installed Grape, see capi/grape.pc.in);
//!   3. this repository's build trees: `<repo>/build-rust/lib`, `<repo>/build/lib`, then any
//!      other `<repo>/build*/lib` (newest libgrape.so first). CMake writes libgrape.so to
//!      `<build dir>/lib` (capi/CMakeLists.txt, LIBRARY_OUTPUT_DIRECTORY).
//!
//! The directory found is also written into the test/example binaries as an rpath, so
//! `cargo test` and `cargo run --example` work without LD_LIBRARY_PATH. Crates depending on this
//! one get it as `DEP_GRAPE_LIB_DIR` (the `links = "grape"` metadata) for their own rpath.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const LIB_FILE: &str = "libgrape.so";

fn has_lib(dir: &Path) -> bool {
    dir.join(LIB_FILE).is_file()
}

fn from_env() -> Option<PathBuf> {
    let dir = PathBuf::from(env::var_os("GRAPE_LIB_DIR")?);
    if has_lib(&dir) {
        Some(dir)
    } else {
        panic!("GRAPE_LIB_DIR is set to {} but it holds no {LIB_FILE}", dir.display());
    }
}

fn from_pkg_config() -> Option<PathBuf> {
    let out = Command::new("pkg-config")
        .args(["--variable=libdir", "grape"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    has_lib(&dir).then_some(dir)
}

fn from_repo_build_tree(repo: &Path) -> Option<PathBuf> {
    for preferred in ["build-rust", "build"] {
        let dir = repo.join(preferred).join("lib");
        if has_lib(&dir) {
            return Some(dir);
        }
    }
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(repo)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("build"))
        .map(|e| e.path().join("lib"))
        .filter(|d| has_lib(d))
        .filter_map(|d| {
            let modified = d.join(LIB_FILE).metadata().ok()?.modified().ok()?;
            Some((modified, d))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, d)| d)
}

fn main() {
    println!("cargo:rerun-if-env-changed=GRAPE_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=build.rs");

    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let repo = manifest.join("../..");
    let dir = from_env()
        .or_else(from_pkg_config)
        .or_else(|| from_repo_build_tree(&repo));
    let Some(dir) = dir else {
        let repo = repo.canonicalize().unwrap_or(repo);
        panic!(
            "\n\ncannot find {LIB_FILE} (the Grape C API).\n\
             Looked in: $GRAPE_LIB_DIR (unset), `pkg-config --variable=libdir grape`, {}/build*/lib.\n\
             Build it from the repository root:\n\n    \
             cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build --target grape_shared\n\n\
             or point GRAPE_LIB_DIR at a directory holding {LIB_FILE}.\n",
            repo.display()
        );
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    println!("cargo:rerun-if-changed={}", dir.join(LIB_FILE).display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=grape");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    println!("cargo:lib_dir={}", dir.display());
}
