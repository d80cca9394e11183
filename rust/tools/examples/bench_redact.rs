//! Benchmark of the redaction of tool results (DESIGN §5; the target: redaction adds < 5% to a
//! 1 MB tool result against capping it alone). The capping baseline is what every result
//! already pays: `cap_output` writes the whole text to a spill file and keeps head and tail.
//!
//!     cargo run --release -p yuyao-tools --example bench_redact
//!
//! Prints one JSON object.

use std::path::Path;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use yuyao_policy::redact::Redactor;
use yuyao_tools::exec::run_foreground;
use yuyao_tools::{DEFAULT_OUTPUT_CHARS, ToolContext, cap_output};

/// About 1 MB of build-log-like text with a few secrets and near-misses in it.
fn sample() -> String {
    let mut s = String::with_capacity(1 << 20);
    let mut i = 0u64;
    while s.len() < (1 << 20) {
        i += 1;
        let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        s.push_str(&format!(
            "[{i:06}] compiling crate-{:x} v0.{}.{} (/home/dev/project/src/module_{}.rs) ok in {}ms\n",
            h >> 40,
            h % 17,
            h % 5,
            h % 97,
            h % 1000
        ));
        if i.is_multiple_of(100) {
            s.push_str(
                "near misses: sk-short task-runner eyJ AKIA ghp_x -----BEGIN CERTIFICATE-----\n",
            );
        }
        if i.is_multiple_of(2000) {
            s.push_str("SECRET_TOKEN=s3cr3t-value-123456 AKIAIOSFODNN7EXAMPLE ghp_abcdefghijklmnopqrstuvwxyz0123456789\n");
        }
    }
    s
}

fn env_file() -> String {
    let mut e = String::from("SECRET_TOKEN=s3cr3t-value-123456\nDEBUG=true\n");
    for k in 0..40 {
        e.push_str(&format!(
            "VAR_{k}=value-{k:04}-{:x}\n",
            (k as u64 + 7) * 0x1234_5678_9abc
        ));
    }
    e
}

fn time<F: FnMut()>(n: u32, mut f: F) -> f64 {
    f(); // warm up (file cache, lazily built regex)
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_secs_f64() * 1e3 / n as f64
}

fn main() {
    let text = sample();
    let env = env_file();
    let extra = vec![(
        "model-api-key-0123456789".to_string(),
        "the model API key".to_string(),
    )];
    let r = Redactor::from_contents(&[(".env", env.as_str())], &extra);
    let never = |_: &Path| false;
    let spill = std::env::temp_dir().join(format!("yuyao-bench-redact-{}", std::process::id()));
    let n = 40;
    let cap_ms = time(n, || {
        std::hint::black_box(cap_output(
            std::hint::black_box(&text),
            &spill,
            "bench",
            DEFAULT_OUTPUT_CHARS,
        ));
    });
    let both_ms = time(n, || {
        let red = r.redact(std::hint::black_box(&text), &never);
        std::hint::black_box(cap_output(&red, &spill, "bench", DEFAULT_OUTPUT_CHARS));
    });
    let redact_ms = time(n, || {
        std::hint::black_box(r.redact(std::hint::black_box(&text), &never));
    });
    let shapes_only = Redactor::from_contents(&[], &[]);
    let shapes_ms = time(n, || {
        std::hint::black_box(shapes_only.redact(std::hint::black_box(&text), &never));
    });
    // End to end: a bash call printing the 1 MB (the tool caps and spills it itself), then
    // what the core adds before the result enters the history: the capped text redacted.
    // Interleaved, minimum of the rounds.
    let work = std::env::temp_dir().join(format!("yuyao-bench-redact-ws-{}", std::process::id()));
    std::fs::create_dir_all(&work).expect("bench folder");
    let big = work.join("build.log");
    std::fs::write(&big, &text).expect("bench file");
    let mut ctx = ToolContext::new(work.clone(), work.clone(), work.join("spill"));
    ctx.sandbox = std::sync::Mutex::new(Default::default());
    let cancel = CancellationToken::new();
    let call = || {
        run_foreground(&ctx, "cat build.log", 60_000, &cancel)
            .expect("bash runs")
            .text
    };
    let redact_result = |out: &str| r.redact(out, &never).into_owned();
    let (mut plain_best, mut redacted_best) = (f64::MAX, f64::MAX);
    for _ in 0..10 {
        plain_best = plain_best.min(time(4, || {
            std::hint::black_box(call());
        }));
        redacted_best = redacted_best.min(time(4, || {
            let out = call();
            std::hint::black_box(redact_result(&out));
        }));
    }
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&spill);
    let overhead = (both_ms - cap_ms) / cap_ms * 100.0;
    println!(
        "{}",
        serde_json::json!({
            "bytes": text.len(),
            "values": r.value_count(),
            "cap_ms": cap_ms,
            "redact_ms": redact_ms,
            "key_shapes_only_ms": shapes_ms,
            "redact_and_cap_ms": both_ms,
            "overhead_percent": overhead,
            "bash_call_ms": plain_best,
            "bash_call_redacted_ms": redacted_best,
            "bash_call_overhead_percent": (redacted_best - plain_best) / plain_best * 100.0,
            "target_percent": 5.0,
        })
    );
}
