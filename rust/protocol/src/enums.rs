//! The closed value sets of the spec (modes, roles, switches), with their aliases.
//! Parsing lives here once so a flag, a slash command and agent_api agree.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

macro_rules! closed_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $canon:literal $(| $alias:literal)*),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name { $(#[serde(rename = $canon)] $variant),+ }

        impl $name {
            /// Every canonical spelling, in the spec's order.
            pub const ALL: &'static [&'static str] = &[$($canon),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $canon),+ }
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                let t = s.trim().to_ascii_lowercase().replace('_', "-");
                match t.as_str() {
                    $($canon $(| $alias)* => Ok($name::$variant),)+
                    _ => Err(format!(
                        "invalid {} '{}': expected one of {}",
                        stringify!($name).to_ascii_lowercase(), s, Self::ALL.join(", ")
                    )),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

closed_enum!(
    /// Permission mode (spec §3.1): five mutually exclusive levels.
    Mode {
        Ask => "ask" | "default",
        Plan => "plan",
        AutoEdit => "auto-edit" | "autoedit" | "accept-edits",
        AutoReview => "auto-review" | "autoreview" | "auto",
        Yolo => "yolo" | "bypass" | "bypass-permissions",
    }
);

closed_enum!(
    /// Role (spec §3.2), orthogonal to the mode.
    Role {
        Execute => "execute" | "code",
        Ask => "ask",
        Architect => "architect",
        Debug => "debug",
        Orchestrator => "orchestrator",
    }
);

closed_enum!(
    /// OS isolation level (spec §3.3).
    SandboxLevel {
        ReadOnly => "read-only",
        WorkspaceWrite => "workspace-write",
        FullAccess => "full-access",
    }
);

closed_enum!(
    /// Whether tools may reach the network (spec §3.3; default off).
    NetworkAccess {
        On => "on" | "true" | "enabled",
        Off => "off" | "false" | "disabled",
    }
);

closed_enum!(
    /// How thinking is displayed (spec §5.5). Independent of the thinking budget.
    ShowThinking {
        Off => "off",
        Collapsed => "collapsed",
        Expanded => "expanded",
    }
);

closed_enum!(
    /// Reasoning budget (spec §4 `--thinking`, `/think`).
    ThinkingLevel {
        Off => "off",
        Low => "low",
        Medium => "medium",
        High => "high",
        Max => "max",
    }
);

closed_enum!(
    /// How readily the agent asks before guessing (seed 000 behaviour 1).
    Curiosity {
        Low => "low",
        Normal => "normal",
        High => "high",
    }
);

impl Mode {
    /// Plan mode forbids every change to the workspace.
    pub fn is_read_only(self) -> bool {
        matches!(self, Mode::Plan)
    }
}

impl Role {
    /// The ask role answers only: zero modifications.
    pub fn is_read_only(self) -> bool {
        matches!(self, Role::Ask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve_to_canonical() {
        assert_eq!("auto_edit".parse::<Mode>().unwrap(), Mode::AutoEdit);
        assert_eq!("YOLO".parse::<Mode>().unwrap(), Mode::Yolo);
        assert_eq!(Mode::AutoReview.to_string(), "auto-review");
        assert!("nope".parse::<Role>().unwrap_err().contains("execute"));
    }

    #[test]
    fn serde_uses_canonical_names() {
        let v = serde_json::to_string(&SandboxLevel::WorkspaceWrite).unwrap();
        assert_eq!(v, "\"workspace-write\"");
    }
}
