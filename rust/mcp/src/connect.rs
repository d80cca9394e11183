//! Opening a connection: the transport from the configuration entry, the MCP handshake, and
//! the server's tool list.

use crate::{Client, TOOL_PREFIX, ToolInfo, schema::sanitize_schema};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::path::Path;
use tokio::io::AsyncRead;
use tokio::net::unix::pipe;
use yuyao_policy::sandbox::{self, Confinement, Launch};
use yuyao_store::McpServer;

/// The agent's own model credential: never handed to a server.
use yuyao_protocol::MODEL_KEY_VAR;

pub(crate) async fn connect(
    name: &str,
    cfg: &McpServer,
    project: &Path,
    confinement: &Confinement,
) -> Result<(Client, Vec<ToolInfo>), String> {
    let client = if let Some(url) = &cfg.url {
        http(cfg, url).await?
    } else {
        stdio(cfg, project, confinement).await?
    };
    let tools = client
        .peer()
        .list_all_tools()
        .await
        .map_err(|e| format!("listing its tools failed: {e}"))?;
    let tools = tools
        .into_iter()
        .map(|t| {
            let schema = sanitize_schema(&serde_json::Value::Object((*t.input_schema).clone()));
            ToolInfo {
                server: name.to_string(),
                full_name: full_tool_name(name, &t.name),
                name: t.name.to_string(),
                description: t
                    .description
                    .as_deref()
                    .map(str::to_string)
                    .or(t.title.clone())
                    .unwrap_or_default(),
                schema,
                read_only: t.annotations.and_then(|a| a.read_only_hint) == Some(true),
            }
        })
        .collect();
    Ok((client, tools))
}

/// Starts a stdio server through the sandbox spawner (the one spawn path: namespaces,
/// Landlock, seccomp, no capabilities, no model key, death with yuyao) and speaks MCP over
/// its stdin and stdout. Its stderr goes to /dev/null.
async fn stdio(
    cfg: &McpServer,
    project: &Path,
    confinement: &Confinement,
) -> Result<Client, String> {
    let argv = cfg.argv();
    let program = argv.first().ok_or("no command configured")?;
    let prepared = sandbox::prepare(confinement)?;
    let pipe_err = |e: std::io::Error| format!("cannot start '{program}': {e}");
    let (in_r, in_w) = std::io::pipe().map_err(pipe_err)?;
    let (out_r, out_w) = std::io::pipe().map_err(pipe_err)?;
    let null = std::fs::File::options()
        .write(true)
        .open("/dev/null")
        .map_err(pipe_err)?;
    let mut launch = Launch::new(
        program,
        &[],
        cfg.cwd.as_deref().map(Path::new).unwrap_or(project),
    );
    launch.args = argv[1..].iter().map(Into::into).collect();
    launch.env = cfg
        .env
        .iter()
        .filter(|(k, _)| k.as_str() != MODEL_KEY_VAR)
        .map(|(k, v)| (k.into(), Some(v.into())))
        .collect();
    launch.stdin = Some(in_r.into());
    launch.stdout = Some(out_w.into());
    launch.stderr = Some(null.into());
    // Its own process group: closing the connection kills whatever the server started.
    launch.process_group = true;
    let child =
        sandbox::spawn(launch, prepared).map_err(|e| format!("cannot start '{program}': {e}"))?;
    let guard = ChildGuard(Some(child));
    let rx = pipe::Receiver::from_owned_fd(out_r.into()).map_err(pipe_err)?;
    let tx = pipe::Sender::from_owned_fd(in_w.into()).map_err(pipe_err)?;
    ().serve((ServerOutput { rx, _child: guard }, tx))
        .await
        .map_err(|e| format!("the MCP handshake failed: {e}"))
}

/// The server's process: killed with its process group when the connection's transport is
/// dropped (the session closes, the server is removed or restarted).
struct ChildGuard(Option<std::process::Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            // SAFETY: the server leads its own process group.
            unsafe { libc::killpg(child.id() as i32, libc::SIGKILL) };
            // Reaped off the runtime's threads.
            std::thread::spawn(move || child.wait());
        }
    }
}

/// The server's stdout, owning its process (so the process lives as long as the transport).
struct ServerOutput {
    rx: pipe::Receiver,
    _child: ChildGuard,
}

impl AsyncRead for ServerOutput {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().rx).poll_read(cx, buf)
    }
}

async fn http(cfg: &McpServer, url: &str) -> Result<Client, String> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (k, v) in &cfg.headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|e| format!("invalid header name '{k}': {e}"))?;
        let value = reqwest::header::HeaderValue::from_str(v)
            .map_err(|e| format!("invalid value of header '{k}': {e}"))?;
        headers.insert(name, value);
    }
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(var) = &cfg.bearer_token_env_var {
        // The model's credential is yuyao's own, never a server's token: a planted entry
        // naming it would send the key to the URL it names.
        if var.trim() == yuyao_protocol::MODEL_KEY_VAR {
            return Err(format!(
                "bearerTokenEnvVar names {var}, the model's key: refused (it is never sent to an MCP server)"
            ));
        }
        let token = std::env::var(var)
            .map_err(|_| format!("the bearer token variable {var} is not set"))?;
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::with_client(http, config);
    ().serve(transport)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))
}

/// `mcp__<server>__<tool>` in what providers accept for a function name
/// (`^[a-zA-Z0-9_-]{1,64}$`): other characters become `_`, the name is cut at 64.
pub fn full_tool_name(server: &str, tool: &str) -> String {
    format!("{TOOL_PREFIX}{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}
