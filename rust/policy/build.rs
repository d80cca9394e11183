//! Builds the spawn helper (`rust/sandbox-exec`, only `libc` as a dependency) for the same
//! target and embeds it: `sandbox.rs` includes `$OUT_DIR/yuyao-sandbox-exec`. One artifact
//! (the extension module) thus always carries its helper, whichever tool builds it (maturin
//! develop, a wheel, cargo test): maturin cannot put a second binary next to a pyo3 module.
//!
//! The helper is built by a nested cargo in its own target directory under `OUT_DIR`, always
//! with the release profile (small, quick to start), offline (the outer cargo has already
//! fetched `libc`) and with the outer build's linker settings (maturin's zig for manylinux
//! wheels reach it through the environment).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let helper = manifest.join("../sandbox-exec");
    for p in ["src", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", helper.join(p).display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        manifest.join("../../Cargo.lock").display()
    );
    let out = PathBuf::from(env("OUT_DIR"));
    let target = env("TARGET");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--release", "--offline", "--quiet"])
        .args(["-p", "yuyao-sandbox-exec", "--bin", "yuyao-sandbox-exec"])
        .arg("--target")
        .arg(&target)
        .arg("--target-dir")
        .arg(out.join("helper-target"))
        .arg("--manifest-path")
        .arg(helper.join("Cargo.toml"))
        // clippy's driver is for the outer workspace; the helper is compiled plainly.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET");
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        let var = format!(
            "CARGO_TARGET_{}_LINKER",
            target.to_uppercase().replace(['-', '.'], "_")
        );
        if std::env::var_os(&var).is_none() {
            cmd.env(var, linker);
        }
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the sandbox helper: {e}"));
    assert!(
        status.success(),
        "building the sandbox helper (rust/sandbox-exec) failed: {status}"
    );
    let built = out
        .join("helper-target")
        .join(&target)
        .join("release/yuyao-sandbox-exec");
    std::fs::copy(&built, out.join("yuyao-sandbox-exec"))
        .unwrap_or_else(|e| panic!("cannot copy {}: {e}", built.display()));
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("{key} is not set for the build script"))
}
