//! Opening a connection: the transport from the configuration entry, the MCP handshake, and
//! the server's tool list.

use crate::{Client, TOOL_PREFIX, ToolInfo, schema::sanitize_schema};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use std::path::Path;
use yuyao_store::McpServer;

/// The agent's own model credential: never handed to a server.
use yuyao_protocol::MODEL_KEY_VAR;

pub(crate) async fn connect(
    name: &str,
    cfg: &McpServer,
    project: &Path,
) -> Result<(Client, Vec<ToolInfo>), String> {
    let client = if let Some(url) = &cfg.url {
        http(cfg, url).await?
    } else {
        stdio(cfg, project).await?
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

async fn stdio(cfg: &McpServer, project: &Path) -> Result<Client, String> {
    let argv = cfg.argv();
    let program = argv.first().ok_or("no command configured")?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(&argv[1..])
        .env_remove(MODEL_KEY_VAR)
        .envs(cfg.env.iter().filter(|(k, _)| k.as_str() != MODEL_KEY_VAR))
        .current_dir(cfg.cwd.as_deref().map(Path::new).unwrap_or(project))
        .kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start '{program}': {e}"))?;
    ().serve(transport)
        .await
        .map_err(|e| format!("the MCP handshake failed: {e}"))
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
