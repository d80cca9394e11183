//! A minimal Language Server Protocol client (`client`: JSON-RPC over a child's stdio) and
//! which server speaks a file's language (`servers`). Starting servers under the sandbox,
//! the `lsp` tool and diagnostics after edits are `yuyao-core`'s `lsp` module.

pub mod client;
pub mod servers;
