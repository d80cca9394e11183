//! What yuyao sends the helper: a length-prefixed binary record (no parser dependency, and
//! nothing in it is interpreted by a shell or an environment variable).
//!
//! Layout (integers little endian): `YSX1`, total length (u32), kind (u8: [`EXEC`] or
//! [`HOLD`], see `holder.rs`), then the body. An exec request: flags (u8), parent pid (i32),
//! filter length (u32) and 8 bytes per BPF instruction, then the working directory, the
//! program, the arguments and the environment (`KEY=value`) as length-prefixed byte strings,
//! the last two preceded by their count.

use std::ffi::CString;

/// One classic BPF instruction (`struct sock_filter`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SockFilter {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

const MAGIC: &[u8; 4] = b"YSX1";
/// Far above what `execve` accepts (argv + environment are limited to a few MB).
pub const MAX_LEN: usize = 64 << 20;

/// Start a command confined ([`Request`]).
pub const EXEC: u8 = 1;
/// Become a namespace holder (`holder::HolderPlan`).
pub const HOLD: u8 = 2;

const F_NO_NEW_PRIVS: u8 = 1;
const F_LANDLOCK: u8 = 2;
const F_USER_NS: u8 = 4;
const F_MNT_NS: u8 = 8;
const F_STDIN: u8 = 16;

/// The prepared confinement and the command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    /// yuyao's pid: the helper dies with it and refuses to run if yuyao is already gone.
    /// 0 when the helper is born in a PID namespace (its parent is outside: `getppid()` is 0).
    pub parent: i32,
    pub no_new_privs: bool,
    /// Descriptors that come with the request, in this order: the Landlock ruleset, the user
    /// namespace, the mount namespace, the command's stdin (else /dev/null).
    pub landlock: bool,
    pub user_ns: bool,
    pub mnt_ns: bool,
    pub stdin: bool,
    /// The seccomp program (empty: none).
    pub filter: Vec<SockFilter>,
    pub cwd: CString,
    /// Run as given when it contains a `/`, else looked up in the `PATH` of `env`.
    pub program: CString,
    pub argv: Vec<CString>,
    pub env: Vec<CString>,
}

impl Request {
    /// How many descriptors come with the request.
    pub fn fd_count(&self) -> usize {
        [self.landlock, self.user_ns, self.mnt_ns, self.stdin]
            .iter()
            .filter(|b| **b)
            .count()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = begin(EXEC);
        let mut flags = 0;
        for (on, bit) in [
            (self.no_new_privs, F_NO_NEW_PRIVS),
            (self.landlock, F_LANDLOCK),
            (self.user_ns, F_USER_NS),
            (self.mnt_ns, F_MNT_NS),
            (self.stdin, F_STDIN),
        ] {
            if on {
                flags |= bit;
            }
        }
        out.push(flags);
        out.extend_from_slice(&self.parent.to_le_bytes());
        out.extend_from_slice(&(self.filter.len() as u32).to_le_bytes());
        for f in &self.filter {
            out.extend_from_slice(&f.code.to_le_bytes());
            out.push(f.jt);
            out.push(f.jf);
            out.extend_from_slice(&f.k.to_le_bytes());
        }
        put_bytes(&mut out, self.cwd.as_bytes());
        put_bytes(&mut out, self.program.as_bytes());
        put_list(&mut out, &self.argv);
        put_list(&mut out, &self.env);
        finish(out)
    }

    /// The total length announced by a record's first 8 bytes.
    pub fn announced_len(head: &[u8]) -> Option<usize> {
        if head.len() < 8 || &head[..4] != MAGIC {
            return None;
        }
        let n = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        (9..=MAX_LEN).contains(&n).then_some(n)
    }

    pub fn decode(bytes: &[u8]) -> Option<Request> {
        let mut r = Reader::open(bytes, EXEC)?;
        let flags = r.take(1)?[0];
        let parent = i32::from_le_bytes(r.take(4)?.try_into().ok()?);
        let n = r.u32()? as usize;
        if n > 4096 {
            return None; // the kernel's BPF_MAXINSNS
        }
        let mut filter = Vec::with_capacity(n);
        for _ in 0..n {
            let b = r.take(8)?;
            filter.push(SockFilter {
                code: u16::from_le_bytes([b[0], b[1]]),
                jt: b[2],
                jf: b[3],
                k: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            });
        }
        let cwd = r.cstring()?;
        let program = r.cstring()?;
        let argv = r.list()?;
        let env = r.list()?;
        if !r.done() || program.as_bytes().is_empty() {
            return None;
        }
        Some(Request {
            parent,
            no_new_privs: flags & F_NO_NEW_PRIVS != 0,
            landlock: flags & F_LANDLOCK != 0,
            user_ns: flags & F_USER_NS != 0,
            mnt_ns: flags & F_MNT_NS != 0,
            stdin: flags & F_STDIN != 0,
            filter,
            cwd,
            program,
            argv,
            env,
        })
    }
}

/// The kind of a complete record.
pub fn kind(bytes: &[u8]) -> Option<u8> {
    (Request::announced_len(bytes)? == bytes.len()).then(|| bytes[8])
}

pub(crate) fn begin(kind: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[0; 4]);
    out.push(kind);
    out
}

pub(crate) fn finish(mut out: Vec<u8>) -> Vec<u8> {
    let total = out.len() as u32;
    out[4..8].copy_from_slice(&total.to_le_bytes());
    out
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s);
}

pub(crate) fn put_list(out: &mut Vec<u8>, list: &[CString]) {
    out.extend_from_slice(&(list.len() as u32).to_le_bytes());
    for s in list {
        put_bytes(out, s.as_bytes());
    }
}

pub(crate) struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader of a complete record of `kind`, past its header.
    pub(crate) fn open(bytes: &'a [u8], want: u8) -> Option<Reader<'a>> {
        (kind(bytes)? == want).then_some(Reader { b: bytes, at: 9 })
    }
    pub(crate) fn done(&self) -> bool {
        self.at == self.b.len()
    }
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.b.get(self.at..end)?;
        self.at = end;
        Some(s)
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub(crate) fn cstring(&mut self) -> Option<CString> {
        CString::new(self.bytes()?).ok()
    }
    pub(crate) fn list(&mut self) -> Option<Vec<CString>> {
        let n = self.u32()? as usize;
        // Each entry takes at least its 4-byte length: a count beyond that is a lie.
        if n > (self.b.len() - self.at) / 4 {
            return None;
        }
        (0..n).map(|_| self.cstring()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Request {
        Request {
            parent: 4242,
            no_new_privs: true,
            landlock: true,
            user_ns: false,
            mnt_ns: true,
            stdin: false,
            filter: vec![SockFilter {
                code: 6,
                jt: 1,
                jf: 2,
                k: 0x7fff_0000,
            }],
            cwd: CString::new("/work dir").unwrap(),
            program: CString::new("bash").unwrap(),
            argv: vec![
                CString::new("bash").unwrap(),
                CString::new("-c").unwrap(),
                CString::new("echo 'a b'").unwrap(),
            ],
            env: vec![CString::new("PATH=/usr/bin:/bin").unwrap()],
        }
    }

    #[test]
    fn round_trips() {
        let r = sample();
        let bytes = r.encode();
        assert_eq!(Request::announced_len(&bytes), Some(bytes.len()));
        assert_eq!(Request::decode(&bytes), Some(r.clone()));
        assert_eq!(r.fd_count(), 2);
        let piped = Request { stdin: true, ..r };
        assert_eq!(Request::decode(&piped.encode()), Some(piped.clone()));
        assert_eq!(piped.fd_count(), 3);
    }

    #[test]
    fn refuses_truncated_padded_or_forged_records() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert_eq!(Request::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(Request::decode(&long), None);
        let mut forged = bytes.clone();
        forged[0] = b'X';
        assert_eq!(Request::decode(&forged), None);
        // A count far larger than the record.
        let mut huge = Request {
            argv: vec![],
            env: vec![],
            ..sample()
        }
        .encode();
        let at = huge.len() - 8;
        huge[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Request::decode(&huge), None);
    }
}
