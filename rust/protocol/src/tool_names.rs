//! Tool name spellings models use, folded to the advertised names.

/// The advertised name of a built-in tool for any spelling a model may use: case-insensitive,
/// `_`/`-` folded, and the Claude Code names (DESIGN §3). `None` for an unknown name.
pub fn canonical_tool_name(name: &str) -> Option<&'static str> {
    let folded: String = name
        .trim()
        .chars()
        .filter(|c| *c != '_' && *c != '-' && *c != ' ')
        .flat_map(char::to_lowercase)
        .collect();
    Some(match folded.as_str() {
        "bash" | "shell" | "exec" | "execcommand" | "run" | "runcommand" => "bash",
        "read" | "readfile" | "view" => "read",
        "write" | "writefile" | "createfile" => "write",
        "edit" | "editfile" | "strreplace" | "strreplaceeditor" => "edit",
        "multiedit" => "multi-edit",
        "applypatch" | "patch" => "apply-patch",
        "grep" | "search" | "codesearch" => "grep",
        "glob" | "findfiles" => "glob",
        "webfetch" | "fetch" => "web-fetch",
        "websearch" => "web-search",
        "browser" => "browser",
        "readmedia" | "readimage" => "read-media",
        "lsp" => "lsp",
        "notebookedit" => "notebook-edit",
        "monitor" => "monitor",
        "todo" | "todowrite" | "tasklist" | "tasktracker" => "todo",
        "startplanning" | "enterplanmode" => "start_planning",
        "task" | "agent" | "subagent" => "task",
        "team" => "team",
        "bglist" => "bg-list",
        "bgoutput" | "bashoutput" => "bg-output",
        "bgstop" | "killshell" | "killbash" => "bg-stop",
        "memorysearch" => "memory-search",
        "memoryget" => "memory-get",
        "askuser" | "askuserquestion" | "requestuserinput" => "ask-user",
        "declarescope" => "declare-scope",
        "skill" | "loadskill" => "skill",
        "toolsearch" | "loadtools" => "tool-search",
        _ => return None,
    })
}
