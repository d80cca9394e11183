//! Prices per token from `D2A_MODEL_COST` (spec §0.3). Absent means free; malformed means a
//! warning and free, never a crash.

use serde::Deserialize;
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

impl Pricing {
    /// Parses the variable's value; the second element is a warning to show when malformed.
    pub fn parse(raw: Option<&str>) -> (Pricing, Option<String>) {
        let Some(raw) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
            return (Pricing::default(), None);
        };
        match serde_json::from_str::<Pricing>(raw) {
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
        }
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
    pub fn cost(&self, u: &Usage) -> f64 {
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
}
