//! Prices per token (spec §0.3): from `D2A_MODEL_COST`, the `model.*_cost*` configuration
//! keys, or the price catalog shipped with yuyao (`data/prices.json`, litellm's own price
//! list for the major providers' current models). A cost the endpoint reports for a call (a
//! litellm proxy's `x-litellm-response-cost`) takes precedence over all of them. Absent means
//! free; malformed means a warning and free, never a crash.

use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;
use yuyao_protocol::Usage;

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Pricing {
    pub input_cost_per_token: f64,
    pub output_cost_per_token: f64,
    /// Price of a prompt token served from the provider's cache (defaults to the input price).
    pub cache_read_input_token_cost: Option<f64>,
    /// Price of a prompt token written to the cache (defaults to the input price).
    pub cache_creation_input_token_cost: Option<f64>,
}

/// The keys `D2A_MODEL_COST` understands. Other keys of a litellm price entry are accepted
/// silently (a user may paste one whole); anything else is most likely a misspelled price.
const PRICE_KEYS: &[&str] = &[
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
];
const LITELLM_ENTRY_KEYS: &[&str] = &[
    "max_tokens",
    "max_input_tokens",
    "max_output_tokens",
    "litellm_provider",
    "mode",
    "context_window",
    "provider",
];

impl Pricing {
    /// Parses the variable's value; the second element is a warning to show when malformed
    /// or when a key is unknown (a misspelled price would otherwise silently count as $0).
    pub fn parse(raw: Option<&str>) -> (Pricing, Option<String>) {
        let Some(raw) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
            return (Pricing::default(), None);
        };
        let unknown: Vec<String> = match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(map)) => map
                .keys()
                .filter(|k| !PRICE_KEYS.contains(&k.as_str()))
                .filter(|k| !LITELLM_ENTRY_KEYS.contains(&k.as_str()))
                .cloned()
                .collect(),
            Ok(_) => {
                return (
                    Pricing::default(),
                    Some(
                        "D2A_MODEL_COST is not a JSON object of prices; cost is counted as 0"
                            .into(),
                    ),
                );
            }
            Err(_) => Vec::new(),
        };
        let (pricing, mut warning) = match serde_json::from_str::<Pricing>(raw) {
            Ok(p) if p.is_valid() => (p, None),
            Ok(_) => (
                Pricing::default(),
                Some(
                    "D2A_MODEL_COST has a negative or non-finite price; cost is counted as 0"
                        .into(),
                ),
            ),
            Err(e) => (
                Pricing::default(),
                Some(format!(
                    "D2A_MODEL_COST is not valid JSON prices ({e}); cost is counted as 0"
                )),
            ),
        };
        if warning.is_none() && !unknown.is_empty() {
            let named: Vec<String> = unknown
                .iter()
                .map(|k| match closest_key(k) {
                    Some(near) => format!("'{k}' (did you mean '{near}'?)"),
                    None => format!("'{k}'"),
                })
                .collect();
            warning = Some(format!(
                "D2A_MODEL_COST has unknown key{} {}: ignored; the known keys are {}",
                if unknown.len() == 1 { "" } else { "s" },
                named.join(", "),
                PRICE_KEYS.join(", ")
            ));
        }
        (pricing, warning)
    }

    /// Whether any price is set (an all-zero price list prices nothing).
    pub fn is_priced(&self) -> bool {
        *self != Pricing::default()
    }

    fn is_valid(&self) -> bool {
        [
            Some(self.input_cost_per_token),
            Some(self.output_cost_per_token),
            self.cache_read_input_token_cost,
            self.cache_creation_input_token_cost,
        ]
        .into_iter()
        .flatten()
        .all(|p| p.is_finite() && p >= 0.0)
    }

    /// Cost in USD of one call's usage. Cached and cache-write tokens are part of
    /// `prompt_tokens` (OpenAI convention) and are re-priced at their own rate.
    /// The endpoint's own figure for the call, when it reported one, wins.
    pub fn cost(&self, u: &Usage) -> f64 {
        if let Some(reported) = u.reported_cost_usd {
            return reported;
        }
        let cached = u.cached_tokens.min(u.prompt_tokens);
        let written = u.cache_write_tokens.min(u.prompt_tokens - cached);
        let plain = u.prompt_tokens - cached - written;
        let read_price = self
            .cache_read_input_token_cost
            .unwrap_or(self.input_cost_per_token);
        let write_price = self
            .cache_creation_input_token_cost
            .unwrap_or(self.input_cost_per_token);
        plain as f64 * self.input_cost_per_token
            + cached as f64 * read_price
            + written as f64 * write_price
            + u.completion_tokens as f64 * self.output_cost_per_token
    }

    /// Upper estimate of one call's cost before it is made (for the spend ceiling).
    pub fn estimate(&self, prompt_tokens: u64, max_output_tokens: u64) -> f64 {
        prompt_tokens as f64 * self.input_cost_per_token
            + max_output_tokens as f64 * self.output_cost_per_token
    }
}

/// The known key nearest to a misspelled one (edit distance at most 3).
fn closest_key(key: &str) -> Option<&'static str> {
    PRICE_KEYS
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// One model's entry in the price catalog.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CatalogEntry {
    pub pricing: Pricing,
    /// Input tokens the model accepts, when the catalog knows it.
    pub context_window: Option<u64>,
}

#[derive(Deserialize)]
struct CatalogFile {
    models: HashMap<String, CatalogRow>,
}

#[derive(Deserialize)]
struct CatalogRow {
    #[serde(flatten)]
    pricing: Pricing,
    context_window: Option<u64>,
}

/// The shipped catalog (`data/prices.json`, regenerated by `scripts/price-catalog.py`).
fn catalog() -> &'static HashMap<String, CatalogEntry> {
    static CATALOG: OnceLock<HashMap<String, CatalogEntry>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let file: CatalogFile = serde_json::from_str(include_str!("../data/prices.json"))
            .expect("the shipped price catalog is valid JSON");
        file.models
            .into_iter()
            .filter(|(_, r)| r.pricing.is_valid() && r.pricing.is_priced())
            .map(|(name, r)| {
                let entry = CatalogEntry {
                    pricing: r.pricing,
                    context_window: r.context_window.filter(|n| *n > 0),
                };
                (name, entry)
            })
            .collect()
    })
}

/// Where the catalog's data came from and when (its `_source` record).
pub fn catalog_source() -> String {
    let v: Value = serde_json::from_str(include_str!("../data/prices.json")).unwrap_or_default();
    let s = &v["_source"];
    format!(
        "{} (retrieved {})",
        s["from"].as_str().unwrap_or("unknown"),
        s["retrieved"].as_str().unwrap_or("unknown")
    )
}

/// The catalog's entry for a configured model name, and the name it matched: routing and
/// provider prefixes (`litellm_proxy/`, `openai/`, `anthropic/`, `openrouter/x/`...) are
/// dropped and case ignored; a dated snapshot (`-20250929`, `-2025-04-14`) falls back to
/// its undated name.
pub fn catalog_lookup(model: &str) -> Option<(String, CatalogEntry)> {
    let bare = model.trim().rsplit('/').next().unwrap_or("").to_lowercase();
    if bare.is_empty() {
        return None;
    }
    let undated = strip_date(&bare);
    [bare.as_str(), undated]
        .into_iter()
        .find_map(|name| catalog().get(name).map(|e| (name.to_string(), *e)))
}

/// `name-20250929` / `name-2025-04-14` -> `name` (else `name` itself).
fn strip_date(name: &str) -> &str {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((stem, tail)) = name.rsplit_once('-')
        && tail.len() == 8
        && digits(tail)
    {
        return stem;
    }
    let parts: Vec<&str> = name.rsplitn(4, '-').collect();
    if parts.len() == 4
        && parts[0].len() == 2
        && parts[1].len() == 2
        && parts[2].len() == 4
        && parts[..3].iter().all(|p| digits(p))
    {
        return parts[3];
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_and_malformed_are_free() {
        assert_eq!(Pricing::parse(None), (Pricing::default(), None));
        let (p, w) = Pricing::parse(Some("{nope"));
        assert_eq!(p, Pricing::default());
        assert!(w.unwrap().contains("D2A_MODEL_COST"));
        let (_, w) = Pricing::parse(Some(r#"{"input_cost_per_token": -1}"#));
        assert!(w.is_some());
    }

    #[test]
    fn cached_tokens_use_their_price() {
        let (p, _) = Pricing::parse(Some(
            r#"{"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "cache_read_input_token_cost": 1e-7}"#,
        ));
        let u = Usage {
            prompt_tokens: 1000,
            completion_tokens: 100,
            cached_tokens: 500,
            ..Default::default()
        };
        let c = p.cost(&u);
        assert!((c - (500.0 * 1e-6 + 500.0 * 1e-7 + 100.0 * 2e-6)).abs() < 1e-12);
    }

    #[test]
    fn a_misspelled_key_is_named_with_its_correction() {
        let (p, w) = Pricing::parse(Some(
            r#"{"input_cost_per_tokens": 1e-6, "output_cost_per_token": 2e-6}"#,
        ));
        let w = w.expect("a warning");
        assert!(
            w.contains("'input_cost_per_tokens' (did you mean 'input_cost_per_token'?)"),
            "{w}"
        );
        assert_eq!(p.input_cost_per_token, 0.0);
        assert_eq!(p.output_cost_per_token, 2e-6);
        // A whole litellm entry pasted is fine.
        let (_, w) = Pricing::parse(Some(
            r#"{"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "litellm_provider": "openai", "mode": "chat", "max_input_tokens": 5}"#,
        ));
        assert_eq!(w, None);
    }

    #[test]
    fn a_reported_cost_wins_over_prices() {
        let p = Pricing {
            input_cost_per_token: 1.0,
            ..Default::default()
        };
        let u = Usage {
            prompt_tokens: 10,
            reported_cost_usd: Some(0.25),
            ..Default::default()
        };
        assert_eq!(p.cost(&u), 0.25);
    }

    #[test]
    fn the_catalog_matches_prefixed_and_dated_names() {
        let (name, e) = catalog_lookup("litellm_proxy/anthropic/claude-sonnet-4-5").expect("hit");
        assert_eq!(name, "claude-sonnet-4-5");
        assert_eq!(e.pricing.input_cost_per_token, 3e-6);
        assert_eq!(e.pricing.output_cost_per_token, 1.5e-5);
        assert_eq!(e.pricing.cache_read_input_token_cost, Some(3e-7));
        assert_eq!(e.context_window, Some(200_000));
        assert_eq!(catalog_lookup("openai/GPT-4o").expect("hit").0, "gpt-4o");
        assert_eq!(
            catalog_lookup("gpt-4.1-mini-2031-01-01").expect("hit").0,
            "gpt-4.1-mini"
        );
        assert_eq!(
            catalog_lookup("gemini/gemini-2.5-pro").expect("hit").0,
            "gemini-2.5-pro"
        );
        assert!(catalog_lookup("deepseek/deepseek-chat").is_some());
        assert!(catalog_lookup("mistral/mistral-large-latest").is_some());
        assert!(catalog_lookup("xai/grok-code-fast-1").is_some());
        assert!(catalog_lookup("litellm_proxy/fake-model").is_none());
        assert!(catalog_lookup("").is_none());
        assert!(catalog_source().contains("litellm"));
    }
}
