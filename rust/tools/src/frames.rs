//! Screen recordings for `read-media`: a GIF, MP4, WebM, MOV (or MKV/AVI) sampled into at most
//! [`MAX_FRAMES`] evenly spaced frames, each sent as an image part, listed with its
//! timestamp. Animated GIFs are decoded here (the `image` crate's GIF decoder); videos need
//! `ffmpeg` (and `ffprobe` for the duration) on PATH, and without it the error says so.

use crate::ToolOutput;
use crate::media::prepare_image;
use image::AnimationDecoder;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Frames sampled when the call does not say.
pub const DEFAULT_FRAMES: usize = 8;
/// Frames one call returns at most.
pub const MAX_FRAMES: usize = 20;
/// Longest time one ffmpeg run may take.
const FFMPEG_TIMEOUT: Duration = Duration::from_secs(30);

const VIDEO_EXTS: &[&str] = &["mp4", "webm", "mov", "mkv", "avi", "m4v"];

/// Whether `path` names a video container by its extension.
pub fn is_video(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    VIDEO_EXTS.contains(&ext.as_str())
}

/// `n` indices spread evenly over `0..total`, first and last included.
pub fn spread(total: usize, n: usize) -> Vec<usize> {
    if total == 0 || n == 0 {
        return Vec::new();
    }
    if n >= total {
        return (0..total).collect();
    }
    if n == 1 {
        return vec![0];
    }
    let mut v: Vec<usize> = (0..n)
        .map(|i| (i * (total - 1) + (n - 1) / 2) / (n - 1))
        .collect();
    v.dedup();
    v
}

/// The number of frames asked for, validated.
pub fn wanted(frames: Option<i64>) -> Result<usize, String> {
    match frames {
        None => Ok(DEFAULT_FRAMES),
        Some(n) if n < 1 => Err("frames must be 1 or more".into()),
        Some(n) if n as usize > MAX_FRAMES => Err(format!(
            "frames {n} is more than {MAX_FRAMES}; sample at most {MAX_FRAMES} frames a call"
        )),
        Some(n) => Ok(n as usize),
    }
}

fn frames_output(
    shown: &str,
    summary: String,
    frames: Vec<(f64, Vec<u8>)>,
) -> Result<ToolOutput, String> {
    let mut out = ToolOutput::ok(String::new());
    let mut lines = vec![summary];
    for (i, (t, png)) in frames.iter().enumerate() {
        let p = prepare_image(png, shown)?;
        lines.push(format!(
            "image {}: t = {t:.2} s ({}x{})",
            i + 1,
            p.width,
            p.height
        ));
        out.images.push(p.data_url);
    }
    lines.push("The frames are attached in this order; describe what changes between them.".into());
    out.text = lines.join("\n");
    Ok(out)
}

/// An animated GIF sampled into frames; `None` for a still GIF (read as one image).
pub fn read_gif(
    path: &Path,
    bytes: &[u8],
    frames: Option<i64>,
) -> Result<Option<ToolOutput>, String> {
    let shown = path.display().to_string();
    let decoder = image::codecs::gif::GifDecoder::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("{shown} could not be decoded as a GIF: {e}"))?;
    let all = decoder
        .into_frames()
        .collect_frames()
        .map_err(|e| format!("{shown}: a frame could not be decoded: {e}"))?;
    if all.len() <= 1 && frames.is_none() {
        return Ok(None);
    }
    let n = wanted(frames)?;
    let mut starts = Vec::with_capacity(all.len());
    let mut t = 0.0f64;
    for f in &all {
        starts.push(t);
        let (num, den) = f.delay().numer_denom_ms();
        t += num as f64 / den.max(1) as f64 / 1000.0;
    }
    let picked: Vec<(f64, Vec<u8>)> = spread(all.len(), n)
        .into_iter()
        .map(|i| {
            let mut png = std::io::Cursor::new(Vec::new());
            image::DynamicImage::ImageRgba8(all[i].buffer().clone())
                .write_to(&mut png, image::ImageFormat::Png)
                .map_err(|e| e.to_string())?;
            Ok((starts[i], png.into_inner()))
        })
        .collect::<Result<_, String>>()?;
    let (w, h) = all
        .first()
        .map(|f| f.buffer().dimensions())
        .unwrap_or((0, 0));
    let summary = format!(
        "Recording {shown}: animated GIF, {} frames, {t:.2} s, {w}x{h}; {} frame{} sampled.",
        all.len(),
        picked.len(),
        if picked.len() == 1 { "" } else { "s" }
    );
    frames_output(&shown, summary, picked).map(Some)
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(name).is_file()))
}

/// Runs a decoder with a time limit; its stdout.
fn run_capped(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ffmpeg: {e}"))?;
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = std::io::Read::read_to_end(s, &mut buf);
        }
        buf
    });
    let deadline = std::time::Instant::now() + FFMPEG_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let out = reader.join().unwrap_or_default();
                if !status.success() {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    }
                    return Err(err.lines().last().unwrap_or("failed").to_string());
                }
                return Ok(out);
            }
            Ok(None) if std::time::Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {} s", FFMPEG_TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// A video sampled into frames with ffmpeg.
pub fn read_video(path: &Path, frames: Option<i64>) -> Result<ToolOutput, String> {
    let shown = path.display().to_string();
    if !on_path("ffmpeg") || !on_path("ffprobe") {
        return Err(format!(
            "{shown} is a video: sampling its frames needs ffmpeg and ffprobe, which are not installed (Debian/Ubuntu: apt-get install ffmpeg; macOS: brew install ffmpeg). Animated GIFs are read without them."
        ));
    }
    let n = wanted(frames)?;
    let probe = run_capped(
        Command::new("ffprobe")
            .args([
                "-v",
                "error",
                "-show_entries",
                "format=duration",
                "-of",
                "default=noprint_wrappers=1:nokey=1",
            ])
            .arg(path),
    )
    .map_err(|e| format!("{shown} could not be read as a video (ffprobe: {e})"))?;
    let duration: f64 = String::from_utf8_lossy(&probe)
        .trim()
        .parse()
        .map_err(|_| format!("{shown}: ffprobe reports no duration; is it a video?"))?;
    let times: Vec<f64> = if n == 1 {
        vec![0.0]
    } else {
        // The last frame a little before the end, where a seek still finds a picture.
        let end = (duration - 0.05).max(0.0);
        (0..n).map(|i| end * i as f64 / (n - 1) as f64).collect()
    };
    let mut picked = Vec::new();
    for t in times {
        // A seek close to the end can land past the last picture: step back until one decodes.
        for back in [0.0, 0.25, 0.5, 1.0] {
            let at = (t - back).max(0.0);
            let png = frame_at(path, at, &shown)?;
            if !png.is_empty() {
                picked.push((at, png));
                break;
            }
        }
    }
    if picked.is_empty() {
        return Err(format!("{shown}: ffmpeg decoded no frame"));
    }
    let summary = format!(
        "Recording {shown}: video, {duration:.2} s; {} frame{} sampled.",
        picked.len(),
        if picked.len() == 1 { "" } else { "s" }
    );
    frames_output(&shown, summary, picked)
}

/// One PNG of the video at `t` seconds (empty when no picture is there).
fn frame_at(path: &Path, t: f64, shown: &str) -> Result<Vec<u8>, String> {
    run_capped(
        Command::new("ffmpeg")
            .args(["-v", "error", "-ss", &format!("{t:.3}"), "-i"])
            .arg(path)
            .args([
                "-frames:v",
                "1",
                "-vf",
                "scale='min(1568,iw)':-2",
                "-f",
                "image2pipe",
                "-vcodec",
                "png",
                "-",
            ]),
    )
    .map_err(|e| format!("{shown}: the frame at {t:.2} s could not be decoded (ffmpeg: {e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Delay, Frame, RgbaImage, codecs::gif::GifEncoder};

    fn gif(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut enc = GifEncoder::new(&mut out);
            for i in 0..n {
                let px = image::Rgba([(i * 20) as u8, 0, 0, 255]);
                let f = Frame::from_parts(
                    RgbaImage::from_pixel(8, 4, px),
                    0,
                    0,
                    Delay::from_numer_denom_ms(100, 1),
                );
                enc.encode_frame(f).unwrap();
            }
        }
        out
    }

    #[test]
    fn spread_keeps_first_and_last() {
        assert_eq!(spread(10, 3), vec![0, 5, 9]);
        assert_eq!(spread(3, 8), vec![0, 1, 2]);
        assert_eq!(spread(10, 1), vec![0]);
        assert_eq!(spread(0, 4), Vec::<usize>::new());
    }

    #[test]
    fn an_animated_gif_is_sampled_with_timestamps() {
        let out = read_gif(Path::new("rec.gif"), &gif(12), Some(4))
            .unwrap()
            .unwrap();
        assert_eq!(out.images.len(), 4);
        assert!(out.text.contains("12 frames, 1.20 s"), "{}", out.text);
        assert!(out.text.contains("image 4: t = 1.10 s"), "{}", out.text);
        assert!(
            read_gif(Path::new("still.gif"), &gif(1), None)
                .unwrap()
                .is_none()
        );
        assert!(wanted(Some(50)).unwrap_err().contains("at most 20"));
    }
}
