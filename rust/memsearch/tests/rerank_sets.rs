//! The measurement behind `RERANK_STATIC_WEIGHT` and `RERANK_K` (docs/memory.md, "The
//! re-ranking encoder"): recall@3 and MRR on the four bench sets (benches/memory_*.json) of the
//! static hybrid, the encoder alone, and the hybrid's top K entries re-ordered by the encoder's
//! cosine alone, plus the lexical lift, plus a weight of the static score, or by rank fusion of
//! the two orders. Needs the encoder package (`YUYAO_MEMORY_ENCODER_DIR`); run with
//! `cargo test --release -p yuyao-memsearch --test rerank_sets -- --ignored --nocapture`.

use std::path::Path;
use yuyao_memsearch::{MemorySearch, Provider, Ranking, embed, encoder, search};

const KS: [usize; 4] = [10, 20, 30, 50];

const RRF: [f32; 4] = [2.0, 5.0, 20.0, 60.0];

const SETS: [&str; 4] = [
    "memory_paraphrase",
    "memory_heldout",
    "memory_heldout2",
    "memory_heldout3",
];

#[test]
#[ignore = "a measurement (seconds in release): run it by name with --ignored"]
fn recall_of_the_rankings_on_the_bench_sets() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    embed::set_package_model_dir(root.join("python/yuyao/models/memory-embed"));
    let enc =
        encoder::local_encoder().expect("set YUYAO_MEMORY_ENCODER_DIR to the encoder package");
    let weights = [0.0f32, 0.1, 0.25, 0.5, 1.0];
    for set in SETS {
        let data: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(root.join(format!("benches/{set}.json"))).unwrap(),
        )
        .unwrap();
        let d = tempfile::tempdir().unwrap();
        let (home, project) = (d.path().join("home"), d.path().join("p"));
        std::fs::create_dir_all(&project).unwrap();
        let notes = data["notes"].as_array().unwrap();
        let body: String = notes
            .iter()
            .map(|n| format!("- {}\n", n["text"].as_str().unwrap()))
            .collect();
        std::fs::write(project.join("MEMORY.md"), body).unwrap();
        let ms = MemorySearch::new(
            yuyao_store::memory::Layout::new(&home, &project, None),
            &home,
            Provider::Local,
        );
        let s = ms.searcher().unwrap();
        let ids: Vec<&str> = notes.iter().map(|n| n["id"].as_str().unwrap()).collect();
        let slot_of = |id: &str| {
            let text = notes[ids.iter().position(|x| *x == id).unwrap()]["text"]
                .as_str()
                .unwrap();
            (0..s.len()).find(|&i| s.text(i) == text).unwrap()
        };
        let all_vecs: Vec<Vec<f32>> = (0..s.len()).map(|i| enc.encode(s.text(i))).collect();
        let mut hits = vec![(0usize, 0f32); 2 + weights.len() + RRF.len() + 2 * KS.len()];
        let mut in_top = 0;
        let queries = data["queries"].as_array().unwrap();
        for q in queries {
            let (text, want) = (
                q["q"].as_str().unwrap(),
                slot_of(q["note"].as_str().unwrap()),
            );
            let qv = embed::embed_all(&Provider::Local, &[text.to_string()], &s.index.terms)
                .unwrap()
                .and_then(|mut v| v.pop());
            let ranked = s.ranked(text, qv.as_deref(), Ranking::Hybrid);
            let qe = enc.encode(text);
            if ranked
                .iter()
                .take(search::RERANK_K)
                .any(|&(i, _)| i == want)
            {
                in_top += 1;
            }
            let mut alone: Vec<(usize, f32)> = (0..s.len())
                .map(|i| (i, embed::cosine(&qe, &all_vecs[i])))
                .collect();
            alone.sort_by(|a, b| b.1.total_cmp(&a.1));
            let mut lists = vec![ranked.clone(), alone];
            for w in weights {
                let head: Vec<f32> = ranked
                    .iter()
                    .take(search::RERANK_K)
                    .map(|&(i, _)| embed::cosine(&qe, &all_vecs[i]))
                    .collect();
                lists.push(search::rerank(ranked.clone(), &head, w));
            }
            let lift: std::collections::HashMap<usize, f32> =
                s.lexical_lift(text).into_iter().collect();
            for c in RRF {
                let head: Vec<f32> = ranked
                    .iter()
                    .take(search::RERANK_K)
                    .map(|&(i, _)| embed::cosine(&qe, &all_vecs[i]))
                    .collect();
                let mut order: Vec<usize> = (0..head.len()).collect();
                order.sort_by(|&a, &b| head[b].total_cmp(&head[a]));
                let mut fused = vec![0f32; head.len()];
                for (enc_rank, &pos) in order.iter().enumerate() {
                    fused[pos] = 1.0 / (c + enc_rank as f32 + 1.0) + 1.0 / (c + pos as f32 + 1.0);
                }
                lists.push(search::rerank(ranked.clone(), &fused, 0.0));
            }
            for k in KS {
                let head: Vec<f32> = ranked
                    .iter()
                    .take(k)
                    .map(|&(i, _)| embed::cosine(&qe, &all_vecs[i]))
                    .collect();
                lists.push(search::rerank(ranked.clone(), &head, 0.0));
                let lifted: Vec<f32> = ranked
                    .iter()
                    .take(k)
                    .zip(&head)
                    .map(|(&(i, _), c)| c + lift.get(&i).copied().unwrap_or(0.0))
                    .collect();
                lists.push(search::rerank(ranked.clone(), &lifted, 0.0));
            }
            for (h, list) in hits.iter_mut().zip(&lists) {
                if let Some(pos) = list.iter().position(|&(i, _)| i == want) {
                    h.1 += 1.0 / (pos + 1) as f32;
                    if pos < 3 {
                        h.0 += 1;
                    }
                }
            }
        }
        let n = queries.len() as f32;
        let mut names = vec!["static hybrid".to_string(), "encoder alone".to_string()];
        names.extend(
            weights
                .iter()
                .map(|w| format!("top {}, static weight {w}", search::RERANK_K)),
        );
        for c in RRF {
            names.push(format!("top {}, rank fusion c={c}", search::RERANK_K));
        }
        for k in KS {
            names.push(format!("top {k} by encoder"));
            names.push(format!("top {k} by encoder + lexical lift"));
        }
        println!(
            "{set}: static top {} holds the note for {:.3}",
            search::RERANK_K,
            in_top as f32 / n
        );
        for (name, (r, mrr)) in names.iter().zip(&hits) {
            println!(
                "  {name:32} recall@3 {:.3}  MRR {:.3}",
                *r as f32 / n,
                mrr / n
            );
        }
    }
}
