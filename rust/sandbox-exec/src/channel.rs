//! The socket between yuyao and the helper (a `SOCK_STREAM` Unix socket pair; the helper's
//! end is its stdin): the request goes one way with its descriptors (`SCM_RIGHTS`, attached
//! to the first bytes), a [`Failure`] or nothing (the `exec` closed the socket) comes back.

use crate::confine::Failure;
use crate::wire::{MAX_LEN, Request};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The most descriptors a request carries (ruleset, user and mount namespaces).
pub const MAX_FDS: usize = 3;

/// A connected pair, both ends close-on-exec: (yuyao's end, the helper's stdin).
pub fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills the array on success.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two fresh descriptors we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn cmsg_space() -> usize {
    // SAFETY: a pure size computation.
    unsafe { libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<RawFd>()) as u32) as usize }
}

/// Sends the encoded request, the descriptors attached to its first bytes.
pub fn send(sock: BorrowedFd<'_>, bytes: &[u8], fds: &[RawFd]) -> io::Result<()> {
    assert!(fds.len() <= MAX_FDS);
    let mut cbuf = vec![0u8; cmsg_space()];
    let mut sent = 0;
    while sent < bytes.len() {
        let mut iov = libc::iovec {
            iov_base: bytes[sent..].as_ptr() as *mut libc::c_void,
            iov_len: bytes.len() - sent,
        };
        // SAFETY: a zeroed msghdr is valid; the pointers below outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if sent == 0 && !fds.is_empty() {
            let len = std::mem::size_of_val(fds);
            // SAFETY: the control buffer has room for one header and MAX_FDS descriptors.
            unsafe {
                msg.msg_control = cbuf.as_mut_ptr().cast();
                msg.msg_controllen = libc::CMSG_SPACE(len as u32) as _;
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(len as u32) as _;
                std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(c), len);
            }
        }
        // SAFETY: msg describes live buffers; MSG_NOSIGNAL: a gone helper is an error, not a
        // SIGPIPE.
        let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        sent += n as usize;
    }
    Ok(())
}

/// The helper's side: reads one record from `fd` with the descriptors that came with it
/// (close-on-exec). `Err` is an `errno`.
pub fn receive(fd: RawFd) -> Result<(Vec<u8>, Vec<OwnedFd>), i32> {
    let mut bytes: Vec<u8> = Vec::new();
    let mut fds: Vec<OwnedFd> = Vec::new();
    let mut want = 8usize;
    let mut cbuf = vec![0u8; cmsg_space()];
    let mut chunk = vec![0u8; 64 * 1024];
    while bytes.len() < want {
        let room = (want - bytes.len()).min(chunk.len());
        let mut iov = libc::iovec {
            iov_base: chunk.as_mut_ptr().cast(),
            iov_len: room,
        };
        // SAFETY: a zeroed msghdr is valid; the buffers outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        // usize with glibc, u32 with musl (the helper may be built for either).
        #[allow(clippy::unnecessary_cast)]
        {
            msg.msg_controllen = cbuf.len() as _;
        }
        // SAFETY: msg describes live buffers.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e.raw_os_error().unwrap_or(libc::EIO));
        }
        // SAFETY: walking the control messages the kernel wrote into cbuf.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c);
                    let n = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                        / std::mem::size_of::<RawFd>();
                    for i in 0..n {
                        let raw = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                        fds.push(OwnedFd::from_raw_fd(raw));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(libc::EMSGSIZE);
        }
        if n == 0 {
            return Err(libc::EPIPE);
        }
        bytes.extend_from_slice(&chunk[..n as usize]);
        if bytes.len() >= 8 && want == 8 {
            want = Request::announced_len(&bytes).ok_or(libc::EINVAL)?;
            if want > MAX_LEN {
                return Err(libc::E2BIG);
            }
        }
    }
    Ok((bytes, fds))
}

/// [`receive`] of an exec request, its descriptors checked against it.
pub fn receive_exec(bytes: &[u8], fds: &[OwnedFd]) -> Result<Request, i32> {
    let req = Request::decode(bytes).ok_or(libc::EINVAL)?;
    if fds.len() != req.fd_count() {
        return Err(libc::EBADF);
    }
    Ok(req)
}

/// yuyao's side, after the spawn: `Ok(None)` once the helper exec'd (the socket closed
/// without a word), `Ok(Some(f))` when it failed before.
pub fn read_report(sock: BorrowedFd<'_>) -> io::Result<Option<Failure>> {
    let mut buf = [0u8; 8];
    let mut got = 0;
    loop {
        // SAFETY: reading into our buffer.
        let n = unsafe {
            libc::read(
                sock.as_raw_fd(),
                buf[got..].as_mut_ptr().cast(),
                buf.len() - got,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        got += n as usize;
        if got == buf.len() {
            break;
        }
    }
    match got {
        0 => Ok(None),
        _ => Failure::from_bytes(&buf[..got])
            .map(Some)
            .ok_or_else(|| io::Error::other("the sandbox helper sent a malformed report")),
    }
}

/// The helper's report of a failure (best effort: yuyao also sees the exit status).
pub fn report(sock: RawFd, f: Failure) {
    let m = f.to_bytes();
    // SAFETY: a write of our stack buffer.
    unsafe { libc::write(sock, m.as_ptr().cast(), m.len()) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::fd::AsFd;

    #[test]
    fn a_request_and_its_descriptors_cross_the_socket() {
        let (ours, theirs) = pair().unwrap();
        let file = std::fs::File::open("/dev/null").unwrap();
        let big = "x".repeat(300 * 1024); // more than one socket buffer
        let req = Request {
            landlock: true,
            cwd: CString::new("/").unwrap(),
            program: CString::new("bash").unwrap(),
            env: vec![CString::new(format!("BIG={big}")).unwrap()],
            ..Default::default()
        };
        let bytes = req.encode();
        let raw = file.as_raw_fd();
        let sender = std::thread::spawn(move || send(ours.as_fd(), &bytes, &[raw]).map(|_| ours));
        let (bytes, fds) = receive(theirs.as_raw_fd()).unwrap();
        let got = receive_exec(&bytes, &fds).unwrap();
        let ours = sender.join().unwrap().unwrap();
        assert_eq!(got, req);
        assert_eq!(fds.len(), 1);
        // The descriptor is a new one for the same open file.
        let meta = |fd: RawFd| std::fs::metadata(format!("/proc/self/fd/{fd}")).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(meta(fds[0].as_raw_fd()).ino(), meta(raw).ino());
        drop(file);
        // A report, then EOF.
        report(
            theirs.as_raw_fd(),
            Failure::from_bytes(&[6, 1, 0, 0, 0]).unwrap(),
        );
        drop(theirs);
        let f = read_report(ours.as_fd()).unwrap().unwrap();
        assert_eq!(f.errno, 1);
    }

    #[test]
    fn a_missing_descriptor_is_refused() {
        let (ours, theirs) = pair().unwrap();
        let req = Request {
            mnt_ns: true,
            cwd: CString::new("/").unwrap(),
            program: CString::new("bash").unwrap(),
            ..Default::default()
        };
        send(ours.as_fd(), &req.encode(), &[]).unwrap();
        let (bytes, fds) = receive(theirs.as_raw_fd()).unwrap();
        assert_eq!(receive_exec(&bytes, &fds).unwrap_err(), libc::EBADF);
        // Garbage is refused too.
        let (ours, theirs) = pair().unwrap();
        send(ours.as_fd(), b"GET / HTTP/1.0\r\n\r\n", &[]).unwrap();
        assert_eq!(receive(theirs.as_raw_fd()).unwrap_err(), libc::EINVAL);
    }
}
