//! The front's side of the protocol: it renders events and answers requests. A session
//! without a handler renders nothing and answers requests from the mode.

use yuyao_protocol::{Event, Request};

pub trait Handler: Send + Sync {
    fn event(&self, event: &Event);
    /// Asks a human. `None` means nobody answered (the core then refuses or proceeds
    /// without an answer, and tells the model).
    fn request(&self, request: &Request) -> Option<String>;
}
