//! The spawn helper of yuyao's OS sandbox, and what yuyao and the helper share.
//!
//! Forking yuyao to start a confined command copies the page tables of the whole host
//! process (a Python program embedding yuyao may hold gigabytes): ~19 ms per GB, per command.
//! Instead yuyao starts this small executable with `posix_spawn` (vfork semantics: nothing is
//! copied) and sends it the prepared confinement over its stdin, a Unix socket ([`channel`]):
//! the [`wire::Request`] (command, environment, working directory, seccomp program, which
//! parent to die with) and the descriptors it needs (the Landlock ruleset, the namespaces to
//! join). The helper applies them to itself ([`confine::confine_self`], the same code yuyao's
//! fork path runs between fork and exec) and then `exec`s the command. Any failure before the
//! `exec` is reported back on the socket, so yuyao refuses the command as before; a successful
//! `exec` closes the socket (close-on-exec).
//!
//! The helper also creates the namespace holders ([`holder`]) the same way, so that neither a
//! command nor a new namespace ever forks yuyao.

pub mod channel;
pub mod confine;
pub mod holder;
pub mod wire;
