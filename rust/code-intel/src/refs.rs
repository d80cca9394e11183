//! `@path` and `@SymbolName` references (spec §5.4), a feature of their own (`FEATURE`): a file, or a folder recursively, that the user names in a
//! prompt is attached to that prompt. This is the only way content enters a request without a
//! tool call (spec §3.3's exfiltration invariant): prose that merely mentions a file name
//! attaches nothing, and a folder expansion never collects secrets (`.env`, keys…) — a secret
//! file is attached only when the user names that very file.

use ignore::WalkBuilder;
use serde_json::json;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use yuyao_core::Session;
use yuyao_protocol::{Content, Message};

/// Largest text attached for one referenced file.
const FILE_CAP: usize = 100_000;
/// Largest text attached for all references of one prompt together.
const TOTAL_CAP: usize = 250_000;
/// Largest image attached.
const IMAGE_CAP: u64 = 64 * 1024 * 1024;
/// Files listed (and attached, while the budget lasts) for one referenced folder.
const FOLDER_FILES: usize = 200;

/// The `@…` words of `text`: `@path`, or `@"path with spaces"`; trailing punctuation is not
/// part of the path. An `@` inside a word (an e-mail address) is not a reference.
pub fn referenced_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let at_start = i == 0 || chars[i - 1].is_whitespace();
        if chars[i] == '@' && at_start && i + 1 < chars.len() {
            let (word, next) = if chars[i + 1] == '"' {
                let end = chars[i + 2..]
                    .iter()
                    .position(|c| *c == '"')
                    .map_or(chars.len(), |p| i + 2 + p);
                (chars[i + 2..end].iter().collect::<String>(), end + 1)
            } else {
                let end = chars[i + 1..]
                    .iter()
                    .position(|c| c.is_whitespace())
                    .map_or(chars.len(), |p| i + 1 + p);
                let w: String = chars[i + 1..end].iter().collect();
                let w = w
                    .trim_end_matches([',', '.', ';', ':', '!', '?', ')', '"', '\''])
                    .to_string();
                (w, end)
            };
            if !word.is_empty() {
                out.push(word);
            }
            i = next;
            continue;
        }
        i += 1;
    }
    out
}

/// The user message for `text`, with every existing referenced file or folder attached.
pub fn user_message(s: &Session, text: &str) -> Message {
    let mut blocks = String::new();
    let mut images: Vec<String> = Vec::new();
    let mut budget = TOTAL_CAP;
    let mut seen: Vec<PathBuf> = Vec::new();
    for word in referenced_words(text) {
        let path = s.tool_context().resolve(&word);
        if !path.exists()
            && let Some(block) = s.symbol_block(&word)
        {
            // `@SymbolName`: the definition found in the repo map's tags.
            blocks.push_str(&block);
            blocks.push('\n');
            continue;
        }
        if seen.contains(&path) || !path.exists() {
            continue; // not a path (an agent name, a symbol): the words stay as typed
        }
        seen.push(path.clone());
        if path.is_dir() {
            attach_folder(s, &path, &word, &mut blocks, &mut budget);
        } else {
            attach_file(s, &path, &word, true, &mut blocks, &mut images, &mut budget);
        }
    }
    if blocks.is_empty() && images.is_empty() {
        return Message::user(text);
    }
    let full = format!("{text}\n\n{blocks}").trim_end().to_string();
    let mut m = Message::user(full.clone());
    if !images.is_empty() {
        let mut parts = vec![json!({"type": "text", "text": full})];
        parts.extend(
            images
                .iter()
                .map(|u| json!({"type": "image_url", "image_url": {"url": u}})),
        );
        m.content = Some(Content::Parts(parts));
    }
    m
}

fn attach_file(
    s: &Session,
    path: &Path,
    shown: &str,
    named: bool,
    blocks: &mut String,
    images: &mut Vec<String>,
    budget: &mut usize,
) {
    // A secret is attached only when the user named that very file.
    if !named && yuyao_policy::sensitive::is_sensitive(path) {
        return;
    }
    // Only what can be attached is read: the first block decides image / binary / text,
    // and text is read up to this reference's budget (a 2 GB log costs a page, not 2 GB).
    let opened = yuyao_tools::fs::open_for_read(path).and_then(|f| {
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        let mut bytes = Vec::new();
        let mut f = f;
        (&mut f)
            .take(8192)
            .read_to_end(&mut bytes)
            .map_err(|e| e.to_string())?;
        Ok((f, size, bytes))
    });
    let (mut file, size, mut bytes) = match opened {
        Ok(v) => v,
        Err(e) => {
            blocks.push_str(&format!("[@{shown}: cannot be read: {e}]\n\n"));
            return;
        }
    };
    let read_more = |file: &mut std::fs::File, bytes: &mut Vec<u8>, limit: u64| {
        let want = limit.saturating_sub(bytes.len() as u64);
        file.take(want).read_to_end(bytes).map(|_| ())
    };
    if yuyao_tools::media::is_image(path, &bytes) {
        if size > IMAGE_CAP {
            blocks.push_str(&format!(
                "[@{shown}: image of {size} bytes, too large to attach]\n\n"
            ));
            return;
        }
        if let Err(e) = read_more(&mut file, &mut bytes, IMAGE_CAP) {
            blocks.push_str(&format!("[@{shown}: cannot be read: {e}]\n\n"));
            return;
        }
        match yuyao_tools::media::prepare_image(&bytes, shown) {
            Ok(p) => {
                blocks.push_str(&format!(
                    "[@{shown}: image {}x{}, attached]\n\n",
                    p.width, p.height
                ));
                images.push(p.data_url);
            }
            Err(e) => blocks.push_str(&format!("[@{shown}: {e}]\n\n")),
        }
        return;
    }
    if bytes.contains(&0) {
        blocks.push_str(&format!(
            "[@{shown}: binary file, {size} bytes, not attached]\n\n"
        ));
        return;
    }
    let cap = FILE_CAP.min(*budget);
    if let Err(e) = read_more(&mut file, &mut bytes, cap as u64 + 4) {
        blocks.push_str(&format!("[@{shown}: cannot be read: {e}]\n\n"));
        return;
    }
    let text = String::from_utf8_lossy(&bytes);
    let (body, cut) = if text.len() > cap || (bytes.len() as u64) < size {
        let mut end = cap.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        (&text[..end], true)
    } else {
        (text.as_ref(), false)
    };
    *budget -= body.len();
    // The agent knows the file as if it had read it (read-before-write): the hash is of the
    // whole content, streamed when only a part was attached.
    if cut {
        if let Some(h) = yuyao_tools::fs::hash_file(path) {
            s.tool_context().remember_digest(path, h, false);
        }
    } else {
        s.tool_context().remember(path, &bytes, true);
    }
    blocks.push_str(&format!("<file path=\"{}\">\n{body}", path.display()));
    if cut {
        blocks.push_str(&format!(
            "\n[… cut at {} of {size} bytes; read the rest with the read tool]",
            body.len(),
        ));
    }
    blocks.push_str("\n</file>\n\n");
}

fn attach_folder(s: &Session, dir: &Path, shown: &str, blocks: &mut String, budget: &mut usize) {
    let mut files: Vec<PathBuf> = WalkBuilder::new(dir)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
        .filter(|p| !yuyao_policy::sensitive::is_sensitive(p))
        .take(FOLDER_FILES + 1)
        .collect();
    files.sort();
    let more = files.len() > FOLDER_FILES;
    files.truncate(FOLDER_FILES);
    let listing: Vec<String> = files
        .iter()
        .map(|p| p.strip_prefix(dir).unwrap_or(p).display().to_string())
        .collect();
    blocks.push_str(&format!(
        "<folder path=\"{}\">\n{}{}\n</folder>\n\n",
        dir.display(),
        listing.join("\n"),
        if more {
            "\n[… more files not listed]"
        } else {
            ""
        }
    ));
    let mut images = Vec::new();
    for p in &files {
        if *budget < 1000 {
            blocks.push_str(&format!(
                "[@{shown}: the attachment budget is used up; read the other files with the read tool]\n\n"
            ));
            break;
        }
        let rel = p.strip_prefix(dir).unwrap_or(p).display().to_string();
        if yuyao_tools::media::is_image(p, b"") || rel.ends_with(".pdf") {
            continue; // listed; the model can read-media it
        }
        attach_file(s, p, &rel, false, blocks, &mut images, budget);
    }
}

/// What this feature adds to a session (feature.rs): the message a typed prompt becomes.
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "references",
    prompt_message: Some(|s, text| Some(user_message(s, text))),
    ..yuyao_core::Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_words_that_start_with_at() {
        assert_eq!(
            referenced_words("see @src/a.rs, and @\"my file.txt\" or mail a@b.c"),
            ["src/a.rs", "my file.txt"]
        );
        assert!(referenced_words("no refs here; .env ~/.ssh/id_rsa").is_empty());
    }
}
