//! Plan mode's sandboxed read-only list (docs/planning.md), one test per table row: the
//! forms the row allows when the command runs under the read-only OS sandbox, and beside
//! them the effectful forms it keeps refusing — under the sandbox and under the strict list
//! alike. Attack forms first: each row's refusals were written before its allowances.

use std::path::Path;
use yuyao_policy::readonly::{self, Trust};
use yuyao_policy::{Action, Policy, Verdict, segments};
use yuyao_protocol::{Mode, Role};

fn judged(cmd: &str, trust: Trust) -> bool {
    segments(cmd)
        .map(|s| {
            s.iter()
                .all(|s| readonly::segment_is_read_only_under(s, trust))
        })
        .unwrap_or(false)
}

fn check(allow: &[&str], refuse: &[&str]) {
    let wrong: Vec<&&str> = refuse
        .iter()
        .filter(|c| judged(c, Trust::Sandboxed) || judged(c, Trust::Strict))
        .collect();
    assert!(
        wrong.is_empty(),
        "effectful forms judged read-only: {wrong:#?}"
    );
    let wrong: Vec<&&str> = allow
        .iter()
        .filter(|c| !judged(c, Trust::Sandboxed))
        .collect();
    assert!(
        wrong.is_empty(),
        "read-only forms refused under the sandbox: {wrong:#?}"
    );
}

macro_rules! rows {
    ($($name:ident: refuse [$($r:expr),* $(,)?] allow [$($a:expr),* $(,)?];)*) => {
        $(
            #[test]
            fn $name() {
                check(&[$($a),*], &[$($r),*]);
            }
        )*
    };
}

rows! {
    awk_prints_only:
        refuse [
            "awk 'BEGIN{system(\"rm x\")}'",
            "awk '{system($0)}' f",
            "awk '{print | \"sh\"}' f",
            "awk 'BEGIN{\"date\" | getline d; print d}'",
            "awk '{print > \"out\"}' f",
            "awk '{print >> \"out\"}' f",
            "awk '{printf \"%s\", $0 > \"out\"}' f",
            "awk -f prog.awk f",
            "awk --file=prog.awk f",
            "gawk -e '{print}' f",
            "gawk -i inplace '{print}' f",
            "gawk -l filefuncs '{print}' f",
            "gawk '@load \"filefuncs\"; {print}' f",
            "gawk 'BEGIN{f=\"system\"; @f(\"rm x\")}'",
            "gawk 'BEGIN{getline < \"/inet/tcp/0/example.com/80\"}'",
            "gawk -d '{print}' f",
            "gawk --profile '{print}' f",
            "awk \"$PROG\" f",
            "awk '{print}' -f evil.awk",
            "awk '{print}' f > out",
        ]
        allow [
            "awk '{print $1}' file",
            "awk -F: '{print $1}' /etc/passwd",
            "awk -F , -v n=2 '{print $n}' data.csv",
            "awk '$3 > 10' f",
            "awk '/foo|bar/ {n++} END {print n}' f",
            "awk 'NR==1 || /x/' f",
            "awk '{s += $2} END {printf \"%d\\n\", s}' f",
            "awk '{print ($1 > $2)}' f",
            "awk 'length($0) > 80' *.py",
            "gawk '{a[$1]++} END {for (k in a) print k, a[k]}' f",
            "mawk '{print NF}' f",
            "ls -l | awk '{print $5}'",
        ];

    command_substitution_of_read_only_commands:
        refuse [
            "echo $(rm x)",
            "ls $(touch x)",
            "cat \"$(sed -i s/a/b/ f)\"",
            "echo `rm -rf x`",
            "cat <(rm x)",
            "X=$(rm x) ls",
            "git log $(echo --output=x)",
            "sort $(echo -o) f",
            "rg $(echo --pre=sh) x",
            "echo $(ls) > out",
            "$(echo rm) x",
        ]
        allow [
            "ls $(pwd)",
            "echo $(whoami)",
            "cat $(ls *.txt)",
            "echo \"$(git status --short)\"",
            "echo `date`",
            "diff <(ls a) <(ls b)",
            "wc -l $(git ls-files '*.py')",
            "echo \"branch: $(git rev-parse --abbrev-ref HEAD)\"",
            "grep -n foo $(find . -name '*.rs')",
        ];

    help_and_version:
        refuse [
            "rm -rf x --help",
            "rm --help x",
            "docker run img --help",
            "uv run tool --help",
            "npm run build --help",
            "git commit --help",
            "git help commit",
            "kill --help",
            "shutdown --help",
            "shutdown -h now",
            "bash -h",
            "tar -h",
            "less --help",
            "./script --help",
            "bin/tool --version",
            "cargo --config x help",
            "npm --help > out",
        ]
        allow [
            "ruff --help",
            "rm --help",
            "docker --version",
            "vim --version",
            "uv help",
            "uv help pip",
            "cargo help build",
            "cargo build --help",
            "kubectl get --help",
            "kubectl rollout status --help",
            "gh pr --help",
            "helm install --help",
            "docker container run --help",
            "docker compose up --help",
            "npm install --help",
            "pip install --help",
            "terraform plan --help",
            "gcloud compute instances create --help",
            "aws help",
            "aws ec2 help",
            "aws s3 cp help",
            "rg -h",
            "fd -h",
            "poetry add --help",
            "go help build",
            "git --help",
            "yarn --help",
            "pnpm help",
        ];

    env_assignments:
        refuse [
            "env rm x",
            "env FOO=bar rm x",
            "env LD_PRELOAD=./x.so ls",
            "env PATH=. ls",
            "env BASH_ENV=x ls",
            "env POSIXLY_CORRECT=1 uniq in -c",
            "env GIT_PAGER=sh git log",
            "env HOME=. git status",
            "env RIPGREP_CONFIG_PATH=./rc rg foo",
            "env LESSOPEN='|x %s' cat f",
            "env PYTHONPATH=. lsb_release -a",
            "env GCONV_PATH=. grep x f",
            "env NODE_OPTIONS=--require=./x npm ls",
            "env KUBECONFIG=./k kubectl get pods",
            "env DOCKER_HOST=ssh://x docker ps",
            "env EDITOR=./x ls",
            "FOO=bar git status",
            "env -S 'rm x'",
            "RUSTC_WRAPPER=./x find . -maxdepth 0 -exec cargo tree \\;",
            "RUSTC_WRAPPER=./x bash -c 'cargo tree'",
            "RUSTC_WRAPPER=./x timeout 5 cargo tree",
        ]
        allow [
            "env FOO=bar ls",
            "FOO=1 ls",
            "env DEBUG=1 CI=true cat f",
            "env -i ls",
            "LC_ALL=C sort f",
            "TZ=UTC date",
            "NO_COLOR=1 git status",
            "env TERM=dumb grep -r x .",
        ];

    sort_temporary_directory:
        refuse [
            "sort -o f x",
            "sort -T /tmp -o f x",
            "sort --output=f x",
            "sort -uo f x",
            "sort --compress-program=./x -T /tmp f",
        ]
        allow [
            "sort -T /tmp file",
            "sort -T/tmp -k2 file",
            "sort --temporary-directory=/tmp -u file",
        ];

    find_bsd_options:
        refuse [
            "find -x . -delete",
            "find -x . -exec rm {} \\;",
            "find -x . -fprint out",
            "find -E . -ok rm {} \\;",
        ]
        allow [
            "find -x . -name '*.py'",
            "find -E . -regex '.*\\.(rs|py)'",
            "find -s . -type f",
            "find . -name '*.rs' -exec grep -l foo {} +",
        ];

    xargs_wraps_read_only_commands:
        refuse [
            "ls | xargs rm",
            "find . | xargs rm -f",
            "xargs rg -l p",
            "xargs sed -n p",
            "xargs sort",
            "ls | xargs -I{} sh -c 'rm {}'",
            "git ls-files | xargs sed -i s/a/b/",
        ]
        allow [
            "git ls-files | xargs wc -l",
            "find . -name '*.py' | xargs grep -l import",
            "xargs rg -l p --",
            "ls | xargs -n1 basename",
            "git ls-files -z | xargs -0 cat",
        ];

    wrappers_that_act_on_their_own:
        refuse [
            "strace -o out ls",
            "script -q out -c ls",
            "valgrind --log-file=x ls",
            "flock /tmp/lock ls",
            "ssh host ls",
            "systemd-run --user ls",
            "watch ls",
            "sudo cat /etc/shadow",
            "parallel cat ::: a b",
            "unshare -r ls",
            "env time -o out ls",
        ]
        allow [
            "timeout 5 ls",
            "nice -n 10 grep -r x .",
            "time ls",
            "stdbuf -oL cat f",
            "command ls",
            "bash -c 'ls -la'",
            "sh -c 'git status && cat f'",
        ];

    interactive_programs:
        refuse [
            "less f",
            "more f",
            "vim f",
            "nano f",
            "fzf",
            "git ls-files | fzf",
            "top",
            "htop",
            "tmux",
            "tig",
            "less --help",
        ]
        allow [
            "top -b -n 1",
            "vim --version",
            "fzf --version",
            "htop --help",
        ];

    git_reading_forms:
        refuse [
            "git branch -D x",
            "git branch --remote -D x",
            "git branch -m a b",
            "git remote add o url",
            "git remote remove o",
            "git remote show -v --upload-pack=x o",
            "git remote show ext::sh",
            "git remote show git@evil:x",
            "git -c core.pager=sh log",
            "git push",
            "git fetch",
        ]
        allow [
            "git branch --remote",
            "git branch --remote -v",
            "git remote show origin",
            "git remote show -n origin",
            "git branch -a",
            "git log --oneline -5",
        ];

    npm_reading_verbs:
        refuse [
            "npm install",
            "npm i lodash",
            "npm ci",
            "npm run build",
            "npm exec x",
            "npm audit fix",
            "npm version patch",
            "npm publish",
            "npm uninstall x",
            "npm update",
            "npm pkg set x=y",
            "npm ls --git=./x",
            "npm doctor",
            "npm outdated --git=./x",
            "npm help install --viewer=browser --browser=./x",
            "npm audit --script-shell=./x",
            "npm outdated --userconfig ./rc",
        ]
        allow [
            "npm outdated",
            "npm ls",
            "npm view react version",
            "npm why lodash",
            "npm audit",
            "npm audit --json",
            "npm run",
            "npm help install",
            "npm version",
            "npm pkg get name",
            "npm config list",
        ];

    yarn_reading_verbs:
        refuse ["yarn", "yarn install", "yarn add x", "yarn remove x", "yarn build", "yarn upgrade", "yarn config set x y", "yarn dlx x", "yarn list --use-yarnrc ./rc", "yarn --cwd x list"]
        allow ["yarn list", "yarn why lodash", "yarn info react", "yarn outdated", "yarn --version", "yarn workspaces list", "yarn config get registry", "yarn licenses list"];

    pnpm_reading_verbs:
        refuse ["pnpm install", "pnpm add x", "pnpm build", "pnpm exec x", "pnpm dlx x", "pnpm audit --fix", "pnpm config set x y", "pnpm update", "pnpm list --config.git=./x"]
        allow ["pnpm list", "pnpm ls --depth 0", "pnpm why lodash", "pnpm outdated", "pnpm view react", "pnpm audit", "pnpm config get registry", "pnpm licenses list"];

    pip_reading_verbs:
        refuse ["pip install x", "pip uninstall -y x", "pip config set a b", "pip cache purge", "pip download x", "pip list --python ./x", "pip wheel .", "pip config list --log out"]
        allow ["pip list", "pip show requests", "pip freeze", "pip config list", "pip config get global.index-url", "pip help install", "pip index versions requests", "pip inspect", "pip cache dir", "pip3 list --outdated"];

    uv_reading_verbs:
        refuse ["uv sync", "uv add x", "uv run x", "uv pip install x", "uv lock", "uv tool install x", "uv version 1.2.3", "uv tree --python ./x", "uv python install 3.12", "uv cache clean"]
        allow ["uv help", "uv --version", "uv version", "uv version --short", "uv tree", "uv pip list", "uv pip show x", "uv pip freeze", "uv python list", "uv tool list", "uv cache dir"];

    cargo_reading_verbs:
        refuse ["cargo build", "cargo run", "cargo install x", "cargo add x", "cargo publish", "cargo fmt", "cargo update", "cargo --config x tree", "cargo -Zunstable-options tree", "cargo clean"]
        allow ["cargo help", "cargo help build", "cargo tree", "cargo metadata --format-version 1", "cargo --list", "cargo search serde", "cargo info serde", "cargo --version", "cargo fmt --check"];

    gh_reading_verbs:
        refuse ["gh pr merge 1", "gh pr create", "gh pr close 1", "gh issue create", "gh issue close 1", "gh repo delete x", "gh pr view 1 --web", "gh api -X DELETE repos/o/r", "gh api repos/o/r/issues -f title=x", "gh api graphql -f query=x", "gh release create v1", "gh workflow run x", "gh secret set X"]
        allow ["gh pr list", "gh pr view 12", "gh pr diff 12", "gh pr checks 12", "gh issue list", "gh issue view 3", "gh run list", "gh search issues crash", "gh api repos/o/r/pulls", "gh label list", "gh status", "gh secret list"];

    kubectl_reading_verbs:
        refuse ["kubectl delete pod x", "kubectl apply -f x.yaml", "kubectl exec -it x -- sh", "kubectl edit deploy x", "kubectl scale deploy x --replicas 0", "kubectl rollout restart deploy x", "kubectl get pods --kubeconfig ./k", "kubectl get pods --server https://evil", "kubectl get pods -s https://evil", "kubectl port-forward x 80", "kubectl cp x:/a b", "kubectl my-plugin"]
        allow ["kubectl get pods -A", "kubectl describe pod x", "kubectl logs x", "kubectl get deploy -o yaml", "kubectl auth can-i list pods", "kubectl rollout status deploy x", "kubectl events", "kubectl config get-contexts", "kubectl top pods"];

    docker_reading_verbs:
        refuse ["docker rm x", "docker rmi x", "docker run img", "docker exec x ls", "docker build .", "docker pull x", "docker push x", "docker system prune", "docker compose up", "docker compose down", "docker -H ssh://evil ps", "docker --context x ps", "docker container rm x", "docker image prune", "docker compose -f x.yml ps", "docker kill x"]
        allow ["docker ps", "docker ps -a", "docker images", "docker inspect x", "docker logs x", "docker image ls", "docker compose ps", "docker compose config", "docker system df", "docker manifest inspect x", "docker context show"];

    aws_reading_verbs:
        refuse ["aws s3 rm s3://b/k", "aws s3 cp a s3://b/", "aws s3 sync . s3://b", "aws ec2 terminate-instances --instance-ids i-1", "aws ec2 run-instances", "aws lambda invoke --function-name f out", "aws s3api get-object --bucket b --key k out", "aws s3api put-object --bucket b --key k", "aws ec2 describe-instances --endpoint-url http://evil", "aws iam create-user --user-name x", "aws cognito-identity get-id --identity-pool-id p", "aws configure set region x"]
        allow ["aws ec2 describe-instances", "aws --region us-east-1 ec2 describe-vpcs", "aws s3 ls", "aws s3 ls s3://bucket", "aws s3api list-buckets", "aws sts get-caller-identity", "aws iam list-users --output table", "aws configure list", "aws logs get-log-events --log-group-name g --log-stream-name s"];

    gcloud_reading_verbs:
        refuse ["gcloud compute instances delete x", "gcloud compute instances create x", "gcloud compute ssh list", "gcloud config set project x", "gcloud container clusters get-credentials c", "gcloud docker list", "gcloud run deploy x", "gcloud projects delete p"]
        allow ["gcloud compute instances list", "gcloud projects list", "gcloud projects describe p", "gcloud config list", "gcloud config get-value project", "gcloud auth list", "gcloud container clusters describe c --zone z", "gcloud run services list", "gcloud info"];

    helm_reading_verbs:
        refuse ["helm install x c", "helm upgrade x c", "helm uninstall x", "helm rollback x 1", "helm repo add x url", "helm template x c --post-renderer ./x", "helm list --kubeconfig ./k", "helm my-plugin"]
        allow ["helm list", "helm ls -A", "helm status x", "helm history x", "helm get values x", "helm show values c", "helm version", "helm repo list", "helm search repo nginx"];

    terraform_reading_verbs:
        refuse ["terraform apply", "terraform plan", "terraform destroy", "terraform init", "terraform import a b", "terraform state rm x", "terraform fmt", "terraform console", "terraform refresh", "terraform workspace new x", "terraform providers lock", "terraform providers mirror d"]
        allow ["terraform show", "terraform show -json plan.out", "terraform version", "terraform output", "terraform state list", "terraform state show aws_instance.x", "terraform workspace list", "terraform fmt -check", "terraform -chdir=infra show"];

    sqlite3_read_only_database:
        refuse ["sqlite3 db", "sqlite3 db 'delete from t'", "sqlite3 -readonly db", "echo '.shell rm x' | sqlite3 -readonly db", "sqlite3 -readonly db \".shell rm x\"", "sqlite3 -readonly db \"select load_extension('x')\"", "sqlite3 -readonly -cmd '.shell x' db 'select 1'", "sqlite3 -safe db"]
        allow ["sqlite3 -readonly db 'select * from t'", "sqlite3 -readonly -safe db", "echo 'select 1;' | sqlite3 -readonly -safe db", "sqlite3 -readonly -json db 'select count(*) from t'"];

    openssl_listing:
        refuse ["openssl list -provider x", "openssl list -provider-path . -providers", "openssl genrsa -out k.pem", "openssl req -new -out r.csr", "openssl enc -d -in a -out b", "openssl x509 -in c.pem -out d.pem"]
        allow ["openssl version", "openssl list", "openssl list -digest-commands", "openssl list -cipher-algorithms", "openssl help", "openssl x509 -help", "openssl x509 -in c.pem -noout -text"];

    go_reading_verbs:
        refuse ["go build", "go run .", "go test ./...", "go env -w GOFLAGS=x", "go list -toolexec ./x ./...", "go mod tidy", "go get x", "go generate"]
        allow ["go version", "go env GOPATH", "go list ./...", "go doc fmt.Println", "go help build"];

    az_reading_verbs:
        refuse ["az vm delete -n x", "az group create -n x", "az vm run-command invoke", "az rest --method post --url x", "az find list", "az login"]
        allow ["az account show", "az vm list", "az group list -o table", "az version", "az storage account show -n x"];

    man_pages:
        refuse ["man -P sh ls", "man --pager=sh ls", "man -l ./evil.1", "man ./evil.1", "man -H ls", "man -C ./conf ls", "man $X"]
        allow ["man ls", "man 5 crontab", "man -k socket", "man -f printf"];
}

/// Plan mode decides by the sandboxed list where the kernel enforces the read-only sandbox,
/// and says why an interactive program or a wrapper is refused.
#[test]
fn plan_mode_decides_and_explains() {
    let p = Policy::new(Mode::Plan, Role::Execute, Path::new("/work/project"));
    let bash = |c: &str| Action {
        tool: "bash".into(),
        command: Some(c.into()),
        paths: vec![],
    };
    let d = p.decide(&bash("less README.md"));
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(d.reason.contains("interactive"), "{}", d.reason);
    let d = p.decide(&bash("watch git status"));
    assert!(d.reason.contains("`watch` repeats"), "{}", d.reason);
    if p.shell_trust() == Trust::Sandboxed {
        assert_eq!(
            p.decide(&bash("awk '{print $1}' f")).verdict,
            Verdict::Allow
        );
        assert!(!p.is_mutating(&bash("ls $(pwd)")));
        let d = p.decide(&bash("xargs rg -l p"));
        assert!(d.reason.contains("put `--`"), "{}", d.reason);
    }
    // Outside a read-only session a read-only judgement lets a command run with write
    // access: the strict list alone.
    let default = Policy::new(Mode::Ask, Role::Execute, Path::new("/work/project"));
    assert_eq!(default.shell_trust(), Trust::Strict);
    assert!(default.is_mutating(&bash("awk '{print $1}' f")));
    assert!(default.is_mutating(&bash("ls $(pwd)")));
}
