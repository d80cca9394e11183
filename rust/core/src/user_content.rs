//! A user turn given as message content (the stream-json input of `-p`, the Claude Code SDK
//! shape): a string, or parts — text, and images as base64 sources or URLs. The text runs as
//! an ordinary turn (`Session::chat`); the images are attached to its user message.

use crate::session::{CoreError, Session};
use serde_json::{Value, json};
use yuyao_protocol::{Content, Message};

/// The text and the image URLs (`data:` or http) of a content value.
pub(crate) fn split(content: &Value) -> Result<(String, Vec<String>), CoreError> {
    let bad = |why: &str| CoreError::Usage(format!("message content: {why}"));
    match content {
        Value::String(s) => Ok((s.clone(), Vec::new())),
        Value::Array(parts) => {
            let (mut text, mut images) = (Vec::new(), Vec::new());
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => text.push(
                        p.get("text")
                            .and_then(Value::as_str)
                            .ok_or_else(|| bad("a text part without text"))?
                            .to_string(),
                    ),
                    Some("image") => {
                        let src = p
                            .get("source")
                            .ok_or_else(|| bad("an image without source"))?;
                        let url = match src.get("type").and_then(Value::as_str) {
                            Some("base64") => {
                                let media = src
                                    .get("media_type")
                                    .and_then(Value::as_str)
                                    .filter(|m| m.starts_with("image/"))
                                    .ok_or_else(|| bad("an image without an image/* media_type"))?;
                                let data = src
                                    .get("data")
                                    .and_then(Value::as_str)
                                    .ok_or_else(|| bad("an image without data"))?;
                                format!("data:{media};base64,{data}")
                            }
                            Some("url") => src
                                .get("url")
                                .and_then(Value::as_str)
                                .ok_or_else(|| bad("an image url source without url"))?
                                .to_string(),
                            _ => return Err(bad("an image source must be base64 or url")),
                        };
                        images.push(url);
                    }
                    Some("image_url") => images.push(
                        p.pointer("/image_url/url")
                            .and_then(Value::as_str)
                            .ok_or_else(|| bad("an image_url part without url"))?
                            .to_string(),
                    ),
                    _ => return Err(bad("unsupported part type")),
                }
            }
            Ok((text.join("\n"), images))
        }
        _ => Err(bad("must be a string or a list of parts")),
    }
}

impl Session {
    /// One turn from message content (text and image parts).
    pub fn chat_content(&self, content: &Value) -> Result<String, CoreError> {
        let (text, images) = split(content)?;
        if text.trim().is_empty() && images.is_empty() {
            return Err(CoreError::Usage("message content is empty".into()));
        }
        if let Ok(mut pending) = self.pending_images.lock() {
            *pending = images;
        }
        let text = if text.trim().is_empty() {
            "(see the attached image)".to_string()
        } else {
            text
        };
        self.chat(&text)
    }

    /// Attaches the images of `chat_content` to the turn's user message.
    pub(crate) fn attach_pending_images(&self, mut m: Message) -> Message {
        let images = self
            .pending_images
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        if images.is_empty() {
            return m;
        }
        let mut parts = match m.content.take() {
            Some(Content::Parts(parts)) => parts,
            Some(Content::Text(t)) => vec![json!({"type": "text", "text": t})],
            None => Vec::new(),
        };
        parts.extend(
            images
                .into_iter()
                .map(|u| json!({"type": "image_url", "image_url": {"url": u}})),
        );
        m.content = Some(Content::Parts(parts));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_split_into_text_and_images() {
        let (t, i) = split(&json!([
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
        ]))
        .unwrap();
        assert_eq!(t, "look");
        assert_eq!(i, vec!["data:image/png;base64,AAAA".to_string()]);
        assert!(split(&json!([{"type": "audio"}])).is_err());
        assert!(split(&json!(3)).is_err());
    }
}
