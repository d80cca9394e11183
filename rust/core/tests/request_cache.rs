//! The main loop's requests built incrementally (`yuyao_model::RequestCache`, with the
//! repo-map notes of `yuyao_repomap::Maps` the session places in them) are the requests one
//! pass over the whole history builds, to the byte, through every way the session changes
//! its history (DESIGN §4).

use yuyao_model::history::History;
use yuyao_model::view::request_tokens;
use yuyao_model::{ChatRequest, RequestCache, build_request_owned, request_view, tool_search};
use yuyao_protocol::{Message, ToolCall};
use yuyao_repomap::Maps;

fn step(h: &mut Vec<Message>, k: usize, chars: usize) {
    let mut a = Message::assistant("");
    a.tool_calls = vec![ToolCall {
        id: format!("c{k}"),
        name: "read".into(),
        arguments: "{}".into(),
    }];
    h.push(a);
    h.push(Message::tool(format!("c{k}"), "x".repeat(chars)));
}

/// A small deterministic generator (xorshift), so the scenarios below replay the same.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// How many messages of the history the cache has settled.
fn settled(cache: &RequestCache) -> usize {
    cache.settled()
}

/// The repo-map notes as the session hands them to the cache.
fn notes<'m>(maps: &'m Maps, h: &'m History) -> Vec<(usize, &'m str)> {
    maps.live(h).map(|n| (n.at, n.text.as_str())).collect()
}

/// The request built in one pass over the whole history, as the session's
/// `assemble_request` does.
fn from_scratch(
    history: &[Message],
    maps: &Maps,
    system: &str,
    batch: usize,
    (sent, deferred): (&[serde_json::Value], &[serde_json::Value]),
) -> ChatRequest {
    let (view, _) = request_view(history, batch);
    let view = maps.insert_into(history, view);
    let tools = tool_search::with_loaded(sent.to_vec(), deferred, history);
    build_request_owned(system, view, tools, false, None)
}

fn wire(client: &yuyao_model::ModelClient, req: &ChatRequest, hints: bool) -> Vec<u8> {
    let mut req = req.clone();
    req.cache_hints = hints;
    client.body_bytes(&req)
}

/// One random change of the history, as the session makes them: prompts, notes, calls
/// and their results (big ones get stubbed; some missing, stray, duplicated or with
/// empty ids), answers, and the rewrites — /undo, a compaction, a rewind — and repo maps.
fn change(rng: &mut Rng, h: &mut History, maps: &mut Maps, k: usize) {
    let big = |rng: &mut Rng| "é\"x\u{1}".repeat(1 + rng.below(900) as usize);
    match rng.below(100) {
        0..=39 => {
            let n = 1 + rng.below(3) as usize;
            let mut a = Message::assistant(if rng.below(3) == 0 { "why" } else { "" });
            a.tool_calls = (0..n)
                .map(|j| ToolCall {
                    id: match rng.below(12) {
                        0 => String::new(),
                        1 => "dup".into(),
                        _ => format!("c{k}_{j}"),
                    },
                    name: ["read", "bash", "", "tool-search"][rng.below(4) as usize].into(),
                    arguments: [
                        "{}",
                        "{\"a\":\"\\u0000\"}",
                        "not json",
                        "{\"names\":[\"lsp\"]}",
                        "{\"names\":\"web-fetch, nope\"}",
                    ][rng.below(5) as usize]
                        .into(),
                })
                .collect();
            let ids: Vec<String> = a.tool_calls.iter().map(|c| c.id.clone()).collect();
            h.push(a);
            for id in ids {
                if rng.below(10) > 0 {
                    let text = if rng.below(2) == 0 {
                        big(rng)
                    } else {
                        "ok".into()
                    };
                    h.push(Message::tool(id, text));
                }
            }
        }
        40..=49 => h.push(Message::user("[intent] state a reason before each batch")),
        50..=57 => h.push(Message::user(format!("task {k}"))),
        58..=63 => h.push(Message::assistant(format!("done {k}"))),
        64..=65 => h.push(Message::tool("stray", big(rng))),
        66 => h.push(Message::system("a system note")),
        67 => h.push(Message::user("")),
        68..=70 if !h.is_empty() => {
            // /undo, a rewind
            let keep = rng.below(h.len() as u64) as usize;
            h.truncate(keep);
            maps.truncate(keep);
        }
        71 if h.len() > 4 => {
            // A compaction: a summary and the last messages.
            let tail = h.split_off(h.len() - 3);
            h.replace(
                std::iter::once(Message::user("summary"))
                    .chain(tail)
                    .collect(),
            );
            maps.truncate(0);
        }
        76 if !h.is_empty() => {
            // /clear, then a new prompt.
            h.clear();
            maps.truncate(0);
            h.push(Message::user(format!("task {k}")));
        }
        72..=74 => {
            let map = format!("[repo map {k}]");
            if rng.below(2) == 0 {
                maps.record_after(h, map);
            } else if !h.is_empty() {
                let at = h.len() - 1;
                maps.record(h, at, map);
            }
        }
        75 if !h.is_empty() => {
            // A message rewritten in place (a resumed or edited session).
            let i = rng.below(h.len() as u64) as usize;
            h.rewrite()[i] = Message::user(format!("rewritten {k}"));
        }
        _ => h.push(Message::assistant("")),
    }
}

/// The main loop's requests, built from the cache as the history grows and is rewritten,
/// are the one-pass requests to the byte: the body sent, with and without cache hints,
/// and the messages and characters counted.
#[test]
fn cached_requests_are_the_one_pass_requests_to_the_byte() {
    let client = yuyao_model::ModelClient::new(yuyao_model::ModelConfig::new(
        "http://127.0.0.1:9/v1",
        "m",
        "",
    ))
    .unwrap();
    let tools = vec![serde_json::json!({"type": "function", "function": {"name": "read"}})];
    let deferred = vec![
        serde_json::json!({"type": "function", "function": {"name": "lsp"}}),
        serde_json::json!({"type": "function", "function": {"name": "web-fetch"}}),
    ];
    let mut rebuilt_steps = 0;
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut h = History::default();
        let mut maps = Maps::default();
        let mut cache = RequestCache::default();
        // Small batches, so that old results are stubbed in several batches.
        let mut batch = 3000 + rng.below(3) as usize * 2000;
        for k in 0..150 {
            // Sometimes several changes between two requests: a rewrite followed by
            // appends that bring the history back to its length or past it.
            for _ in 0..if rng.below(4) == 0 { 3 } else { 1 } {
                change(&mut rng, &mut h, &mut maps, k);
            }
            if rng.below(60) == 0 {
                batch += 1000; // the window or threshold changed (hot reload)
            }
            let system = if rng.below(40) == 0 { "" } else { "sys" };
            let before = settled(&cache);
            let defer: &[serde_json::Value] = if seed % 2 == 0 { &deferred } else { &[] };
            let got = cache.request(&h, &notes(&maps, &h), system, batch, (tools.clone(), defer));
            if settled(&cache) < before {
                rebuilt_steps += 1;
            }
            let want = from_scratch(&h, &maps, system, batch, (&tools, defer));
            for hints in [false, true] {
                assert_eq!(
                    String::from_utf8_lossy(&wire(&client, &got, hints)),
                    String::from_utf8_lossy(&wire(&client, &want, hints)),
                    "seed {seed}, step {k}, hints {hints}"
                );
            }
            let all: Vec<&Message> = got.all_messages().collect();
            assert_eq!(all, want.messages.iter().collect::<Vec<_>>());
            assert_eq!(got.message_count(), want.messages.len());
            assert_eq!(request_tokens(&got), request_tokens(&want));
            assert_eq!(got.clone().into_flat().messages, want.messages);
            assert!(settled(&cache) <= h.len());
        }
    }
    assert!(
        rebuilt_steps > 50,
        "the rewrites were exercised: {rebuilt_steps}"
    );
}

/// In a long silent session the cache settles all but the last few messages, so a step
/// views, sanitizes and serializes only what it added.
#[test]
fn a_growing_history_is_settled_up_to_its_last_step() {
    let mut h = History::from(vec![Message::user("task")]);
    let mut cache = RequestCache::default();
    let maps = Maps::default();
    for k in 0..300 {
        let mut added = Vec::new();
        step(&mut added, k, 40);
        h.extend(added);
        h.push(Message::user("[intent] state a reason before each batch"));
        let req = cache.request(&h, &notes(&maps, &h), "sys", 16_000, (Vec::new(), &[]));
        assert!(req.messages.len() <= 4, "step {k}: {}", req.messages.len());
        assert!(h.len() - settled(&cache) <= 1, "step {k}");
        assert_eq!(req.message_count(), h.len() + 1);
    }
}
