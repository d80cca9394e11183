//! Builds the spawn helper (`rust/sandbox-exec`, only `libc` as a dependency) for the same
//! target and embeds it: `sandbox.rs` includes `$OUT_DIR/yuyao-sandbox-exec`. One artifact
//! (the extension module) thus always carries its helper, whichever tool builds it (maturin
//! develop, a wheel, cargo test): maturin cannot put a second binary next to a pyo3 module.
//!
//! The helper is built by a nested cargo in its own target directory under `OUT_DIR`, always
//! with the release profile, offline (the outer cargo has already fetched `libc`) and with the
//! outer build's linker settings (maturin's zig for manylinux wheels reach it through the
//! environment). It is linked statically when the toolchain can (no dynamic loader at each
//! start, and no loader variable could ever act on it), checked on the ELF header: for the
//! musl target when its std is installed (no CPU probing at start: see `main`), else with
//! glibc; when the outer linker ignores +crt-static (maturin's `zig cc` does), the
//! toolchain's own `cc` links it statically; only if all fail is it linked dynamically.

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
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let static_flags = if flags.is_empty() {
        "-Ctarget-feature=+crt-static".to_string()
    } else {
        format!("{flags}\x1f-Ctarget-feature=+crt-static")
    };
    // First choice: the same architecture's musl target when its std is installed
    // (`rustup target add x86_64-unknown-linux-musl`). glibc's start-up code probes the CPU
    // (cache descriptors through `cpuid`), which costs ~0.65 ms per exec in a VM where
    // `cpuid` traps; musl's costs nothing, and the helper runs once per command.
    // Then a static glibc link: a linker may accept +crt-static and still link dynamically
    // (maturin's `zig cc` for manylinux wheels does), so the result is checked, and a static
    // link is then tried with the toolchain's own linker. A static helper needs no glibc
    // symbol versions, so it runs wherever the wheel does.
    let crt_static = "-Ctarget-feature=+crt-static";
    let linked = musl_twin(&target)
        .ok_or_else(|| format!("no musl target beside {target}"))
        .and_then(|musl| build(&helper, &out, &musl, crt_static, Linker::Musl))
        .and_then(|built| static_or_err(built, "the musl target"))
        .or_else(|musl| {
            build(&helper, &out, &target, &static_flags, Linker::Outer)
                .and_then(|built| static_or_err(built, "the outer linker"))
                .map_err(|first| format!("{musl}; {first}"))
        })
        .or_else(|first| {
            build(&helper, &out, &target, crt_static, Linker::System)
                .and_then(|built| static_or_err(built, "the system linker"))
                .map_err(|second| format!("{first}; {second}"))
        });
    let built = match linked {
        Ok(built) => built,
        Err(why) => {
            println!(
                "cargo:warning=the sandbox helper is linked dynamically (a static link failed: {})",
                why.lines().last().unwrap_or("")
            );
            build(&helper, &out, &target, &flags, Linker::Outer).unwrap_or_else(|why| {
                panic!("building the sandbox helper (rust/sandbox-exec) failed:\n{why}")
            })
        }
    };
    std::fs::copy(&built, out.join("yuyao-sandbox-exec"))
        .unwrap_or_else(|e| panic!("cannot copy {}: {e}", built.display()));
}

/// Which linker the nested build uses: the outer build's (zig for wheels), the toolchain's
/// default `cc`, or the toolchain's default for the musl target.
#[derive(Clone, Copy, PartialEq)]
enum Linker {
    Outer,
    System,
    Musl,
}

/// `x86_64-unknown-linux-musl` for `x86_64-unknown-linux-gnu` (any architecture).
fn musl_twin(target: &str) -> Option<String> {
    target
        .strip_suffix("-unknown-linux-gnu")
        .map(|arch| format!("{arch}-unknown-linux-musl"))
}

/// `built` when it has no program interpreter (PT_INTERP), i.e. it is statically linked.
fn static_or_err(built: PathBuf, by: &str) -> Result<PathBuf, String> {
    let bytes =
        std::fs::read(&built).map_err(|e| format!("cannot read {}: {e}", built.display()))?;
    let u16_at = |o: usize| {
        bytes
            .get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u64_at = |o: usize| {
        bytes
            .get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize)
    };
    let elf64 = bytes.get(..5) == Some(b"\x7fELF\x02".as_slice());
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return Err(format!("{}: not an ELF file", built.display()));
    };
    if !elf64 {
        return Err(format!("{}: not a 64-bit ELF file", built.display()));
    }
    const PT_INTERP: u32 = 3;
    let dynamic = (0..phnum).any(|i| {
        let o = phoff + i * phentsize;
        bytes.get(o..o + 4) == Some(PT_INTERP.to_le_bytes().as_slice())
    });
    if dynamic {
        Err(format!("{by} linked it dynamically despite +crt-static"))
    } else {
        Ok(built)
    }
}

/// One nested `cargo build` of the helper with these rustflags; `Err` has its output.
fn build(
    helper: &std::path::Path,
    out: &std::path::Path,
    target: &str,
    rustflags: &str,
    linker: Linker,
) -> Result<PathBuf, String> {
    // Each linker its own target directory: nothing built by one is reused by the other.
    let dir = out.join(match linker {
        Linker::Outer => "helper-target",
        Linker::System => "helper-target-cc",
        Linker::Musl => "helper-target-musl",
    });
    let linker_var = format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_uppercase().replace(['-', '.'], "_")
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--release", "--offline", "--quiet"])
        .args(["-p", "yuyao-sandbox-exec", "--bin", "yuyao-sandbox-exec"])
        .arg("--target")
        .arg(target)
        .arg("--target-dir")
        .arg(&dir)
        .arg("--manifest-path")
        .arg(helper.join("Cargo.toml"))
        // clippy's driver is for the outer workspace; the helper is compiled plainly.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTFLAGS")
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags);
    match linker {
        Linker::Outer => {
            if let Ok(outer) = std::env::var("RUSTC_LINKER")
                && std::env::var_os(&linker_var).is_none()
            {
                cmd.env(&linker_var, outer);
            }
        }
        Linker::System | Linker::Musl => {
            cmd.env_remove(&linker_var);
        }
    }
    let done = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if done.status.success() {
        Ok(dir.join(target).join("release/yuyao-sandbox-exec"))
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
