//! A tool result as yuyao's tool results carry it: text, and images as `data:` URLs.

use rmcp::model::{CallToolResult, RawContent, ResourceContents};

#[derive(Debug, Default)]
pub struct CallOutput {
    pub text: String,
    /// `data:<mime>;base64,…` URLs.
    pub images: Vec<String>,
    /// The server flagged the result as an error (`isError`).
    pub is_error: bool,
}

pub(crate) fn convert(r: CallToolResult) -> CallOutput {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for c in r.content {
        match c.raw {
            RawContent::Text(t) => parts.push(t.text),
            RawContent::Image(i) => {
                parts.push(format!("[image {} attached]", i.mime_type));
                images.push(format!("data:{};base64,{}", i.mime_type, i.data));
            }
            RawContent::Resource(res) => match res.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    parts.push(format!("[resource {uri}]\n{text}"))
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => parts.push(format!(
                    "[resource {uri}: binary {}, {} bytes base64; not shown]",
                    mime_type.unwrap_or_else(|| "data".into()),
                    blob.len()
                )),
            },
            RawContent::ResourceLink(l) => parts.push(format!("[resource link {}]", l.uri)),
            RawContent::Audio(a) => parts.push(format!("[audio {}; not shown]", a.mime_type)),
        }
    }
    if parts.is_empty()
        && let Some(s) = r.structured_content
    {
        parts.push(s.to_string());
    }
    CallOutput {
        text: parts.join("\n"),
        images,
        is_error: r.is_error == Some(true),
    }
}
