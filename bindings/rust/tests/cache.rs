//! The on-disk kernel cache (`cache_info`, `cache_clear`) in a folder of this test's own, named by
//! $GRAPE_CACHE_DIR. One test function: the variable is process-wide.

mod common;

use std::fs;
use std::path::PathBuf;

use grape::Code;

#[test]
fn cache_info_and_clear() {
    let root = PathBuf::from(common::temp_path("cache"));
    let _ = fs::remove_dir_all(&root);
    // Set before any other thread of this process calls into Grape (this is its only test).
    std::env::set_var("GRAPE_CACHE_DIR", &root);

    // The folder "kernels" is created when missing.
    let info = grape::cache_info().unwrap();
    assert_eq!(info.directory, root.join("kernels"));
    assert_eq!((info.entries, info.bytes), (0, 0));
    assert!(info.directory.is_dir());

    // Entries (*.grpk) count, with their size; other files do not.
    let dir = &info.directory;
    fs::write(dir.join("0123.grpk"), [7u8; 100]).unwrap();
    fs::write(dir.join("4567.grpk"), [7u8; 28]).unwrap();
    fs::write(dir.join("89ab.grpk.tmp.XYZ123"), [7u8; 5]).unwrap();
    fs::write(dir.join("notes.txt"), b"not an entry").unwrap();
    let info = grape::cache_info().unwrap();
    assert_eq!((info.entries, info.bytes), (2, 128));

    // Clearing deletes the entries and leftover temporary files; the folder and the rest stay.
    grape::cache_clear().unwrap();
    let info = grape::cache_info().unwrap();
    assert_eq!((info.entries, info.bytes), (0, 0));
    assert!(!dir.join("0123.grpk").exists());
    assert!(!dir.join("89ab.grpk.tmp.XYZ123").exists());
    assert!(dir.join("notes.txt").exists());
    grape::cache_clear().unwrap(); // clearing an empty cache is fine

    // A cache that cannot be created (its parent is a file): GRP_ERR_IO from both.
    let file = root.join("a-file");
    fs::write(&file, b"x").unwrap();
    std::env::set_var("GRAPE_CACHE_DIR", &file);
    let e = grape::cache_info().unwrap_err();
    assert_eq!(e.code, Code::Io, "{e:?}");
    let e = grape::cache_clear().unwrap_err();
    assert_eq!(e.code, Code::Io, "{e:?}");

    std::env::remove_var("GRAPE_CACHE_DIR");
    let _ = fs::remove_dir_all(&root);
}
