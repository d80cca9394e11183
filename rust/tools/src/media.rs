//! Images and PDFs for `read` and `read-media`. Images are decoded, downscaled so the longest
//! side is at most 1568 px, re-encoded when too large, and sent to the model as an image part.
//! PDFs are read by page range (text layer), at most 20 pages a call.

use crate::args::ToolArgs;
use crate::fs::read_file;
use crate::{Tool, ToolContext, ToolOutput};
use base64::Engine as _;
use image::{DynamicImage, GenericImageView, ImageFormat};
use serde_json::{Value, json};
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// Longest side of an image sent to the model.
pub const MAX_SIDE: u32 = 1568;
/// Largest encoded image sent as is (bytes); above it the image is re-encoded.
const MAX_IMAGE_BYTES: usize = 3_750_000;
/// Pages one PDF read returns at most.
pub const MAX_PDF_PAGES: u32 = 20;
/// Pages a PDF read without `pages` returns.
const DEFAULT_PDF_PAGES: u32 = 10;

pub fn is_image(path: &Path, bytes: &[u8]) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    matches!(ext.as_str(), "png" | "jpg" | "jpeg" | "gif" | "webp")
        || matches!(
            image::guess_format(bytes),
            Ok(ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP)
        )
}

fn mime(f: ImageFormat) -> &'static str {
    match f {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Gif => "image/gif",
        ImageFormat::WebP => "image/webp",
        _ => "application/octet-stream",
    }
}

/// The encoded image for the model and its description.
pub struct Prepared {
    pub data_url: String,
    pub width: u32,
    pub height: u32,
    pub original: (u32, u32),
    pub bytes: usize,
    pub mime: &'static str,
}

fn encode(img: &DynamicImage, format: ImageFormat, quality: u8) -> Result<Vec<u8>, String> {
    let mut out = std::io::Cursor::new(Vec::new());
    match format {
        ImageFormat::Jpeg => {
            let rgb = img.to_rgb8();
            let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
            rgb.write_with_encoder(enc).map_err(|e| e.to_string())?;
        }
        _ => img
            .write_to(&mut out, ImageFormat::Png)
            .map_err(|e| e.to_string())?,
    }
    Ok(out.into_inner())
}

/// Decodes, downscales and re-encodes as needed.
pub fn prepare_image(bytes: &[u8], shown: &str) -> Result<Prepared, String> {
    let format = image::guess_format(bytes).map_err(|_| {
        format!("{shown} is not a readable image (unknown format); supported: png, jpeg, gif, webp")
    })?;
    if !matches!(
        format,
        ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP
    ) {
        return Err(format!(
            "{shown} is a {format:?} image; supported formats are png, jpeg, gif and webp"
        ));
    }
    let img = image::load_from_memory_with_format(bytes, format).map_err(|e| {
        format!(
            "{shown} could not be decoded as {format:?}: {e} (the file may be truncated or corrupt)"
        )
    })?;
    let (w, h) = img.dimensions();
    if w == 0 || h == 0 {
        return Err(format!("{shown} is an empty image (0 pixels)"));
    }
    let too_big = w.max(h) > MAX_SIDE;
    if !too_big && bytes.len() <= MAX_IMAGE_BYTES {
        return Ok(Prepared {
            data_url: data_url(mime(format), bytes),
            width: w,
            height: h,
            original: (w, h),
            bytes: bytes.len(),
            mime: mime(format),
        });
    }
    let mut current = if too_big {
        img.resize(MAX_SIDE, MAX_SIDE, image::imageops::FilterType::Triangle)
    } else {
        img
    };
    let alpha = current.color().has_alpha();
    let mut out_format = if alpha || (format == ImageFormat::Png && !too_big) {
        ImageFormat::Png
    } else {
        ImageFormat::Jpeg
    };
    let mut quality = 85u8;
    let mut encoded = encode(&current, out_format, quality)?;
    // Still too large: JPEG at falling quality, then smaller sides.
    let mut rounds = 0;
    while encoded.len() > MAX_IMAGE_BYTES && rounds < 8 {
        rounds += 1;
        if out_format == ImageFormat::Png {
            out_format = ImageFormat::Jpeg;
        } else if quality > 50 {
            quality -= 15;
        } else {
            let (cw, ch) = current.dimensions();
            current = current.resize(
                (cw * 3 / 4).max(1),
                (ch * 3 / 4).max(1),
                image::imageops::FilterType::Triangle,
            );
        }
        encoded = encode(&current, out_format, quality)?;
    }
    let (nw, nh) = current.dimensions();
    Ok(Prepared {
        data_url: data_url(mime(out_format), &encoded),
        width: nw,
        height: nh,
        original: (w, h),
        bytes: encoded.len(),
        mime: mime(out_format),
    })
}

fn data_url(mime: &str, bytes: &[u8]) -> String {
    format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

pub fn read_image(path: &Path, bytes: &[u8]) -> Result<ToolOutput, String> {
    let shown = path.display().to_string();
    let p = prepare_image(bytes, &shown)?;
    let resized = if (p.width, p.height) != p.original {
        format!(
            ", downscaled from {}x{} to {}x{}",
            p.original.0, p.original.1, p.width, p.height
        )
    } else {
        String::new()
    };
    let mut out = ToolOutput::ok(format!(
        "Image {shown}: {}x{} pixels, {} bytes on disk{resized}; attached as {} ({} bytes). Describe what it shows from the attached image.",
        p.original.0,
        p.original.1,
        bytes.len(),
        p.mime,
        p.bytes
    ));
    out.images.push(p.data_url);
    Ok(out)
}

/// "3", "1-5", "2,4-6" -> sorted unique 1-based pages, validated against `total`.
pub fn parse_pages(spec: &str, total: u32) -> Result<Vec<u32>, String> {
    let mut pages: Vec<u32> = Vec::new();
    for part in spec.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let num = |s: &str| -> Result<u32, String> {
            let s = s.trim();
            s.parse::<i64>()
                .map_err(|_| {
                    format!(
                        "invalid page number {s:?} in pages {spec:?}; use a range such as \"1-5\""
                    )
                })
                .and_then(|n| {
                    if n < 1 {
                        Err(format!(
                            "page numbers start at 1, got {n} in pages {spec:?}"
                        ))
                    } else {
                        Ok(n as u32)
                    }
                })
        };
        let (a, b) = match part.split_once('-') {
            Some((a, "")) => (num(a)?, total.max(num(a)?).min(num(a)? + MAX_PDF_PAGES - 1)),
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(part)?;
                (n, n)
            }
        };
        if b < a {
            return Err(format!(
                "the page range {part:?} is inverted (it ends before it starts); write it as \"{b}-{a}\""
            ));
        }
        if a > total {
            return Err(format!(
                "page {a} is past the end: the PDF has {total} page{}",
                if total == 1 { "" } else { "s" }
            ));
        }
        if (b - a + 1) as usize + pages.len() > MAX_PDF_PAGES as usize {
            return Err(format!(
                "pages {spec:?} asks for more than {MAX_PDF_PAGES} pages; read at most {MAX_PDF_PAGES} pages a call (e.g. \"{a}-{}\")",
                a + MAX_PDF_PAGES - 1
            ));
        }
        let b = b.min(total);
        pages.extend(a..=b);
    }
    pages.sort_unstable();
    pages.dedup();
    if pages.is_empty() {
        return Err(format!(
            "pages {spec:?} names no page; use a range such as \"1-5\""
        ));
    }
    if pages.len() > MAX_PDF_PAGES as usize {
        return Err(format!(
            "pages {spec:?} covers {} pages; read at most {MAX_PDF_PAGES} pages a call (e.g. \"{}-{}\")",
            pages.len(),
            pages[0],
            pages[0] + MAX_PDF_PAGES - 1
        ));
    }
    Ok(pages)
}

pub fn read_pdf(path: &Path, bytes: &[u8], pages: Option<&str>) -> Result<ToolOutput, String> {
    let shown = path.display().to_string();
    let doc = lopdf::Document::load_mem(bytes).map_err(|e| {
        format!("{shown} could not be parsed as a PDF ({e}); the file may be damaged. Inspect it with bash (pdftotext) if available.")
    })?;
    if doc.is_encrypted() {
        return Err(format!(
            "{shown} is an encrypted PDF; its text cannot be read without the password"
        ));
    }
    let all = doc.get_pages();
    let total = all.len() as u32;
    if total == 0 {
        return Err(format!("{shown} has no pages"));
    }
    let (wanted, hint) = match pages {
        Some(spec) => (parse_pages(spec, total)?, None),
        None => {
            let n = total.min(DEFAULT_PDF_PAGES);
            let hint = (total > n).then(|| {
                format!(
                    "(pages 1–{n} of {total}; continue with pages=\"{}-{}\")",
                    n + 1,
                    total.min(n + MAX_PDF_PAGES)
                )
            });
            ((1..=n).collect(), hint)
        }
    };
    let mut out = format!(
        "PDF {shown}: {total} page{}\n",
        if total == 1 { "" } else { "s" }
    );
    for p in &wanted {
        out.push_str(&format!("\n--- page {p} ---\n"));
        match doc.extract_text(&[*p]) {
            Ok(t) if !t.trim().is_empty() => {
                out.push_str(t.trim_end());
                out.push('\n');
            }
            Ok(_) => out.push_str("(no text layer on this page; it may be a scanned image)\n"),
            Err(e) => out.push_str(&format!(
                "(the text of this page could not be extracted: {e})\n"
            )),
        }
    }
    if let Some(h) = hint {
        out.push('\n');
        out.push_str(&h);
        out.push('\n');
    }
    Ok(ToolOutput::ok(out))
}

/// Most of an SVG's markup given back as text.
const SVG_TEXT_MAX: usize = 256 * 1024;

/// An SVG file: by its extension, or markup whose first element is `<svg`.
fn is_svg(path: &Path, bytes: &[u8]) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if matches!(ext.as_deref(), Some("svg")) {
        return true;
    }
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]).to_ascii_lowercase();
    let head = head.trim_start();
    head.starts_with("<svg") || (head.starts_with("<?xml") && head.contains("<svg"))
}

/// An SVG is vector markup: the model reads its shapes and text from the markup itself (no
/// rasteriser ships with yuyao), capped like a text page.
fn svg_as_text(path: &Path, bytes: &[u8]) -> ToolOutput {
    let text = String::from_utf8_lossy(bytes);
    let mut end = text.len().min(SVG_TEXT_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = if end < text.len() {
        format!(
            "\n[… {} more bytes not shown; read the file with read and an offset]",
            text.len() - end
        )
    } else {
        String::new()
    };
    ToolOutput::ok(format!(
        "{} is an SVG (vector markup), given as text: its shapes, labels and colours are in the markup below.\n{}{cut}",
        path.display(),
        &text[..end]
    ))
}

/// read-media: images (and PDFs) as visual content.
pub struct ReadMedia;

impl Tool for ReadMedia {
    fn name(&self) -> &'static str {
        "read-media"
    }
    fn description(&self) -> &'static str {
        "Look at an image (png, jpeg, gif, webp: screenshots, diagrams, mockups); it is attached to the result as an image, downscaled to at most 1568 px. PDFs are read as text by page range (pages: \"1-5\"); SVGs as their markup. Screen recordings (animated gif, mp4, webm, mov) are sampled into `frames` images (default 8, at most 20) with their timestamps."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Absolute path, or relative to the working directory"},
                "pages": {"type": "string", "description": "PDF page range, e.g. \"1-5\""},
                "frames": {"type": "integer", "description": "Recordings: frames to sample (default 8, at most 20)"}
            },
            "required": ["file_path"]
        })
    }
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        let ToolArgs::ReadMedia(args) = args else {
            return crate::fs::mismatched("read-media", args);
        };
        (|| {
            let path = ctx.resolve(&args.file_path);
            // Screen recordings: frames sampled with their timestamps by ffmpeg (frames.rs);
            // ffmpeg reads the file itself, so no size limit applies.
            if crate::frames::is_video(&path) && path.is_file() {
                return crate::frames::read_video(&path, args.frames);
            }
            if let Ok(m) = std::fs::metadata(&path)
                && m.is_file()
                && m.len() > 64 * 1024 * 1024
            {
                return Err(format!(
                    "{} is too large to look at ({} bytes, at most 64 MiB)",
                    path.display(),
                    m.len()
                ));
            }
            let bytes = read_file(&path)?;
            if image::guess_format(&bytes).ok() == Some(ImageFormat::Gif)
                && let Some(out) = crate::frames::read_gif(&path, &bytes, args.frames)?
            {
                return Ok(out);
            }
            if is_image(&path, &bytes) {
                return read_image(&path, &bytes);
            }
            if bytes.starts_with(b"%PDF-") {
                let pages = args.pages.as_deref();
                return read_pdf(&path, &bytes, pages);
            }
            if is_svg(&path, &bytes) {
                return Ok(svg_as_text(&path, &bytes));
            }
            Err(format!(
                "{} is not an image or a PDF; read text files with read",
                path.display()
            ))
        })()
        .unwrap_or_else(ToolOutput::err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_images_are_downscaled() {
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_pixel(
            3000,
            1000,
            image::Rgb([200, 10, 10]),
        ));
        let bytes = encode(&img, ImageFormat::Png, 0).unwrap();
        let p = prepare_image(&bytes, "x.png").unwrap();
        assert_eq!((p.width, p.height), (1568, 523));
        assert!(p.data_url.starts_with("data:image/"));
        let small = DynamicImage::ImageRgb8(image::RgbImage::new(10, 10));
        let bytes = encode(&small, ImageFormat::Png, 0).unwrap();
        let p = prepare_image(&bytes, "s.png").unwrap();
        assert_eq!((p.width, p.height), (10, 10));
        assert!(prepare_image(b"\x89PNG\r\n\x1a\nbroken", "b.png").is_err());
    }

    #[test]
    fn page_ranges() {
        assert_eq!(parse_pages("1-3", 10).unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_pages("2, 5-6", 10).unwrap(), vec![2, 5, 6]);
        assert!(parse_pages("5-2", 10).unwrap_err().contains("inverted"));
        assert!(parse_pages("11", 10).unwrap_err().contains("10 pages"));
        assert!(parse_pages("0", 10).is_err());
        assert!(parse_pages("x", 10).is_err());
        assert!(parse_pages("1-30", 40).unwrap_err().contains("at most 20"));
    }
}
