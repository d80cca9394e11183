//! `web-fetch {url, prompt?, max_chars?}`: one URL, redirects followed by hand (each hop
//! checked again), the body capped, and what came back made readable: HTML as Markdown
//! (htmd; navigation, scripts and styles dropped, links kept and made absolute), text and
//! JSON as text, PDFs by their text layer, images as an image part; anything else refused.

use super::{MAX_BODY_BYTES, MAX_REDIRECTS, WebSettings, check_fetch_url};
use crate::args::ToolArgs;
use crate::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use url::Url;

/// Characters returned when the call gives no `max_chars`.
pub const DEFAULT_MAX_CHARS: usize = 20_000;
/// The largest `max_chars` accepted (past the result cap the rest is spilled to a file).
pub const MAX_MAX_CHARS: usize = 100_000;

/// What one fetch brought back.
pub struct Fetched {
    pub url: Url,
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    pub truncated: bool,
    /// The redirects followed, in order.
    pub hops: Vec<String>,
}

/// GETs `url`, following at most [`MAX_REDIRECTS`] redirects, each checked before it is
/// requested.
pub fn fetch(url: &str, s: &WebSettings, cancel: &CancellationToken) -> Result<Fetched, String> {
    let mut current = Url::parse(url.trim()).map_err(|e| {
        format!("{url:?} is not a valid URL ({e}); give a full http:// or https:// URL")
    })?;
    check_fetch_url(&current, s)?;
    let client = super::client(&s.fetch_rules)?;
    super::block_on(
        async move {
            let mut hops = Vec::new();
            loop {
                let resp = client
                    .get(current.clone())
                    .header("Accept", "text/html,application/xhtml+xml,text/plain,application/json,application/pdf;q=0.9,*/*;q=0.5")
                    .send()
                    .await
                    .map_err(|e| format!("fetching {current} failed: {}", super::describe(&e)))?;
                let status = resp.status();
                if status.is_redirection()
                    && let Some(loc) = resp.headers().get(reqwest::header::LOCATION)
                {
                    let loc = loc.to_str().unwrap_or("");
                    let next = current.join(loc).map_err(|e| {
                        format!("{current} redirects to an invalid location {loc:?} ({e})")
                    })?;
                    if hops.len() >= MAX_REDIRECTS {
                        return Err(format!(
                            "{url} redirects more than {MAX_REDIRECTS} times (last: {next}); not followed"
                        ));
                    }
                    check_fetch_url(&next, s)
                        .map_err(|e| format!("{current} redirects to {next}, refused: {e}"))?;
                    hops.push(next.to_string());
                    current = next;
                    continue;
                }
                let content_type = resp
                    .headers()
                    .get(reqwest::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_ascii_lowercase();
                let (body, truncated) = super::read_capped(resp, MAX_BODY_BYTES).await?;
                return Ok(Fetched {
                    url: current,
                    status: status.as_u16(),
                    content_type,
                    body,
                    truncated,
                    hops,
                });
            }
        },
        cancel,
    )?
}

#[derive(Debug, PartialEq)]
enum Kind {
    Html,
    Text,
    Json,
    Pdf,
    Image,
    Binary,
}

fn kind_of(ct: &str, body: &[u8]) -> Kind {
    let mime = ct.split(';').next().unwrap_or("").trim();
    match mime {
        "text/html" | "application/xhtml+xml" => return Kind::Html,
        "application/json" | "application/ld+json" | "application/problem+json" => {
            return Kind::Json;
        }
        "application/pdf" => return Kind::Pdf,
        m if m.ends_with("+json") => return Kind::Json,
        m if m.starts_with("image/") && m != "image/svg+xml" => return Kind::Image,
        m if m.starts_with("text/")
            || m.ends_with("+xml")
            || matches!(
                m,
                "application/xml" | "application/javascript" | "image/svg+xml"
            ) =>
        {
            return Kind::Text;
        }
        _ => {}
    }
    // No or a generic type: the bytes decide.
    if body.starts_with(b"%PDF-") {
        return Kind::Pdf;
    }
    if image::guess_format(body).is_ok() && !body.is_empty() {
        return Kind::Image;
    }
    let head = &body[..body.len().min(8192)];
    if head.contains(&0) || std::str::from_utf8(head).is_err() && !looks_textual(head) {
        return Kind::Binary;
    }
    let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
    if lower.contains("<html") || lower.contains("<!doctype html") {
        Kind::Html
    } else if matches!(lower.trim_start().chars().next(), Some('{' | '['))
        && serde_json::from_slice::<Value>(body).is_ok()
    {
        Kind::Json
    } else {
        Kind::Text
    }
}

/// UTF-8 cut mid-character at the end of the sniffed window still counts as text.
fn looks_textual(head: &[u8]) -> bool {
    match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.valid_up_to() + 4 >= head.len(),
    }
}

/// The page's `<title>`, if it has one.
fn title(html: &str) -> Option<String> {
    let re = regex::Regex::new(r"(?is)<title[^>]*>(.*?)</title>").ok()?;
    let t = re.captures(html)?.get(1)?.as_str();
    let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
    (!t.is_empty()).then_some(t)
}

/// The part of the page worth reading: `<main>`, else `<article>`, else the whole document.
fn main_part(html: &str) -> &str {
    for tag in ["main", "article"] {
        let lower = html.to_ascii_lowercase();
        if let Some(start) = lower.find(&format!("<{tag}"))
            && let Some(end) = lower.rfind(&format!("</{tag}>"))
            && end > start
        {
            return &html[start..end + tag.len() + 3];
        }
    }
    html
}

/// HTML → Markdown: scripts, styles, navigation and forms dropped; relative links resolved
/// against the page's URL so the model can fetch them next.
pub fn html_to_markdown(html: &str, base: &Url) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "nav", "footer", "header", "aside", "form", "svg",
            "iframe", "template", "head",
        ])
        .build();
    let md = converter
        .convert(main_part(html))
        .unwrap_or_else(|_| String::from_utf8_lossy(html.as_bytes()).into_owned());
    let link = regex::Regex::new(r"\]\(([^)\s]+)").expect("valid regex");
    let md = link.replace_all(&md, |c: &regex::Captures| {
        let target = &c[1];
        match base.join(target) {
            Ok(u) if !target.starts_with('#') => format!("]({u}"),
            _ => format!("]({target}"),
        }
    });
    // Runs of blank lines left by removed blocks.
    let blank = regex::Regex::new(r"\n{3,}").expect("valid regex");
    blank.replace_all(md.trim(), "\n\n").into_owned()
}

/// Keeps at most `max` characters: the start of the text, or — when a prompt is given — the
/// paragraphs that share the most words with it, in page order.
fn fit(text: &str, max: usize, prompt: Option<&str>) -> (String, bool) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_string(), false);
    }
    let words: Vec<String> = prompt
        .unwrap_or("")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 2)
        // A crude stem, so "widgets" finds "widget".
        .map(|w| w.to_lowercase().trim_end_matches('s').to_string())
        .collect();
    if words.is_empty() {
        return (text.chars().take(max).collect(), true);
    }
    let paras: Vec<&str> = text.split("\n\n").collect();
    let mut scored: Vec<(usize, usize)> = paras
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let lower = p.to_lowercase();
            (
                words.iter().filter(|w| lower.contains(w.as_str())).count(),
                i,
            )
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut keep = Vec::new();
    let mut used = 0;
    for (score, i) in scored {
        let n = paras[i].chars().count() + 2;
        if score == 0 && !keep.is_empty() {
            break;
        }
        if used + n > max {
            continue;
        }
        used += n;
        keep.push(i);
    }
    keep.sort_unstable();
    let mut out = String::new();
    let mut last: Option<usize> = None;
    for i in keep {
        if last.is_some_and(|l| l + 1 != i) {
            out.push_str("[…]\n\n");
        }
        out.push_str(paras[i]);
        out.push_str("\n\n");
        last = Some(i);
    }
    (out.trim_end().to_string(), true)
}

/// The tool result for a fetched response.
pub fn render(f: &Fetched, prompt: Option<&str>, max_chars: usize) -> Result<ToolOutput, String> {
    let kind = kind_of(&f.content_type, &f.body);
    let ct = if f.content_type.is_empty() {
        "no content type".to_string()
    } else {
        f.content_type.clone()
    };
    let mut head = format!("URL: {}\nStatus: {} ({ct})\n", f.url, f.status);
    if !f.hops.is_empty() {
        head.push_str(&format!("Redirected: {}\n", f.hops.join(" -> ")));
    }
    if let Some(p) = prompt.filter(|p| !p.trim().is_empty()) {
        head.push_str(&format!("Fetched for: {}\n", p.trim()));
    }
    let text = match kind {
        Kind::Binary => {
            return Err(format!(
                "{} is binary content ({ct}, {}{} bytes), not a page: web-fetch reads HTML, text, JSON, PDFs and images. Download it with bash (curl -o file) if you need the bytes.",
                f.url,
                f.body.len(),
                if f.truncated { "+" } else { "" }
            ));
        }
        Kind::Image => {
            let p = crate::media::prepare_image(&f.body, f.url.as_str())?;
            let mut out = ToolOutput::ok(format!(
                "{head}Image {}x{} ({} bytes); attached as {}.",
                p.original.0,
                p.original.1,
                f.body.len(),
                p.mime
            ));
            out.images.push(p.data_url);
            return Ok(out);
        }
        Kind::Pdf => {
            if f.truncated {
                return Err(format!(
                    "{} is a PDF larger than {} MiB; download it with bash and read it with read-media",
                    f.url,
                    MAX_BODY_BYTES / (1024 * 1024)
                ));
            }
            let out = crate::media::read_pdf(std::path::Path::new(f.url.as_str()), &f.body, None)?;
            out.text
        }
        Kind::Json => {
            let raw = String::from_utf8_lossy(&f.body);
            serde_json::from_str::<Value>(&raw)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or_else(|| raw.into_owned())
        }
        Kind::Html => {
            let html = String::from_utf8_lossy(&f.body);
            let md = html_to_markdown(&html, &f.url);
            match title(&html) {
                Some(t) => {
                    head.push_str(&format!("Title: {t}\n"));
                    md
                }
                None => md,
            }
        }
        Kind::Text => String::from_utf8_lossy(&f.body).into_owned(),
    };
    let total = text.chars().count();
    let (body, cut) = fit(&text, max_chars, prompt);
    let mut out = format!("{head}\n{body}\n");
    if cut {
        out.push_str(&format!(
            "\n[content cut to {max_chars} of {total} characters{}; raise max_chars (up to {MAX_MAX_CHARS}) for more]\n",
            if prompt.is_some() {
                ", keeping the paragraphs closest to the prompt"
            } else {
                ""
            }
        ));
    }
    if f.truncated {
        out.push_str(&format!(
            "[the response was longer than {} MiB; only its start was read]\n",
            MAX_BODY_BYTES / (1024 * 1024)
        ));
    }
    Ok(if (200..400).contains(&f.status) {
        ToolOutput::ok(out)
    } else {
        ToolOutput::err(format!("HTTP error {}\n{out}", f.status))
    })
}

pub struct WebFetch;

impl Tool for WebFetch {
    fn name(&self) -> &'static str {
        "web-fetch"
    }
    fn description(&self) -> &'static str {
        "Fetch a URL (http/https) and read it: HTML pages as Markdown (main content, links kept), text, JSON, PDFs (text) and images. Redirects are followed (at most 5). Needs --network on. `prompt` says what you look for (kept with the result; when the page is too long the closest paragraphs are kept); `max_chars` limits the text (default 20000)."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "Full http:// or https:// URL"},
                "prompt": {"type": "string", "description": "What to look for in the page"},
                "max_chars": {"type": "integer", "description": "Most characters of content to return (default 20000, at most 100000)"}
            },
            "required": ["url"]
        })
    }
    fn run_args(
        &self,
        args: &ToolArgs,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let ToolArgs::WebFetch(a) = args else {
            return crate::fs::mismatched("web-fetch", args);
        };
        let max = match a.max_chars {
            None => DEFAULT_MAX_CHARS,
            Some(n) if n < 1 => return ToolOutput::err("max_chars must be 1 or more"),
            Some(n) => (n as usize).min(MAX_MAX_CHARS),
        };
        let settings = ctx.web_settings();
        fetch(&a.url, &settings, cancel)
            .and_then(|f| render(&f, a.prompt.as_deref(), max))
            .unwrap_or_else(ToolOutput::err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_with_absolute_links() {
        let base = Url::parse("http://h.test/docs/page.html").unwrap();
        let html = "<html><head><title>T</title><script>evil()</script></head><body><nav>menu</nav><main><h1>Hello</h1><p>See <a href=\"other.html\">other</a> and <a href=\"#x\">here</a>.</p></main><footer>foot</footer></body></html>";
        let md = html_to_markdown(html, &base);
        assert!(md.contains("# Hello"), "{md}");
        assert!(
            md.contains("[other](http://h.test/docs/other.html)"),
            "{md}"
        );
        assert!(md.contains("(#x)"), "{md}");
        assert!(
            !md.contains("evil") && !md.contains("menu") && !md.contains("foot"),
            "{md}"
        );
        assert_eq!(title(html).as_deref(), Some("T"));
    }

    #[test]
    fn content_kinds() {
        assert_eq!(kind_of("text/html; charset=utf-8", b""), Kind::Html);
        assert_eq!(kind_of("application/json", b"{}"), Kind::Json);
        assert_eq!(kind_of("", b"%PDF-1.4"), Kind::Pdf);
        assert_eq!(
            kind_of("application/octet-stream", b"\x00\x01\x02"),
            Kind::Binary
        );
        assert_eq!(
            kind_of("application/octet-stream", b"plain words"),
            Kind::Text
        );
        assert_eq!(kind_of("", b"<!DOCTYPE html><p>x"), Kind::Html);
    }

    #[test]
    fn a_prompt_keeps_the_closest_paragraphs() {
        let text = format!(
            "{}\n\nThe answer about tokio runtimes is here.\n\n{}",
            "filler ".repeat(50),
            "more filler ".repeat(50)
        );
        let (kept, cut) = fit(&text, 80, Some("tokio runtimes"));
        assert!(cut);
        assert!(kept.contains("tokio runtimes"), "{kept}");
        let (start, _) = fit(&text, 10, None);
        assert_eq!(start.chars().count(), 10);
    }
}
