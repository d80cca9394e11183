//! The model key, kept in memory and out of `/proc/<pid>/environ` and `/proc/<pid>/cmdline`.
//!
//! Those two files show the process's *initial* environment and argument blocks, whatever
//! `unsetenv` did since: the strings stay where the kernel put them at `exec`. So once the
//! key is read, its bytes are overwritten in place there, and sessions opened afterwards get
//! the key from here instead of from `D2A_MODEL_API_KEY`.

use std::sync::Mutex;

static MODEL_KEY: Mutex<Option<String>> = Mutex::new(None);

/// Shorter values are only blanked where they are a whole value (`NAME=key`, `--x=key`,
/// an argument of its own), never inside a longer string.
const MIN_EMBEDDED: usize = 8;

/// The key handed to [`hide_model_key`], for sessions opened without an explicit one.
pub fn hidden_model_key() -> Option<String> {
    MODEL_KEY.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Remembers `key` for the sessions of this process and blanks every copy of it in the
/// process's initial environment and argument blocks. Returns how many places were blanked.
/// The caller also removes the variable from the live environment (`unsetenv`).
pub fn hide_model_key(key: Option<String>) -> usize {
    let Some(key) = key.filter(|k| !k.is_empty()) else {
        return 0;
    };
    *MODEL_KEY.lock().unwrap_or_else(|e| e.into_inner()) = Some(key.clone());
    let Some(blocks) = own_blocks() else {
        return 0;
    };
    let mut blanked = 0;
    for (start, end, kind) in blocks {
        if start == 0 || end <= start {
            continue;
        }
        let len = end - start;
        // SAFETY: [start, end) is this process's argument or environment block as the kernel
        // reports it in /proc/self/stat: mapped, writable memory at the top of the main
        // thread's stack that lives as long as the process. Bytes are read and written one by
        // one with volatile accesses; only bytes inside the block are touched.
        let read = |i: usize| unsafe { std::ptr::read_volatile((start + i) as *const u8) };
        let bytes: Vec<u8> = (0..len).map(read).collect();
        for range in key_ranges(&bytes, key.as_bytes(), kind) {
            for i in range {
                unsafe { std::ptr::write_volatile((start + i) as *mut u8, 0) };
            }
            blanked += 1;
        }
    }
    blanked
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Block {
    Args,
    Env,
}

/// `(start, end, kind)` of the argument and environment blocks, from /proc/self/stat.
fn own_blocks() -> Option<[(usize, usize, Block); 2]> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_blocks(&stat)
}

fn parse_blocks(stat: &str) -> Option<[(usize, usize, Block); 2]> {
    // Fields after the command name (which may hold spaces and parentheses) start at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<usize> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let field = |n: usize| fields.get(n - 3).copied();
    Some([
        (field(48)?, field(49)?, Block::Args),
        (field(50)?, field(51)?, Block::Env),
    ])
}

/// The byte ranges of `block` that hold `key`: whole environment values or arguments equal to
/// it, the value of `--flag=key`, and (for long keys) any embedded copy.
fn key_ranges(block: &[u8], key: &[u8], kind: Block) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut at = 0;
    for entry in block.split(|b| *b == 0) {
        let value_at = match kind {
            Block::Env => entry.iter().position(|b| *b == b'=').map(|p| p + 1),
            Block::Args if entry == key => Some(0),
            Block::Args => entry
                .iter()
                .position(|b| *b == b'=')
                .filter(|p| entry.starts_with(b"-") && &entry[p + 1..] == key)
                .map(|p| p + 1),
        };
        match value_at {
            Some(v) if &entry[v..] == key => out.push(at + v..at + entry.len()),
            _ if key.len() >= MIN_EMBEDDED => {
                let mut from = 0;
                while let Some(p) = find(&entry[from..], key) {
                    out.push(at + from + p..at + from + p + key.len());
                    from += p + key.len();
                }
            }
            _ => {}
        }
        at += entry.len() + 1;
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blank(block: &str, key: &str, kind: Block) -> String {
        let mut bytes = block.as_bytes().to_vec();
        for r in key_ranges(&bytes.clone(), key.as_bytes(), kind) {
            for i in r {
                bytes[i] = b'#';
            }
        }
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn environment_values_equal_to_the_key_are_blanked() {
        let env = "PATH=/bin\0D2A_MODEL_API_KEY=sk-secret-123\0OTHER=sk-secret-123\0X=1\0";
        assert_eq!(
            blank(env, "sk-secret-123", Block::Env),
            "PATH=/bin\0D2A_MODEL_API_KEY=#############\0OTHER=#############\0X=1\0"
        );
    }

    #[test]
    fn a_short_key_never_touches_other_values() {
        let env = "PATH=/bin:/usr/bin\0K=b\0HOME=/b\0";
        assert_eq!(
            blank(env, "b", Block::Env),
            "PATH=/bin:/usr/bin\0K=#\0HOME=/b\0"
        );
        let args = "python\0-b\0--key=b\0b\0ab\0";
        assert_eq!(
            blank(args, "b", Block::Args),
            "python\0-b\0--key=#\0#\0ab\0"
        );
    }

    #[test]
    fn arguments_holding_the_key_are_blanked() {
        let args = "python3\0entry.py\0--model-api-key\0sk-secret-123\0--out-dir\0o\0";
        assert_eq!(
            blank(args, "sk-secret-123", Block::Args),
            "python3\0entry.py\0--model-api-key\0#############\0--out-dir\0o\0"
        );
        let inline = "python3\0--model-api-key=sk-secret-123\0";
        assert_eq!(
            blank(inline, "sk-secret-123", Block::Args),
            "python3\0--model-api-key=#############\0"
        );
        let embedded = "bash\0-c\0curl -H 'k: sk-secret-123' x\0";
        assert_eq!(
            blank(embedded, "sk-secret-123", Block::Args),
            "bash\0-c\0curl -H 'k: #############' x\0"
        );
    }

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let mut stat = String::from("12 (we ird) name)) S");
        for n in 4..=52 {
            stat.push_str(&format!(" {n}"));
        }
        let blocks = parse_blocks(&stat).unwrap();
        assert_eq!(blocks[0], (48, 49, Block::Args));
        assert_eq!(blocks[1], (50, 51, Block::Env));
    }

    #[test]
    fn the_own_blocks_are_found() {
        let [(a0, a1, _), (e0, e1, _)] = own_blocks().unwrap();
        assert!(a0 > 0 && a1 > a0 && e0 >= a1 && e1 > e0);
    }
}
