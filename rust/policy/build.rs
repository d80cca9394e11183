//! Builds the spawn helper (`rust/sandbox-exec`, only `libc` as a dependency) for the same
//! target and embeds it: `sandbox.rs` includes `$OUT_DIR/yuyao-sandbox-exec`. One artifact
//! (the extension module) thus always carries its helper, whichever tool builds it (maturin
//! develop, a wheel, cargo test): maturin cannot put a second binary next to a pyo3 module.
//!
//! The helper is built by a nested cargo in its own target directory under `OUT_DIR`, always
//! with the release profile, offline (the outer cargo has already fetched `libc`) and with the
//! outer build's linker settings (maturin's zig for manylinux wheels reach it through the
//! environment). It is linked statically when the toolchain can (no dynamic loader at each
//! start: ~0.25 ms less per command, and no loader variable could ever act on it), else
//! dynamically.

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
    let built = out
        .join("helper-target")
        .join(&target)
        .join("release/yuyao-sandbox-exec");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let static_flags = if flags.is_empty() {
        "-Ctarget-feature=+crt-static".to_string()
    } else {
        format!("{flags}\x1f-Ctarget-feature=+crt-static")
    };
    let static_build = build(&helper, &out, &target, &static_flags);
    if let Err(why) = static_build {
        println!(
            "cargo:warning=the sandbox helper is linked dynamically (a static link failed: {})",
            why.lines().last().unwrap_or("")
        );
        if let Err(why) = build(&helper, &out, &target, &flags) {
            panic!("building the sandbox helper (rust/sandbox-exec) failed:\n{why}");
        }
    }
    std::fs::copy(&built, out.join("yuyao-sandbox-exec"))
        .unwrap_or_else(|e| panic!("cannot copy {}: {e}", built.display()));
}

/// One nested `cargo build` of the helper with these rustflags; `Err` has its output.
fn build(
    helper: &std::path::Path,
    out: &std::path::Path,
    target: &str,
    rustflags: &str,
) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--release", "--offline", "--quiet"])
        .args(["-p", "yuyao-sandbox-exec", "--bin", "yuyao-sandbox-exec"])
        .arg("--target")
        .arg(target)
        .arg("--target-dir")
        .arg(out.join("helper-target"))
        .arg("--manifest-path")
        .arg(helper.join("Cargo.toml"))
        // clippy's driver is for the outer workspace; the helper is compiled plainly.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTFLAGS")
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags);
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        let var = format!(
            "CARGO_TARGET_{}_LINKER",
            target.to_uppercase().replace(['-', '.'], "_")
        );
        if std::env::var_os(&var).is_none() {
            cmd.env(var, linker);
        }
    }
    let done = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if done.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&done.stdout),
            String::from_utf8_lossy(&done.stderr)
        ))
    }
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("{key} is not set for the build script"))
}
