//! Plan text and research accounting (seed 001), free of any session: `<proposed_plan>`
//! blocks taken from streamed or whole replies (`extract`), a plan's validation against the
//! template (`validate`), and the turn balancer's classification of calls (`navigation`).
//! The session side (approval, files, recovery passes) is `yuyao-core`'s `planning` module.

pub mod extract;
pub mod navigation;
pub mod validate;
