//! "Did you mean ...?" for unknown option names: edit distance plus the
//! rule for when a near name is close enough to be worth suggesting.

/// Case-insensitive Levenshtein distance (also what `client/existence.rs`
/// ranks close instance ids by).
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The valid name an unknown one most likely meant, if it is close enough
/// that suggesting it helps rather than confuses.
pub(super) fn suggest<'a>(name: &str, valid: &[&'a str]) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let ms_variant = valid.iter().find(|v| {
        let v = v.to_lowercase();
        v == format!("{lower}ms") || lower == format!("{v}ms")
    });
    if let Some(v) = ms_variant {
        return Some(v);
    }
    let (best, dist) = valid
        .iter()
        .map(|v| (*v, distance(name, v)))
        .min_by_key(|(_, d)| *d)?;
    (dist * 3 <= name.chars().count()).then_some(best)
}

/// The suggestion for an unknown option name of the options the JS layer
/// checks itself (the providers'), by the same rule as the runtime's.
#[napi_derive::napi(js_name = "suggestOptionName")]
pub fn suggest_option_name(name: String, valid: Vec<String>) -> Option<String> {
    let valid: Vec<&str> = valid.iter().map(String::as_str).collect();
    suggest(&name, &valid).map(str::to_string)
}
