//! Benchmarks of the permission engine (run by `benches/bench_policy.py`):
//! - adjudication time of a 10-segment command line (target: under 1 ms), beside a
//!   1-segment one;
//! - spawn overhead of the sandboxed path (mount + PID namespaces with read-only binds and a
//!   private /proc, Landlock, seccomp, no_new_privs, parent-death signal) against an
//!   unsandboxed `bash -c true`, as a ratio measured in the same run.
//!
//! Prints one JSON object.

use std::path::Path;
use std::process::Command;
use std::time::Instant;
use yuyao_policy::sandbox::{Confinement, Launch, prepare, spawn, support};
use yuyao_policy::{Action, Policy, Rule};
use yuyao_protocol::{Mode, NetworkAccess, Role, SandboxLevel};

fn bash(cmd: &str) -> Action {
    Action {
        tool: "bash".into(),
        command: Some(cmd.into()),
        paths: vec![],
    }
}

fn time_decide(p: &Policy, a: &Action, n: u32) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(p.decide(std::hint::black_box(a)));
    }
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

fn time_spawn(c: Option<&Confinement>, n: u32) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        let st = match c {
            // The production path: confined, spawned from yuyao's spawner thread.
            Some(c) => {
                let launch = Launch::new("bash", &["-c", "true"], "/");
                spawn(launch, prepare(c).expect("sandbox available"))
                    .and_then(|mut ch| ch.wait())
                    .expect("bash runs")
            }
            None => Command::new("bash")
                .args(["-c", "true"])
                .status()
                .expect("bash runs"),
        };
        assert!(st.success());
    }
    t.elapsed().as_secs_f64() * 1e3 / n as f64
}

fn main() {
    let mut p = Policy::new(Mode::Ask, Role::Execute, Path::new("/proj"));
    p.sandbox = SandboxLevel::FullAccess;
    p.network = NetworkAccess::On;
    for r in ["Bash(rm)", "Bash(git push:*)", "Bash(curl)", "Bash(sudo)"] {
        p.deny.push(Rule::parse(r).unwrap());
    }
    for r in ["Bash(npm install:*)", "Bash(make)", "Bash(cargo build)"] {
        p.allow.push(Rule::parse(r).unwrap());
    }
    let ten = "cd src && ls -la | grep -v target; git status --short || echo none; \
               env A=1 nice -n 5 make -j2 && sh -c 'cargo build --release' | tee log.txt; \
               find . -name '*.o' -exec wc -c {} + ; echo $(git rev-parse HEAD) done";
    let segs = yuyao_policy::segments(ten).unwrap().len();
    let one = "ls -la";
    let n = 20_000;
    let ten_us = time_decide(&p, &bash(ten), n);
    let one_us = time_decide(&p, &bash(one), n);

    let sup = support();
    let spawn = if sup.landlock.is_ok() && sup.seccomp.is_ok() {
        let c = Confinement {
            level: SandboxLevel::WorkspaceWrite,
            network: NetworkAccess::Off,
            writable: vec![std::env::temp_dir()],
            ..Default::default()
        };
        let k = 200;
        // Interleave to share the machine's noise.
        let plain1 = time_spawn(None, k / 2);
        let boxed1 = time_spawn(Some(&c), k / 2);
        let plain2 = time_spawn(None, k / 2);
        let boxed2 = time_spawn(Some(&c), k / 2);
        let plain = (plain1 + plain2) / 2.0;
        let boxed = (boxed1 + boxed2) / 2.0;
        format!(
            "{{\"plain_ms\": {plain:.3}, \"sandboxed_ms\": {boxed:.3}, \"ratio\": {:.3}, \"namespaces\": {}}}",
            boxed / plain,
            sup.namespaces.is_ok()
        )
    } else {
        format!("{{\"unavailable\": {:?}}}", sup.describe())
    };
    println!(
        "{{\"adjudication\": {{\"segments\": {segs}, \"us_per_call\": {ten_us:.2}, \"one_segment_us\": {one_us:.2}, \"target_us\": 1000}}, \"spawn\": {spawn}}}"
    );
}
