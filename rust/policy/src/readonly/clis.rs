//! Package managers and service CLIs under the read-only sandbox: a table of reading verbs
//! per program, as for git. The sandbox keeps local files intact, but it cannot stop what a
//! verb asks a registry, a cluster or a cloud API to do (the network switch may be on, and
//! the docker daemon is a local socket): only verbs that read are here, and options that send
//! credentials elsewhere (`--server`, `--endpoint-url`), load a configuration naming a
//! program (`--kubeconfig`), or run a program (`--post-renderer`) are refused.
//!
//! Several of these run code the project chooses (npm's `git` setting, yarn's `yarnPath`,
//! terraform's provider plugins, uv's interpreter): like the validation commands of seed 001,
//! they are read-only only because the sandbox keeps files intact.

use super::args::{long_abbreviates, words_are_static};

/// The words before the first option: the subcommand path (`pr list`, `ec2 describe-x`).
fn verbs(args: &[String]) -> Vec<&str> {
    args.iter()
        .map(String::as_str)
        .take_while(|a| !a.starts_with('-'))
        .collect()
}

fn has_any(args: &[String], refused: &[&str]) -> bool {
    args.iter().any(|a| {
        refused
            .iter()
            .any(|r| a == r || a.starts_with(&format!("{r}=")))
    })
}

/// The options npm, yarn and pnpm may get here. Each of them takes any configuration key as
/// an option (`--git=./x`, `--browser=./x`, `--script-shell`, `--userconfig`,
/// `--config.x`, `--use-yarnrc`, `--cwd`): only display and selection options pass.
fn js_options_are_known(args: &[String]) -> bool {
    const KNOWN: &[&str] = &[
        "--json",
        "--long",
        "-l",
        "--parseable",
        "-p",
        "--all",
        "-a",
        "--depth",
        "--omit",
        "--include",
        "--global",
        "-g",
        "--workspace",
        "-w",
        "--workspaces",
        "--include-workspace-root",
        "--prod",
        "--production",
        "--dev",
        "--registry",
        "--audit-level",
        "--package-lock-only",
        "--no-color",
        "--color",
        "--loglevel",
        "--silent",
        "-s",
        "--quiet",
        "-q",
        "--verbose",
        "--filter",
        "-r",
        "--recursive",
        "--pattern",
        "--format",
        "--fields",
        "--no-optional",
        "--dev-only",
        "--version",
        "-v",
        "--help",
        "-h",
    ];
    args.iter()
        .filter(|a| a.starts_with('-'))
        .all(|a| KNOWN.contains(&a.split_once('=').map_or(a.as_str(), |(n, _)| n)))
}

/// `npm outdated|ls|view|why|…`, beyond the strict table: `outdated` (resolving a git
/// dependency runs the project's configured `git`), `audit` without `fix`, `run` alone (lists
/// the scripts), `help`, `version` alone, `pkg get`, `query`.
pub(super) fn npm(args: &[String]) -> bool {
    if !words_are_static(args) || !js_options_are_known(args) {
        return false;
    }
    match args.first().map(String::as_str) {
        Some("outdated" | "help" | "help-search" | "query" | "fund") => true,
        Some("audit") => !args.iter().any(|a| a == "fix" || a == "signatures"),
        Some("run" | "run-script") => args.len() == 1,
        Some("version") => args.len() == 1,
        Some("pkg") => args.get(1).is_some_and(|a| a == "get"),
        _ => false,
    }
}

/// yarn (classic and berry): `list`, `why`, `info`, `outdated`, `licenses list`,
/// `workspaces list|info`, `config` reads, `--version`, `help`. Any yarn command runs the
/// project's `yarnPath` release file: the sandbox is what bounds it.
pub(super) fn yarn(args: &[String]) -> bool {
    if !words_are_static(args) || !js_options_are_known(args) {
        return false;
    }
    let v = verbs(args);
    matches!(
        v.as_slice(),
        ["list" | "why" | "info" | "outdated" | "help", ..]
            | ["npm", "info", ..]
            | ["licenses", "list"]
            | ["workspaces", "list" | "info"]
            | ["config"]
            | ["config", "get" | "list", ..]
    )
}

/// pnpm: `list|ls|ll`, `why`, `outdated`, `view|info|show`, `root`, `audit` without `--fix`,
/// `licenses list`, `config get|list`, `help`.
pub(super) fn pnpm(args: &[String]) -> bool {
    if !words_are_static(args) || !js_options_are_known(args) {
        return false;
    }
    let v = verbs(args);
    match v.as_slice() {
        [
            "list" | "ls" | "ll" | "why" | "outdated" | "view" | "info" | "show" | "root" | "help",
            ..,
        ] => true,
        ["audit", ..] => !args.iter().any(|a| a.starts_with("--fix")),
        ["licenses", "list" | "ls"] => true,
        ["config", "get" | "list", ..] => true,
        _ => false,
    }
}

/// pip beyond the strict table: `config list|get|debug`, `help`, `index versions`,
/// `inspect`, `debug`, `cache dir|info|list`. (`--python`, `--log` stay refused: no other
/// option is allowed.)
pub(super) fn pip(args: &[String]) -> bool {
    if !words_are_static(args) {
        return false;
    }
    let quiet = |rest: &[String]| {
        rest.iter().all(|a| {
            !a.starts_with('-')
                || matches!(
                    a.as_str(),
                    "-v" | "-q"
                        | "--verbose"
                        | "--quiet"
                        | "--user"
                        | "--global"
                        | "--site"
                        | "--json"
                        | "--no-color"
                        | "--disable-pip-version-check"
                )
        })
    };
    match verbs(args).as_slice() {
        ["config", "list" | "get" | "debug", ..]
        | ["help", ..]
        | ["index", "versions", _]
        | ["inspect"]
        | ["debug"]
        | ["cache", "dir" | "info" | "list", ..] => quiet(&args[1..]),
        _ => false,
    }
}

/// uv: `help`, `--version`, `version` (printing only), `tree`, `pip list|show|freeze|tree|
/// check`, `python list|find|dir`, `tool list|dir`, `cache dir`, `self version`. uv runs the
/// project's interpreter to inspect it and may try to update `uv.lock`: the sandbox keeps
/// both from writing. `--python` (any program) and `--config-file` are refused.
pub(super) fn uv(args: &[String]) -> bool {
    if !words_are_static(args)
        || has_any(
            args,
            &[
                "--python",
                "-p",
                "--config-file",
                "--directory",
                "--project",
                "--keyring-provider",
                "--with",
                "--with-requirements",
            ],
        )
    {
        return false;
    }
    match verbs(args).as_slice() {
        ["help", ..] | ["tree"] | ["cache", "dir"] | ["self", "version"] => true,
        ["version"] => args[1..]
            .iter()
            .all(|a| matches!(a.as_str(), "--short" | "--output-format" | "json" | "text")),
        ["pip", "list" | "show" | "freeze" | "tree" | "check", ..] => true,
        ["python", "list" | "find" | "dir", ..] | ["tool", "list" | "dir"] => true,
        _ => false,
    }
}

/// cargo beyond the strict table: `help`, `--list`, `--version`, `search`, `info` (registry
/// reads). `--config` and `-Z` stay refused.
pub(super) fn cargo(args: &[String]) -> bool {
    if !words_are_static(args)
        || args
            .iter()
            .any(|a| a.starts_with("--config") || a.starts_with("-Z"))
    {
        return false;
    }
    matches!(
        verbs(args).as_slice(),
        ["help", ..] | ["search", ..] | ["info", ..] | ["version"]
    ) || matches!(args, [one] if one == "--list" || one == "--version" || one == "-Vv")
}

/// gh beyond the strict table: `search …`, `api` GET requests, and the listing forms of
/// labels, gists, secrets, variables, caches, rulesets and extensions. `gh api` sends a body
/// (and so a POST) with `-f`/`-F`/`--input`; `-X`/`--method` other than GET and `-H` (a
/// method-override header) are refused, as is `graphql` (mutations).
pub(super) fn gh(args: &[String]) -> bool {
    if !words_are_static(args)
        || args
            .iter()
            .any(|a| a == "-w" || long_abbreviates(a, &["web"]))
    {
        return false;
    }
    let v = verbs(args);
    match v.as_slice() {
        [
            "search",
            "issues" | "prs" | "repos" | "code" | "commits",
            ..,
        ] => true,
        [
            "label" | "secret" | "variable" | "cache" | "extension",
            "list",
        ] => true,
        ["gist" | "ruleset", "list" | "view", ..] => true,
        ["status"] | ["help", ..] | ["version"] => true,
        ["api", ..] => gh_api_get(&args[1..]),
        _ => false,
    }
}

fn gh_api_get(args: &[String]) -> bool {
    let mut endpoint: Option<&String> = None;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        match name {
            "-X" | "--method" => {
                let value = match a.split_once('=') {
                    Some((_, v)) => v.to_string(),
                    None => {
                        i += 1;
                        match args.get(i - 1) {
                            Some(v) => v.clone(),
                            None => return false,
                        }
                    }
                };
                if !value.eq_ignore_ascii_case("GET") {
                    return false;
                }
            }
            "-q" | "--jq" | "-t" | "--template" | "--cache" => i += usize::from(!a.contains('=')),
            "--paginate" | "--slurp" | "-i" | "--include" | "--silent" | "--verbose" => {}
            _ if a.starts_with('-') => return false,
            // The endpoint: one, and not `graphql` (a query there may be a mutation).
            // The endpoint: one path, not `graphql` (a query there may be a mutation) and
            // not a URL (the token goes where the request goes).
            _ if endpoint.replace(a).is_some() || a == "graphql" || a.contains("//") => {
                return false;
            }
            _ => {}
        }
    }
    endpoint.is_some()
}

/// kubectl beyond the strict table: `auth can-i|whoami`, `rollout status|history`, `events`,
/// `config get-users`, `plugin list`, `help`. Refused everywhere: `--kubeconfig` (a config
/// can name an `exec` credential plugin), `-s`/`--server` and `--token` (send this context's
/// credentials to another server).
pub(super) fn kubectl(args: &[String]) -> bool {
    if !words_are_static(args)
        || has_any(args, &["--kubeconfig", "--server", "-s", "--token"])
        || args
            .iter()
            .any(|a| a.starts_with("-s") && !a.starts_with("--"))
    {
        return false;
    }
    matches!(
        verbs(args).as_slice(),
        ["auth", "can-i" | "whoami", ..]
            | ["rollout", "status" | "history", ..]
            | ["events", ..]
            | ["config", "get-users"]
            | ["plugin", "list"]
            | ["help", ..]
    )
}

/// docker beyond the strict table: `compose ps|ls|config|images|logs|top|version`,
/// `system df|info`, `search`, `manifest inspect`, `context show`, `help`. The verb must come
/// first: `-H`/`--host`/`--context`/`--config` before it are refused.
pub(super) fn docker(args: &[String]) -> bool {
    if !words_are_static(args) {
        return false;
    }
    match verbs(args).as_slice() {
        [
            "compose",
            "ps" | "ls" | "config" | "images" | "logs" | "top" | "version",
            ..,
        ] => !has_any(args, &["-f", "--file", "--env-file", "--project-directory"]),
        ["system", "df" | "info"]
        | ["search", ..]
        | ["manifest", "inspect", ..]
        | ["context", "show"]
        | ["help", ..] => true,
        _ => false,
    }
}

/// aws: `aws SERVICE describe-*|list-*|get-*` and `aws s3 ls`, `sts get-caller-identity`,
/// `configure list|get`, `help`. Refused: operations that write a local file
/// (`get-object`, `get-job-output`, …: bounded by the sandbox, but never useful), options
/// that send requests elsewhere (`--endpoint-url`) or read the input from a file of the
/// model's choosing (`--cli-input-*`).
pub(super) fn aws(args: &[String]) -> bool {
    const WRITES_OUTFILE: &[&str] = &[
        "get-object",
        "get-object-torrent",
        "get-job-output",
        "get-export",
        "get-sdk",
        "get-media",
        "get-clip",
        "get-media-for-fragment-list",
        // Creates an identity in the pool.
        "get-id",
    ];
    const GLOBAL_VALUED: &[&str] = &["--region", "--profile", "--output", "--query", "--color"];
    if !words_are_static(args)
        || has_any(
            args,
            &["--endpoint-url", "--cli-input-json", "--cli-input-yaml"],
        )
    {
        return false;
    }
    // Global options may come first.
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if GLOBAL_VALUED.contains(&a.as_str()) {
            i += 2;
        } else if GLOBAL_VALUED
            .iter()
            .any(|g| a.starts_with(&format!("{g}=")))
            || matches!(a.as_str(), "--no-cli-pager" | "--no-paginate" | "--debug")
        {
            i += 1;
        } else {
            break;
        }
    }
    let rest = args.get(i..).unwrap_or(&[]);
    let v = verbs(rest);
    match v.as_slice() {
        ["help"] | [_, "help"] | [_, _, "help"] => true,
        ["s3", "ls", ..] => true,
        ["configure", "list" | "get", ..] => true,
        [_, op, ..] => {
            (op.starts_with("describe-") || op.starts_with("list-") || op.starts_with("get-"))
                && !WRITES_OUTFILE.contains(op)
                // Everything after the operation is an option and its value, as aws takes
                // them: a second word without a dash where a value cannot be is an outfile.
                && v.len() == 2
        }
        _ => false,
    }
}

/// gcloud: `gcloud GROUP… list|describe|get-iam-policy|get-value`, `config list`,
/// `auth list`, `info`, `version`, `help`, `logging read`. The groups come from a table so
/// that a command's operand cannot pose as the verb (`gcloud compute ssh list` connects to a
/// machine named `list`).
pub(super) fn gcloud(args: &[String]) -> bool {
    const GROUPS: &[&str] = &[
        "alpha",
        "beta",
        "compute",
        "instances",
        "zones",
        "regions",
        "projects",
        "container",
        "clusters",
        "node-pools",
        "iam",
        "service-accounts",
        "roles",
        "storage",
        "buckets",
        "objects",
        "sql",
        "run",
        "services",
        "revisions",
        "jobs",
        "functions",
        "app",
        "versions",
        "config",
        "configurations",
        "auth",
        "organizations",
        "billing",
        "accounts",
        "dns",
        "managed-zones",
        "record-sets",
        "logging",
        "logs",
        "secrets",
        "kms",
        "keyrings",
        "keys",
        "pubsub",
        "topics",
        "subscriptions",
        "artifacts",
        "repositories",
        "docker",
        "images",
        "builds",
        "networks",
        "subnets",
        "firewall-rules",
        "addresses",
        "disks",
        "snapshots",
        "machine-types",
        "operations",
        "components",
        "scheduler",
        "tasks",
        "queues",
        "firestore",
        "databases",
        "redis",
        "spanner",
        "bigtable",
        "dataproc",
        "composer",
        "environments",
        "endpoints",
        "source",
        "deployment-manager",
        "deployments",
        "resource-manager",
        "folders",
        "workflows",
        "tags",
    ];
    const READ: &[&str] = &["list", "describe", "get-iam-policy", "get-value"];
    if !words_are_static(args) || has_any(args, &["--impersonate-service-account"]) {
        return false;
    }
    let v = verbs(args);
    match v.as_slice() {
        ["info"] | ["version"] | ["help", ..] => true,
        ["logging", "read", ..] => v.len() <= 3,
        ["auth", "list"] | ["config", "list"] => true,
        _ => {
            let Some(k) = v.iter().position(|w| READ.contains(w)) else {
                return false;
            };
            // `docker` is a group only below `artifacts`: `gcloud docker …` runs docker.
            k > 0
                && v[0] != "docker"
                && v[..k].iter().all(|g| GROUPS.contains(g))
                // `describe NAME`, `get-value PROPERTY`: one operand at most.
                && v.len() <= k + 2
        }
    }
}

/// helm: `list|ls`, `status`, `history`, `get …`, `show …`, `version`, `env`, `search`,
/// `repo list`, `plugin list`, `dependency list`, `help`. Refused: `--kubeconfig`,
/// `--kube-apiserver`, `--kube-token`, `--post-renderer`; unknown verbs run plugins.
pub(super) fn helm(args: &[String]) -> bool {
    if !words_are_static(args)
        || has_any(
            args,
            &[
                "--kubeconfig",
                "--kube-apiserver",
                "--kube-token",
                "--post-renderer",
            ],
        )
    {
        return false;
    }
    matches!(
        verbs(args).as_slice(),
        [
            "list" | "ls" | "status" | "history" | "get" | "show" | "inspect" | "search" | "help",
            ..
        ] | ["version"]
            | ["env"]
            | ["repo" | "plugin" | "dependency" | "dep", "list" | "ls", ..]
    )
}

/// terraform: `show`, `version`, `output`, `providers`, `state list|show`,
/// `workspace list|show`, `fmt -check`, `help`. Not `plan`: it runs `external` data sources
/// (any program) and takes the state lock in the remote backend; not `validate`, `console`,
/// `graph`, `refresh`, and nothing that applies.
pub(super) fn terraform(args: &[String]) -> bool {
    if !words_are_static(args) {
        return false;
    }
    let mut rest = args;
    if rest.first().is_some_and(|a| a.starts_with("-chdir=")) {
        rest = &rest[1..];
    }
    let v = verbs(rest);
    match v.as_slice() {
        // Not `providers lock|mirror|schema`: they download, write or run providers.
        ["show" | "output", ..] | ["providers"] => true,
        ["version"] | ["help", ..] => true,
        ["state", "list" | "show", ..] | ["workspace", "list" | "show"] => true,
        ["fmt", ..] => {
            rest.iter().any(|a| a == "-check" || a == "--check")
                && !rest
                    .iter()
                    .any(|a| a.starts_with("-write") && a != "-write=false")
        }
        _ => false,
    }
}

/// openssl beyond the strict table: `list -…` (the algorithm and command lists), `help`,
/// `SUB -help`. `-provider`, `-provider-path` and `-engine` load code and are refused.
pub(super) fn openssl(args: &[String]) -> bool {
    const LIST: &[&str] = &[
        "-1",
        "-commands",
        "-standard-commands",
        "-digest-commands",
        "-digest-algorithms",
        "-kdf-algorithms",
        "-random-instances",
        "-random-generators",
        "-mac-algorithms",
        "-cipher-commands",
        "-cipher-algorithms",
        "-encoders",
        "-decoders",
        "-key-managers",
        "-key-exchange-algorithms",
        "-kem-algorithms",
        "-signature-algorithms",
        "-asymcipher-algorithms",
        "-public-key-algorithms",
        "-public-key-methods",
        "-store-loaders",
        "-providers",
        "-engines",
        "-disabled",
        "-objects",
        "-options",
        "-all-algorithms",
        "-verbose",
    ];
    if !words_are_static(args) {
        return false;
    }
    match args.first().map(String::as_str) {
        Some("list") => args[1..].iter().all(|a| LIST.contains(&a.as_str())),
        Some("help") => args.len() <= 2,
        Some(sub) => {
            args.len() == 2
                && args[1] == "-help"
                && sub.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// `man [SECTION] NAME…`, `man -k WORD`, `man -f NAME`: formatted to the pipe (man pages
/// only when writing to a terminal). Refused: `-P`/`--pager`, `-H`/`--html` (a browser),
/// `-l` and names with a `/` (format a local file), `-C` (a configuration), `-T`, `-Z`.
pub(super) fn man(args: &[String]) -> bool {
    words_are_static(args)
        && !args.is_empty()
        && args.iter().all(|a| {
            matches!(a.as_str(), "-k" | "-f" | "-w" | "-a")
                || (!a.starts_with('-') && !a.contains('/') && !a.is_empty())
        })
}

/// go: `version`, `env` (printing; `-w`/`-u` write the go env file), `list`, `doc`, `help`.
/// `go list` loads packages and may download modules (into caches the sandbox bounds); build
/// flags that run programs (`-toolexec`, `-exec`, `-overlay`, `-modfile`) are refused.
pub(super) fn go(args: &[String]) -> bool {
    if !words_are_static(args)
        || args.iter().any(|a| {
            let a = a.trim_start_matches('-');
            ["toolexec", "exec", "overlay", "modfile", "w", "u"]
                .iter()
                .any(|r| a == *r || a.starts_with(&format!("{r}=")))
        })
    {
        return false;
    }
    matches!(
        verbs(args).as_slice(),
        ["version", ..] | ["env", ..] | ["list", ..] | ["doc", ..] | ["help", ..]
    ) && !args.iter().any(|a| a == "-w" || a == "-u")
}

/// az (Azure CLI): `az GROUP… list|show`, `az version`, `az account show`. az takes its
/// arguments as options, so the last subcommand word is the verb.
pub(super) fn az(args: &[String]) -> bool {
    if !words_are_static(args) {
        return false;
    }
    let v = verbs(args);
    match v.as_slice() {
        ["version"] => true,
        [groups @ .., verb] if !groups.is_empty() && groups.len() <= 3 => {
            matches!(*verb, "list" | "show")
                && groups
                    .iter()
                    .all(|g| g.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
                && !groups
                    .iter()
                    .any(|g| matches!(*g, "find" | "interactive" | "rest"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn gh_api_only_gets() {
        assert!(gh(&v("api repos/o/r/pulls")));
        assert!(gh(&v("api repos/o/r/pulls --paginate --jq .[].title")));
        assert!(gh(&v("api -X GET repos/o/r")));
        assert!(!gh(&v("api -X DELETE repos/o/r")));
        assert!(!gh(&v("api --method=POST repos/o/r/issues")));
        assert!(!gh(&v("api repos/o/r/issues -f title=x")));
        assert!(!gh(&v("api repos/o/r/issues -F title=x")));
        assert!(!gh(&v("api repos/o/r --input body.json")));
        assert!(!gh(&v("api repos/o/r -H X-HTTP-Method-Override:DELETE")));
        assert!(!gh(&v("api graphql -f query=x")));
        assert!(!gh(&v("api https://evil.example/x")));
        assert!(!gh(&v("api")));
    }

    #[test]
    fn aws_reads_only() {
        assert!(aws(&v("ec2 describe-instances --region us-east-1")));
        assert!(aws(&v("--profile p s3api list-buckets")));
        assert!(aws(&v("sts get-caller-identity")));
        assert!(aws(&v("s3 ls s3://bucket")));
        assert!(!aws(&v("s3api get-object --bucket b --key k out")));
        assert!(!aws(&v("s3 rm s3://b/k")));
        assert!(!aws(&v("s3 cp a s3://b/")));
        assert!(!aws(&v("ec2 terminate-instances --instance-ids i-1")));
        assert!(!aws(&v(
            "ec2 describe-instances --endpoint-url http://evil"
        )));
        assert!(!aws(&v("lambda invoke --function-name f out")));
    }

    #[test]
    fn gcloud_verbs_after_known_groups() {
        assert!(gcloud(&v("compute instances list")));
        assert!(gcloud(&v("projects describe my-proj")));
        assert!(gcloud(&v("config get-value project")));
        assert!(!gcloud(&v("compute ssh list")));
        assert!(!gcloud(&v("compute instances delete x")));
        assert!(!gcloud(&v("list")));
        assert!(!gcloud(&v("docker list")));
        assert!(gcloud(&v("artifacts docker images list")));
    }
}
