//! The commands that manage trust and the sandbox (`/permissions`, `/trust`, `/sandbox`):
//! one feature over the kernel's policy stage (`permissions.rs`) and extension trust
//! (`extension_trust.rs`). Removing it leaves
//! the adjudication as it is, with no command to change its rules from a session.

use crate::permissions::last_blocked_path;
use crate::session::{CoreError, Session};
use serde_json::Value;
use yuyao_policy::{Action, Rule, sandbox};
use yuyao_store::permissions::{self, RuleKind, Scope};

// ----------------------------------------------------------------------------------------
// /permissions

const PERM_USAGE: &str = "usage: /permissions [list] | allow|ask|deny <rule> [--project|--user|--session] | remove <rule>";

fn rule_and_scope(args: &[String]) -> Result<(String, Option<Scope>), CoreError> {
    let mut scope = Some(Scope::Project);
    let mut words = Vec::new();
    for a in args {
        match a.as_str() {
            "--project" => scope = Some(Scope::Project),
            "--user" | "--global" => scope = Some(Scope::User),
            "--session" => scope = None,
            _ => words.push(a.as_str()),
        }
    }
    let rule = words.join(" ");
    if rule.trim().is_empty() {
        return Err(CoreError::Usage(PERM_USAGE.into()));
    }
    Ok((rule, scope))
}

/// `/trust [status]`: the user trusts this project (persisted in `~/.yuyao/`); the project's
/// widening settings and allow rules then apply, unless a flag pins them.
pub(crate) fn trust_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    // A process the agent started may have written an extension file since the last tool
    // batch looked (a leftover of a command, after the turn ended): the gesture sees it as
    // the agent's before it approves or lists anything.
    s.note_agent_extension_writes();
    let (trusted, ignored) = {
        let st = s.lock();
        (st.trusted, st.ignored_project_settings.clone())
    };
    if args.first().map(String::as_str) == Some("status") {
        let held = crate::extension_trust::held_files(&s.paths);
        return Ok(if trusted && !held.is_empty() {
            format!(
                "project {} is trusted; held (review): {}",
                s.paths.project.display(),
                held.iter()
                    .map(|(f, why)| format!(
                        "{} ({})",
                        crate::extension_trust::shown(&s.paths.project, f),
                        crate::extension_trust::label(*why)
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else if trusted {
            format!("project {} is trusted", s.paths.project.display())
        } else if ignored.is_empty() {
            format!(
                "project {} is not trusted (it asks for nothing beyond the defaults)",
                s.paths.project.display()
            )
        } else {
            format!(
                "project {} is not trusted; ignored: {}",
                s.paths.project.display(),
                ignored.join(", ")
            )
        });
    }
    if s.opts.trust_project == Some(false) {
        return Err(CoreError::Usage(
            "this run never trusts the project (headless contract)".into(),
        ));
    }
    if matches!(args.first().map(String::as_str), Some("review" | "approve")) {
        use crate::extension_trust::Review;
        let files: Vec<String> = args[1..]
            .iter()
            .filter(|a| *a != "--all")
            .cloned()
            .collect();
        let ask = match args[0].as_str() {
            "review" => Review::List,
            _ if args[1..].iter().any(|a| a == "--all") => Review::ApproveAll,
            _ if files.is_empty() => {
                return Err(CoreError::Usage(
                    "usage: /trust approve FILE… | /trust approve --all".into(),
                ));
            }
            _ => Review::Approve(files),
        };
        let approving = !matches!(ask, Review::List);
        let out = crate::extension_trust::review(&s.paths, &ask).map_err(CoreError::Usage)?;
        if approving {
            // Approved content acts from now on: the session trusts the project too.
            s.lock().trusted = true;
            s.config
                .allow_project_programs(s.project_extensions_allowed());
            let applied = apply_project_settings(s)?;
            // MCP servers follow at the next request (`mcp_wait_started` syncs them).
            s.load_extensions();
            if !applied.is_empty() {
                return Ok(format!("{out}; now in force: {}", applied.join(", ")));
            }
        }
        return Ok(out);
    }
    if !args.is_empty() {
        return Err(CoreError::Usage(
            "usage: /trust [status | review | approve FILE… | approve --all]".into(),
        ));
    }
    yuyao_store::trust::trust(&s.paths)
        .map_err(|e| CoreError::Failed(format!("cannot record the trust decision: {e}")))?;
    s.lock().trusted = true;
    // The gesture approves the extension files as they are now, except those the agent was
    // seen writing: those wait for `/trust review` (extension_trust.rs).
    let (_, agent_written) = crate::extension_trust::approve_all_but_agent_written(&s.paths);
    s.config
        .allow_project_programs(s.project_extensions_allowed());
    let applied = apply_project_settings(s)?;
    s.lock().ignored_project_settings.clear();
    // MCP servers follow at the next request (`mcp_wait_started` syncs them).
    s.load_extensions();
    Ok(format!(
        "trusted project {}{}{}",
        s.paths.project.display(),
        if applied.is_empty() {
            String::new()
        } else {
            format!("; now in force: {}", applied.join(", "))
        },
        if agent_written.is_empty() {
            String::new()
        } else {
            format!(
                "; still held (written by the agent; review them with /trust review): {}",
                agent_written
                    .iter()
                    .map(|f| crate::extension_trust::shown(&s.paths.project, f))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ))
}

/// The project's widening settings and allow rules, put in force in a trusted session when
/// their files are the approved content (flags still pin theirs). Returns what applied.
fn apply_project_settings(s: &Session) -> Result<Vec<String>, CoreError> {
    let config_ok = !s.paths.project_config().exists()
        || yuyao_store::trust::is_approved(&s.paths, &s.paths.project_config());
    let mut applied = Vec::new();
    for key in ["mode", "sandbox", "network"] {
        if !config_ok {
            break;
        }
        if let Some(v) = s.config.get_in(key, yuyao_store::Layer::Project) {
            let v = yuyao_store::config::display(&v);
            let pinned = match key {
                "mode" => s.opts.mode.is_some(),
                "sandbox" => s.opts.sandbox.is_some(),
                _ => s.opts.network.is_some(),
            };
            if !pinned {
                crate::settings::apply_live(s, key, &v)?;
                applied.push(format!("{key} = {v}"));
            }
        }
    }
    let perms_file = permissions::path_for(&s.paths, permissions::Scope::Project);
    let perms_ok = !perms_file.exists() || yuyao_store::trust::is_approved(&s.paths, &perms_file);
    for (scope, kind, text) in permissions::merged(&s.paths).map_err(CoreError::Usage)? {
        if perms_ok
            && scope == permissions::Scope::Project
            && kind == RuleKind::Allow
            && let Ok(rule) = Rule::parse(&text)
        {
            let mut st = s.lock();
            if !st.policy.allow.iter().any(|r| r.text == rule.text) {
                st.policy.allow.push(rule);
                applied.push(format!("allow {text}"));
            }
        }
    }
    Ok(applied)
}

pub(crate) fn permissions_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    match args.first().map(String::as_str) {
        None | Some("list") | Some("ls") => list(s),
        Some(k @ ("allow" | "ask" | "deny")) => {
            let kind = match k {
                "allow" => RuleKind::Allow,
                "ask" => RuleKind::Ask,
                _ => RuleKind::Deny,
            };
            let (text, scope) = rule_and_scope(&args[1..])?;
            let rule = Rule::parse(&text).map_err(CoreError::Usage)?;
            let text = rule.text.clone();
            {
                let mut st = s.lock();
                let p = &mut st.policy;
                for l in [&mut p.allow, &mut p.ask, &mut p.deny, &mut p.granted] {
                    l.retain(|r| r.text != text);
                }
                match kind {
                    RuleKind::Allow => p.allow.push(rule),
                    RuleKind::Ask => p.ask.push(rule),
                    RuleKind::Deny => p.deny.push(rule),
                }
            }
            let where_ = match scope {
                Some(sc) => {
                    permissions::add(&s.paths, sc, kind, &text).map_err(CoreError::Failed)?;
                    format!("saved in {}", permissions::path_for(&s.paths, sc).display())
                }
                None => "for this session only".into(),
            };
            Ok(format!("{} {text} ({where_})", kind.as_str()))
        }
        Some("remove") | Some("rm") | Some("delete") => {
            let (text, _) = rule_and_scope(&args[1..])?;
            let text = Rule::parse(&text).map(|r| r.text).unwrap_or(text);
            let mut removed = Vec::new();
            for sc in [Scope::Project, Scope::User] {
                for k in permissions::remove(&s.paths, sc, &text).map_err(CoreError::Failed)? {
                    removed.push(format!("{} ({})", k.as_str(), sc.as_str()));
                }
            }
            {
                let mut st = s.lock();
                let p = &mut st.policy;
                for (name, l) in [
                    ("allow", &mut p.allow),
                    ("ask", &mut p.ask),
                    ("deny", &mut p.deny),
                    ("allow", &mut p.granted),
                ] {
                    let before = l.len();
                    l.retain(|r| r.text != text);
                    if l.len() != before && removed.iter().all(|r| !r.starts_with(name)) {
                        removed.push(format!("{name} (session)"));
                    }
                }
            }
            if removed.is_empty() {
                Err(CoreError::Usage(format!(
                    "no rule {text} (see /permissions list)"
                )))
            } else {
                Ok(format!("removed {text}: {}", removed.join(", ")))
            }
        }
        Some(other) => Err(CoreError::Usage(format!(
            "unknown action '{other}'. {PERM_USAGE}"
        ))),
    }
}

fn list(s: &Session) -> Result<String, CoreError> {
    let persisted = permissions::merged(&s.paths).map_err(CoreError::Failed)?;
    let (claude, _) = permissions::claude_rules(&s.paths);
    let st = s.lock();
    let p = &st.policy;
    let mut out = format!(
        "Permission rules (deny first, then ask, then allow; mode {}, role {}):\n",
        p.mode, p.role
    );
    let origin = |kind: RuleKind, text: &str| -> String {
        persisted
            .iter()
            .find(|(_, k, t)| *k == kind && t == text)
            .map(|(sc, _, _)| match sc {
                Scope::Project => "project".to_string(),
                Scope::User => "user".to_string(),
            })
            .or_else(|| {
                claude
                    .iter()
                    .find(|c| c.kind == kind && c.text == text)
                    .map(|c| format!("{}: {}", c.scope.as_str(), c.file.display()))
            })
            .unwrap_or_else(|| "session".into())
    };
    let mut any = false;
    for (kind, rules) in [
        (RuleKind::Deny, &p.deny),
        (RuleKind::Ask, &p.ask),
        (RuleKind::Allow, &p.allow),
        (RuleKind::Allow, &p.granted),
    ] {
        for r in rules {
            any = true;
            out.push_str(&format!(
                "  {:<5} {:<40} [{}]\n",
                kind.as_str(),
                r.text,
                origin(kind, &r.text)
            ));
        }
    }
    if !any {
        out.push_str("  (none)\n");
    }
    out.push_str(&format!(
        "Files: {} (project), {} (user)",
        permissions::path_for(&s.paths, Scope::Project).display(),
        permissions::path_for(&s.paths, Scope::User).display()
    ));
    Ok(out)
}

// ----------------------------------------------------------------------------------------
// /sandbox (and `yuyao sandbox …`)

pub(crate) fn sandbox_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    match args.first().map(String::as_str) {
        None | Some("list") => Ok(sandbox_list(s, &sandbox::support())),
        Some("recreate") => {
            let sup = sandbox::reprobe();
            let c = s.ctx.confinement();
            let check = self_test(&c);
            let _ = std::fs::remove_file(last_blocked_path(s));
            let mut out = String::from("Re-probed the kernel and rebuilt the sandbox state.\n");
            out.push_str(&sandbox_list(s, &sup));
            out.push_str(&format!("\nself-test under the current flags: {check}"));
            Ok(out)
        }
        Some("explain") => {
            let what = args[1..].join(" ");
            if what.trim().is_empty() {
                explain_last(s)
            } else {
                let policy = s.lock().policy.clone();
                let action = Action {
                    tool: "bash".into(),
                    command: Some(what),
                    paths: Vec::new(),
                };
                // The writable folders the spawn really uses (roots, temp, scratch).
                Ok(policy.explain(&action, &s.ctx.confinement()))
            }
        }
        Some(other) => Err(CoreError::Usage(format!(
            "unknown action '{other}'; usage: /sandbox [list|recreate|explain [\"<command>\"]]"
        ))),
    }
}

fn self_test(c: &sandbox::Confinement) -> String {
    let prepared = match sandbox::prepare(c) {
        Ok(p) => p,
        Err(e) => return format!("FAILED: {e}"),
    };
    let launch = sandbox::Launch::new("sh", &["-c", "exit 0"], "/");
    match sandbox::spawn(launch, prepared).and_then(|mut child| child.wait()) {
        Ok(st) if st.success() => format!("ok ({})", sandbox::describe(c)),
        Ok(st) => format!("FAILED: a confined `sh -c 'exit 0'` ended with {st}"),
        Err(e) => format!("FAILED: cannot start a confined process: {e}"),
    }
}

fn sandbox_list(s: &Session, sup: &sandbox::Support) -> String {
    use yuyao_protocol::{NetworkAccess, SandboxLevel};
    let current = s.lock().policy.confinement();
    let mut out = String::from(
        "OS sandbox runtime: Linux Landlock + seccomp + no_new_privs, applied to every tool process right before exec\n",
    );
    out.push_str(&sup.describe());
    out.push_str(&s.process_profiles());
    out.push_str("levels (--sandbox):\n");
    for (level, what) in [
        (SandboxLevel::ReadOnly, "no writes except /dev/null"),
        (
            SandboxLevel::WorkspaceWrite,
            "writes only in the project roots, /add-dir folders and the temp dir",
        ),
        (SandboxLevel::FullAccess, "no file-system confinement"),
    ] {
        let probe = sandbox::Confinement {
            level,
            network: NetworkAccess::On,
            writable: Vec::new(),
            ..Default::default()
        };
        let state = if level == SandboxLevel::FullAccess {
            "nothing to enforce".to_string()
        } else {
            match sup.cannot_enforce(&probe) {
                None => "enforced".to_string(),
                Some(why) => format!("NOT ENFORCEABLE: {why}"),
            }
        };
        let mark = if current.level == level {
            "  <- in force"
        } else {
            ""
        };
        out.push_str(&format!(
            "  {:<16} {what}: {state}{mark}\n",
            level.to_string()
        ));
    }
    out.push_str("network (--network):\n");
    for (net, what) in [
        (
            NetworkAccess::Off,
            "no sockets but AF_UNIX; web tools refused",
        ),
        (NetworkAccess::On, "network allowed"),
    ] {
        let probe = sandbox::Confinement {
            level: SandboxLevel::FullAccess,
            network: net,
            writable: Vec::new(),
            ..Default::default()
        };
        let state = if net == NetworkAccess::On {
            "nothing to enforce".to_string()
        } else {
            match sup.cannot_enforce(&probe) {
                None => "enforced".to_string(),
                Some(why) => format!("NOT ENFORCEABLE: {why}"),
            }
        };
        let mark = if current.network == net {
            "  <- in force"
        } else {
            ""
        };
        out.push_str(&format!(
            "  {:<16} {what}: {state}{mark}\n",
            net.to_string()
        ));
    }
    out.push_str(&format!(
        "this session: {}",
        sandbox::describe(&s.ctx.confinement())
    ));
    out
}

fn explain_last(s: &Session) -> Result<String, CoreError> {
    let path = last_blocked_path(s);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(_) => {
            return Ok(format!(
                "No blocked call is recorded ({}). To see how a command would be judged under the current flags: yuyao sandbox explain \"<command>\"",
                path.display()
            ));
        }
    };
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| CoreError::Failed(format!("{} is damaged: {e}", path.display())))?;
    let g = |k: &str| v[k].as_str().unwrap_or("").to_string();
    let mut out = format!(
        "Last blocked call ({}, session {}):\n",
        g("ts"),
        g("session")
    );
    out.push_str(&format!("  tool:          {}\n", g("tool")));
    if let Some(c) = v["command"].as_str() {
        out.push_str(&format!("  command:       {c}\n"));
    }
    if let Some(ps) = v["paths"].as_array().filter(|a| !a.is_empty()) {
        let ps: Vec<&str> = ps.iter().filter_map(Value::as_str).collect();
        out.push_str(&format!("  paths:         {}\n", ps.join(", ")));
    }
    out.push_str(&format!("  deciding rule: {}\n", g("source")));
    if let Some(seg) = v["segment"].as_str() {
        out.push_str(&format!("  segment:       {seg}\n"));
    }
    if let Some(r) = v["reason"].as_str() {
        out.push_str(&format!("  reason:        {r}\n"));
    }
    if v["reason"].is_null() {
        out.push_str(&format!(
            "  output:        {}\n",
            g("message").replace('\n', "\n                 ")
        ));
    }
    out.push_str(&format!(
        "  in force:      mode {}, role {}, sandbox {}, network {}",
        g("mode"),
        g("role"),
        g("sandbox"),
        g("network")
    ));
    Ok(out)
}

/// What this feature adds to a session (feature.rs).
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "permissions",
    commands: &[
        crate::cmd!(
            "permissions",
            [],
            "[list | allow|ask|deny <rule> [--project|--user|--session] | remove <rule>]",
            "manage permission rules",
            Some(permissions_cmd)
        ),
        crate::cmd!(
            "trust",
            [],
            "[status|review|approve FILE…]",
            "trust this project as it is now; review held extension files",
            Some(trust_cmd)
        ),
        crate::cmd!(
            "sandbox",
            [],
            "[list | recreate | explain [\"<command>\"]]",
            "OS sandbox status, and why a call was blocked",
            Some(sandbox_cmd)
        ),
    ],
    ..crate::feature::Feature::NONE
};
