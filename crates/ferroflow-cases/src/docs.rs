//! The key tables of `docs/cases.md`, generated from [`KEYS`](crate::case::KEYS) and the
//! default case, so that the docs cannot drift from what the parser takes and
//! `ferroflow cases show` prints. `ferroflow cases docs` prints them; a test of the `ferroflow`
//! crate compares the file with them.
use crate::case::{default_value, sections, value_text, KeyDoc, KEYS};
use crate::fem::{fem_default_value, FEM_KEYS};
use crate::fv::{fv_default_value, FV_KEYS};
use std::ops::Range;

/// First line of the generated region of `docs/cases.md`; it says how to regenerate it.
pub const BEGIN: &str =
    "<!-- generated from KEYS in crates/ferroflow-cases/src/case/keys.rs: edit \
                         KEYS, then run `cargo run -p ferroflow -- cases docs --update \
                         docs/cases.md` -->";

/// Last line of the generated region.
pub const END: &str = "<!-- end of generated tables -->";

/// The generated region, [`BEGIN`] to [`END`] (no newline after it): per section a heading
/// (`` ### `[grid]` ``, which gives the anchor `#grid`) and a table of its keys with type,
/// unit, default, allowed values and meaning; then the finite-element cases' sections
/// (`` ### Finite elements: `[mesh]` ``).
pub fn key_tables_markdown() -> String {
    let mut out = format!("{BEGIN}\n");
    out += &tables(&KEYS, "", default_value);
    out += &tables(&FEM_KEYS, "Finite elements: ", fem_default_value);
    out += &tables(&FV_KEYS, "Finite volumes: ", fv_default_value);
    out + "\n" + END
}

/// A heading (`prefix` before the section) and a table per section of `keys`.
fn tables(
    keys: &'static [KeyDoc],
    prefix: &str,
    default: impl Fn(&KeyDoc) -> Option<toml::Value>,
) -> String {
    let mut out = String::new();
    for keys in sections(keys) {
        out += &format!("\n### {prefix}`[{}]`\n\n", keys[0].parts().0);
        out += "| key | type | unit | default | allowed | meaning |\n|---|---|---|---|---|---|\n";
        for doc in keys {
            let default = default(doc).map_or("none".into(), |v| format!("`{}`", value_text(&v)));
            let cells = [
                format!("`{}`", doc.key),
                doc.type_name.into(),
                doc.unit.into(),
                default,
                doc.allowed.into(),
                doc.meaning.into(),
            ];
            // A bare `|` would end the cell, even inside backticks.
            let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
            out += &format!("| {} |\n", cells.join(" | "));
        }
    }
    out
}

/// Where the generated region of `doc` is, [`BEGIN`] to [`END`] inclusive, if it has one.
pub fn region(doc: &str) -> Option<Range<usize>> {
    let start = doc.find(BEGIN)?;
    let end = start + doc[start..].find(END)? + END.len();
    Some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_name_fits_the_default_value() {
        let structured = KEYS.iter().map(|d| (d, default_value(d)));
        let fem = FEM_KEYS.iter().map(|d| (d, fem_default_value(d)));
        let fv = FV_KEYS.iter().map(|d| (d, fv_default_value(d)));
        for (doc, default) in structured.chain(fem).chain(fv) {
            let Some(default) = default else {
                // The keys that are unset by default.
                let unset = [
                    "boundary.<patch>.temperature",
                    "numerics.sweeps",
                    "numerics.implicit_cfl",
                    "numerics.c4",
                    "numerics.steady_tolerance",
                    "physics.reynolds",
                    "physics.mu",
                    "physics.diaphragm",
                    "boundary.<patch>.total_pressure",
                    "boundary.<patch>.total_temperature",
                    "boundary.<patch>.direction",
                    "boundary.<patch>.pressure",
                ];
                assert!(unset.contains(&doc.key), "{}", doc.key);
                continue;
            };
            match &default {
                toml::Value::Array(items) => {
                    assert!(doc.type_name.starts_with("array of "), "{}", doc.key);
                    for item in items {
                        let plural = format!("{}s", item.type_str());
                        assert!(doc.type_name.ends_with(&plural), "{}", doc.key);
                    }
                }
                value => assert_eq!(doc.type_name, value.type_str(), "{}", doc.key),
            }
        }
    }

    #[test]
    fn tables_have_a_row_per_key_and_escape_bars() {
        let text = key_tables_markdown();
        assert_eq!(region(&text), Some(0..text.len()));
        let rows = text.lines().filter(|l| l.starts_with("| `")).count();
        assert_eq!(rows, KEYS.len() + FEM_KEYS.len() + FV_KEYS.len());
        assert!(text.contains("| `mesh.nodes` | array of integers | - | `[129, 129]` |"));
        assert!(text.contains(
            "| `boundary.<patch>.temperature` | float | K (nondimensional: ΔT) | none |"
        ));
        assert!(text.contains("Ra = \\|g\\| β_T ΔT L³ / (ν α)"));
        assert!(text.contains("| `1e5` |") && text.contains("| `3.4e-3` |"));
    }
}
