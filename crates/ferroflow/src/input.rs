//! Case input: a TOML file or a built-in case, `--set KEY=VALUE` overrides, and error messages
//! that say where the problem is (file and line, or the override) and what is allowed.
use crate::Failure;
use ferroflow_cases::case::{problem_key, v1, BUILTIN};
use ferroflow_cases::fem::{solver_of, FemCase, SolverKind, FEM_BUILTIN};
use ferroflow_cases::fv::{FvCase, FV_BUILTIN};
use ferroflow_cases::{Case, CaseError};
use ferroflow_core::ProblemError;
use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Case run when none is named.
pub const DEFAULT_CASE: &str = "cavity2d-re100";

/// Sections that say how a case is solved, not what: runs that differ only there solve the
/// same case (and share its default output directory and results).
const HOW: [&str; 4] = ["numerics", "backend", "output", "parallel"];

/// Longest name of a default output directory, in bytes (file systems allow 255).
const MAX_DIR_NAME: usize = 120;

/// One `--set KEY=VALUE`: a dotted key of the case and a TOML value (bare text is a string).
#[derive(Debug, Clone)]
pub struct Override {
    pub key: String,
    pub value: String,
}

impl FromStr for Override {
    type Err = String;

    fn from_str(s: &str) -> Result<Override, String> {
        match s.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => Ok(Override {
                key: key.trim().into(),
                value: value.trim().into(),
            }),
            _ => Err(format!("'{s}': expected KEY=VALUE, e.g. numerics.cfl=0.8")),
        }
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

impl Override {
    /// Sets the key in `table`, creating its section if the case file has none.
    pub fn apply(&self, table: &mut toml::Table) -> Result<(), Failure> {
        let value = match toml::from_str::<toml::Table>(&format!("v = {}", self.value)) {
            Ok(mut t) => t.remove("v").expect("the table has v"),
            // Bare text is a string, but what starts like a number, array, table or quoted
            // string and does not parse is a typing error, reported as TOML sees it.
            Err(e)
                if self
                    .value
                    .starts_with(|c: char| "[{\"'+-.".contains(c) || c.is_ascii_digit()) =>
            {
                return Err(Failure::input(format!(
                    "--set {self}: the value is not valid TOML: {}",
                    e.message().trim()
                )));
            }
            Err(_) => toml::Value::String(self.value.clone()),
        };
        let mut parts: Vec<&str> = self.key.split('.').collect();
        let last = parts.pop().expect("split yields at least one part");
        let mut t = table;
        for part in parts {
            t = t
                .entry(part)
                .or_insert_with(|| toml::Table::new().into())
                .as_table_mut()
                .ok_or_else(|| {
                    Failure::input(format!("--set {self}: '{part}' is not a section"))
                })?;
        }
        t.insert(last.into(), value);
        Ok(())
    }
}

/// A case read from its origin, with the overrides applied.
pub struct LoadedCase {
    pub case: Case,
    /// The case as its origin gives it, without the overrides.
    base: Case,
    origin: String,
    text: String,
    overrides: Vec<Override>,
}

/// A case's text and where it came from.
pub struct Source {
    pub text: String,
    /// File name or built-in case name, for messages.
    pub origin: String,
    /// The directory of a case file (none for a built-in case).
    pub dir: Option<PathBuf>,
}

impl Source {
    /// Reads `source`: a case file if one exists at that path (or the name looks like one,
    /// or is no UTF-8 text), else a built-in case.
    pub fn read(source: impl AsRef<OsStr>) -> Result<Source, Failure> {
        let path = Path::new(source.as_ref());
        let origin = path.display().to_string();
        let name = path.to_str();
        let looks_like_file = name.is_none_or(|s| s.ends_with(".toml") || s.contains(['/', '\\']));
        if path.exists() || looks_like_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::input(format!("{origin}: cannot read case file: {e}")))?;
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            return Ok(Source {
                text,
                origin,
                dir: Some(dir),
            });
        }
        match BUILTIN
            .iter()
            .chain(&FEM_BUILTIN)
            .chain(&FV_BUILTIN)
            .find(|(b, _)| Some(*b) == name)
        {
            Some((name, text)) => Ok(Source {
                text: text.to_string(),
                origin: name.to_string(),
                dir: None,
            }),
            None => Err(Failure::input(format!(
                "'{origin}' is neither a case file nor a built-in case (built-in: {})",
                builtin_names()
            ))),
        }
    }

    /// The solver the case is for.
    pub fn solver(&self) -> Result<SolverKind, Failure> {
        solver_of(&self.text, &self.origin).map_err(Failure::input)
    }
}

/// The case `parse` reads from `text` after each of `overrides` in turn, so that an error
/// names the one at fault; `None` without overrides.
pub fn with_overrides<T>(
    text: &str,
    overrides: &[Override],
    parse: impl Fn(&str) -> Result<T, CaseError>,
) -> Result<Option<T>, Failure> {
    let mut case = None;
    if !overrides.is_empty() {
        let mut table: toml::Table = toml::from_str(text).map_err(Failure::input)?;
        for o in overrides {
            o.apply(&mut table)?;
            let edited = toml::to_string(&table).map_err(Failure::runtime)?;
            case = Some(parse(&edited).map_err(|e| {
                Failure::input(CaseError {
                    origin: format!("--set {o}"),
                    line: None,
                    ..e
                })
            })?);
        }
    }
    Ok(case)
}

impl LoadedCase {
    /// Reads `source` ([`Source::read`]) and applies the overrides.
    pub fn load(source: impl AsRef<OsStr>, overrides: &[Override]) -> Result<LoadedCase, Failure> {
        let Source { text, origin, dir } = Source::read(source)?;
        if dir.is_some() && v1::is_v1(&text) {
            eprintln!(
                "note: {origin} is a case file of schema v1 ([grid], case.kind); it is read as \
                 the same case in schema v2 ([mesh], physics.model, [boundary.<patch>]), \
                 which `ferroflow cases show {origin}` prints. v1 files are accepted until \
                 the next release."
            );
        }
        LoadedCase::parse(text, &origin, overrides)
    }

    /// Parses case `text` from `origin`, then applies the overrides one by one so that an
    /// error names the one at fault.
    pub fn parse(
        text: String,
        origin: &str,
        overrides: &[Override],
    ) -> Result<LoadedCase, Failure> {
        let base = Case::from_toml(&text, origin).map_err(Failure::input)?;
        // `--set grid.*` of schema v1 on a v2 case: the same key of `[mesh]`.
        let overrides: Vec<Override> = overrides
            .iter()
            .map(
                |o| match v1::renamed(&o.key).filter(|_| !v1::is_v1(&text)) {
                    Some(key) => {
                        eprintln!(
                            "note: --set {o}: {} is a key of case schema v1; read as {key}",
                            o.key
                        );
                        Override {
                            key: key.into(),
                            value: o.value.clone(),
                        }
                    }
                    None => o.clone(),
                },
            )
            .collect();
        let case = with_overrides(&text, &overrides, |t| Case::from_toml(t, ""))?
            .unwrap_or_else(|| base.clone());
        Ok(LoadedCase {
            case,
            base,
            origin: origin.into(),
            text,
            overrides,
        })
    }

    /// The overrides, as `KEY=VALUE`.
    pub fn overrides(&self) -> Vec<String> {
        self.overrides.iter().map(Override::to_string).collect()
    }

    /// Name of the case's default output directory: the case name, and `--KEY=VALUE` for
    /// each key the overrides change of what the case solves (the resolved value as a plain
    /// file name), e.g. `cavity2d-re100--physics.reynolds=400.0`; a name too long for a file
    /// system ends in a hash of the whole.
    pub fn dir_name(&self) -> String {
        dir_name(
            &self.case.case.name,
            &problem_keys(&self.base),
            &problem_keys(&self.case),
        )
    }

    /// A value the solver rejects, located at the override that set it or its line in the file.
    pub fn invalid(&self, error: &ProblemError) -> Failure {
        let key = problem_key(error);
        match key.and_then(|k| self.overrides.iter().rev().find(|o| o.key == k)) {
            Some(o) => Failure::input(format!("--set {o}: {error}")),
            None => Failure::input(CaseError::invalid(&self.origin, &self.text, error)),
        }
    }
}

/// `(dotted key, value)` for every value of the TOML `text` of a resolved case, tables
/// flattened (`boundary.ymax.velocity`), sorted.
pub fn key_values(text: &str) -> Vec<(String, String)> {
    fn flatten(prefix: &str, table: &toml::Table, pairs: &mut Vec<(String, String)>) {
        for (key, value) in table {
            let key = match prefix {
                "" => key.clone(),
                _ => format!("{prefix}.{key}"),
            };
            match value.as_table() {
                Some(inner) => flatten(&key, inner, pairs),
                None => pairs.push((key, value.to_string())),
            }
        }
    }
    let mut pairs = Vec::new();
    flatten("", &toml::from_str(text).unwrap_or_default(), &mut pairs);
    pairs
}

/// The keys of `case` that define what it solves (not how, see [`HOW`], and not its
/// description), with their values.
pub fn problem_keys(case: &Case) -> Vec<(String, String)> {
    problem_keys_of(&case.to_toml())
}

/// [`problem_keys`] of a resolved case's TOML `text`.
pub fn problem_keys_of(text: &str) -> Vec<(String, String)> {
    let defines = |key: &str| {
        let section = key.split('.').next().unwrap_or_default();
        !HOW.contains(&section) && key != "case.description"
    };
    key_values(text)
        .into_iter()
        .filter(|(key, _)| defines(key))
        .collect()
}

/// The problem keys of the resolved case `text` (read from `origin`) of either solver, its
/// defaults filled as this version fills them.
pub fn resolved_problem_keys(text: &str, origin: &str) -> Result<Vec<(String, String)>, CaseError> {
    Ok(match solver_of(text, origin)? {
        SolverKind::Structured => problem_keys(&Case::from_toml(text, origin)?),
        SolverKind::FiniteElement => problem_keys_of(&FemCase::from_toml(text, origin)?.to_toml()),
        SolverKind::FiniteVolume => problem_keys_of(&FvCase::from_toml(text, origin)?.to_toml()),
    })
}

/// Name of a case's default output directory: its `name`, and `--KEY=VALUE` for each of
/// `keys` (the case's problem keys) not among `base`'s (those of the case as its origin
/// gives it; the resolved value as a plain file name), e.g.
/// `cavity2d-re100--physics.reynolds=400.0`; a name too long for a file system ends in a hash
/// of the whole.
pub fn dir_name(name: &str, base: &[(String, String)], keys: &[(String, String)]) -> String {
    let mut name = name.to_string();
    for kv in keys {
        if kv.0 != "case.name" && !base.contains(kv) {
            name += &format!("--{}={}", kv.0, plain(&kv.1));
        }
    }
    shorten(name)
}

/// `value` as part of a plain file name: each run of characters other than ASCII letters,
/// digits, '.', '+' and '-' becomes one '_', none at the ends.
fn plain(value: &str) -> String {
    let mut out = String::new();
    for c in value.chars() {
        if c.is_ascii_alphanumeric() || ".+-".contains(c) {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

/// `name`, or if longer than [`MAX_DIR_NAME`] its start and `~` and a hash of the whole
/// (FNV-1a, the same in every version), so that different long names stay different.
fn shorten(name: String) -> String {
    if name.len() <= MAX_DIR_NAME {
        return name;
    }
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut end = MAX_DIR_NAME - 17;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}~{hash:016x}", &name[..end])
}

/// Names of the built-in cases, comma-separated.
pub fn builtin_names() -> String {
    let names: Vec<&str> = BUILTIN
        .iter()
        .chain(&FEM_BUILTIN)
        .chain(&FV_BUILTIN)
        .map(|(n, _)| *n)
        .collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_values_become_plain_file_names() {
        assert_eq!(plain("[33, 33]"), "33_33");
        assert_eq!(plain("[0.0, -9.81, 0.0]"), "0.0_-9.81_0.0");
        assert_eq!(plain("\"dimensional\""), "dimensional");
        assert_eq!(plain("4e2"), "4e2");
    }

    #[test]
    fn long_directory_names_end_in_a_hash_of_the_whole() {
        let short = "cavity2d-re100--physics.reynolds=400.0".to_string();
        assert_eq!(shorten(short.clone()), short);
        let long = |last: char| format!("{}{last}", "bdc3d--physics.length=0.05".repeat(6));
        let (a, b) = (shorten(long('1')), shorten(long('2')));
        assert_eq!((a.len(), b.len()), (MAX_DIR_NAME, MAX_DIR_NAME));
        let kept = MAX_DIR_NAME - 17;
        assert_eq!((&a[..kept], &a[kept..kept + 1]), (&long('1')[..kept], "~"));
        assert_eq!(a[..kept], b[..kept]);
        assert_ne!(a, b);
    }
}
