//! Random and mutated case input, from the shipped case files (cases/, test_data/cases-v1/):
//! byte flips, truncation, deleted, duplicated and swapped lines (duplicate keys and sections),
//! values replaced by huge numbers, wrong types, deep nesting and unicode, unknown keys. The
//! case parser and every check a run makes before it allocates the grid are called in
//! process on thousands of inputs; `ferroflow check` (with `--set`) and `ferroflow cases show`
//! run a few hundred. Nothing may panic or hang, a bad input is always the bad-input error
//! (exit code 2), and the resolved TOML of a case that passes every check reads back as the
//! same case. The generator is seeded, so a failure repeats.
use ferroflow_cases::case::{CaseError, BUILTIN, KEYS};
use ferroflow_cases::Case;
use ferroflow_core::random::SplitMix64 as Rng;
use ferroflow_core::MIN_NODES;
use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Mutated case texts checked in process.
const IN_PROCESS: usize = 20_000;
/// `ferroflow check` and `ferroflow cases show` invocations.
const SPAWNED: usize = 500;
/// Longest any one input may take, in process or spawned: a hang fails the test.
const LIMIT: Duration = Duration::from_secs(20);

/// Inputs that longer runs of these tests found, kept so that they stay fixed: a grid too
/// small to decompose (a subtraction overflowed), and a block count that made the search for
/// a decomposition run for ever.
const FOUND: [&str; 2] = [
    "[mesh]\nnodes = [1, 5]\n",
    "[parallel]\ncount = 9223372036854775807\n",
];

/// Picks from slices.
trait Pick {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T;
}

impl Pick for Rng {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Values of every TOML type, at and beyond the edges of what the keys allow.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "3",
    "4",
    "5",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551616",
    "1e308",
    "1e309",
    "-1e309",
    "1e-320",
    "5e-324",
    "-0.0",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "0.5",
    "1.0",
    "2.0000000000000004",
    "1e5",
    "1e300",
    "true",
    "false",
    "\"\"",
    "\"x\"",
    "\"cpu\"",
    "\"cuda\"",
    "\"auto\"",
    "\"f32\"",
    "\"f16\"",
    "\"box\"",
    "\"boussinesq\"",
    "\"incompressible\"",
    "\"nondimensional\"",
    "\"dimensional\"",
    "\"wall\"",
    "\"isothermal\"",
    "\"adiabatic\"",
    "\"peer\"",
    "\"host\"",
    "\"../../x\"",
    "\"/abs\"",
    "\"a\\u0000b\"",
    "\"\u{1F600}\"",
    "'lit'",
    "'''\nmulti\n'''",
    "[]",
    "[0]",
    "[1, 1]",
    "[3, 3]",
    "[5, 5]",
    "[17, 17]",
    "[1, 5]",
    "[5, 5, 5]",
    "[2, 2, 2, 2]",
    "[1e300, 5]",
    "[-5, 5]",
    "[9223372036854775807, 5]",
    "[100000, 100000]",
    "[0.0, -1.0, 0.0]",
    "[0.0, 0.0, 0.0]",
    "[nan, 1.0, 0.0]",
    "[\"a\"]",
    "[1, \"a\"]",
    "[[1, 2], [3]]",
    "{}",
    "{ a = 1 }",
    "{ kind = \"wall\" }",
    "1979-05-27T07:32:00Z",
    "1979-05-27",
    "07:32:00",
    "0x10",
    "0o7",
    "0b1",
    "1_000",
    "1__0",
    "01",
    ".5",
    "5.",
    "1e",
    "\"unterminated",
    "[1, 2",
    "",
];

/// Key names that are no key, or are keys in the wrong place.
const ODD_KEYS: &[&str] = &[
    "bogus",
    "nodes",
    "grid.nodes",
    "grid.dim",
    "mesh.nodes.x",
    "mesh",
    "boundary",
    "boundary.zmax.kind",
    "boundary.nowhere.kind",
    "boundary.xmin",
    "physics.lid_velocity",
    "physics.rayleigh",
    "physics.reynolds",
    "case.kind",
    "a.b.c.d.e.f.g",
    "\"quoted key\"",
    "m\u{e9}sh.nodes",
    "MESH.NODES",
    "",
    ".",
    "a..b",
    "mesh.",
];

/// Lines inserted as they are: section headers, arrays of tables, stray syntax.
const ODD_LINES: &[&str] = &[
    "[bogus]",
    "[mesh]",
    "[case]",
    "[physics]",
    "[grid]",
    "[boundary.xmin]",
    "[boundary.zmin]",
    "[boundary.bogus]",
    "[[mesh]]",
    "[[boundary]]",
    "[mesh.nodes]",
    "[numerics.cfl]",
    "[]",
    "[",
    "=",
    "= 1",
    "key =",
    "\u{feff}",
    "\u{202e}",
    "\r",
    "# comment \u{0}",
];

/// Characters inserted at random places.
const ODD_CHARS: &[&str] = &[
    "\u{0}",
    "\u{feff}",
    "\u{e9}",
    "\u{1F600}",
    "\r",
    "\t",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    "=",
    "#",
    "\\",
    "\n",
    ".",
    ",",
    "-",
    "9",
];

/// Nested arrays or inline tables `depth` deep.
fn nested(rng: &mut Rng) -> String {
    let depth = *rng.pick(&[8, 64, 512, 4096]);
    if rng.below(2) == 0 {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    } else {
        format!("{}1{}", "{ a = ".repeat(depth), " }".repeat(depth))
    }
}

/// A value: one of [`VALUES`], nested, or random printable bytes.
fn value(rng: &mut Rng) -> String {
    match rng.below(10) {
        0 => nested(rng),
        1 => (0..rng.below(12))
            .map(|_| (b' ' + rng.below(95) as u8) as char)
            .collect(),
        _ => rng.pick(VALUES).to_string(),
    }
}

/// A dotted key: one of the case's keys (on any patch), or one of [`ODD_KEYS`].
fn key(rng: &mut Rng) -> String {
    const PATCHES: [&str; 7] = ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax", "top"];
    let patch = *rng.pick(&PATCHES);
    match rng.below(3) {
        0 => rng.pick(ODD_KEYS).to_string(),
        _ => rng.pick(&KEYS).key.replace("<patch>", patch),
    }
}

/// `text` with `key = value` set as `--set` would: under the key's section header if the
/// text has one, else in a new section at the end.
fn set_key(rng: &mut Rng, text: &[u8]) -> Vec<u8> {
    let key = key(rng);
    let (section, name) = key.rsplit_once('.').unwrap_or(("", &key));
    let line = format!("{name} = {}\n", value(rng));
    let header = format!("[{section}]");
    let mut t = text.to_vec();
    let starts = line_starts(&t);
    let found = starts.iter().find(|&&s| {
        t[s..].starts_with(header.as_bytes())
            && t.get(s + header.len())
                .is_none_or(|b| *b == b'\n' || *b == b'\r')
    });
    match found {
        Some(&s) => {
            let after = starts.iter().find(|&&n| n > s).copied().unwrap_or(t.len());
            t.splice(after..after, line.into_bytes());
        }
        None => t.extend(format!("\n{header}\n{line}").into_bytes()),
    }
    t
}

/// Byte offsets of the line starts of `text`.
fn line_starts(text: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        text.iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1),
    );
    starts
}

/// `text` with one random mutation; `seeds` give lines to splice in.
fn mutate(rng: &mut Rng, text: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut t = text.to_vec();
    let at = |rng: &mut Rng, t: &[u8]| rng.below(t.len() + 1);
    let (starts, len) = (line_starts(&t), t.len());
    let line = |rng: &mut Rng| {
        let i = rng.below(starts.len());
        starts[i]..starts.get(i + 1).copied().unwrap_or(len)
    };
    match rng.below(12) {
        0 if !t.is_empty() => {
            let i = rng.below(t.len());
            t[i] ^= 1 << rng.below(8);
        }
        1 => t.truncate(at(rng, &t)),
        2 => {
            let start = at(rng, &t);
            let end = (start + 1 + rng.below(40)).min(t.len());
            t.drain(start..end);
        }
        3 => {
            let l = line(rng);
            let copy = t[l.clone()].to_vec();
            let to = *rng.pick(&starts);
            t.splice(to..to, copy.iter().chain(b"\n").copied());
        }
        4 => {
            let (a, b) = (line(rng), line(rng));
            let (first, second) = if a.start <= b.start { (a, b) } else { (b, a) };
            if first.end <= second.start {
                let (x, y) = (t[first.clone()].to_vec(), t[second.clone()].to_vec());
                t.splice(second, x);
                t.splice(first, y);
            }
        }
        5 => {
            // A value replaced: everything after the first '=' of a line.
            let l = line(rng);
            if let Some(eq) = t[l.clone()].iter().position(|b| *b == b'=') {
                let end = l.end - usize::from(t[l.end - 1] == b'\n');
                t.splice(
                    l.start + eq + 1..end,
                    format!(" {}", value(rng)).into_bytes(),
                );
            }
        }
        6 => {
            let to = *rng.pick(&starts);
            let inserted = match rng.below(3) {
                0 => rng.pick(ODD_LINES).to_string(),
                _ => format!("{} = {}", key(rng), value(rng)),
            };
            t.splice(to..to, format!("{inserted}\n").into_bytes());
        }
        7 => {
            let to = at(rng, &t);
            t.splice(to..to, rng.pick(ODD_CHARS).bytes());
        }
        8 => {
            let other = rng.pick(seeds);
            let starts = line_starts(other);
            let i = rng.below(starts.len());
            let end = starts.get(i + 1).copied().unwrap_or(other.len());
            let to = *rng.pick(&line_starts(&t));
            t.splice(to..to, other[starts[i]..end].to_vec());
        }
        9 => {
            // A section emptied, or only its header kept.
            let l = line(rng);
            t.drain(l.end..(l.end + rng.below(200)).min(t.len()));
        }
        10 => t = set_key(rng, &t),
        _ => {
            // Random bytes: not even text.
            let to = at(rng, &t);
            let noise: Vec<u8> = (0..1 + rng.below(8))
                .map(|_| rng.next_u64() as u8)
                .collect();
            t.splice(to..to, noise);
        }
    }
    t
}

/// The shipped case files.
fn seeds() -> Vec<Vec<u8>> {
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/cases-v1");
    let mut seeds: Vec<Vec<u8>> = BUILTIN.iter().map(|(_, t)| t.as_bytes().to_vec()).collect();
    for entry in fs::read_dir(old).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            seeds.push(fs::read(path).unwrap());
        }
    }
    assert!(seeds.len() >= 8, "{} case files", seeds.len());
    seeds
}

/// `count` inputs: each a shipped case file with one to four mutations, or (half of them,
/// which mostly stay valid TOML) one to four keys set.
fn inputs(seed: u64, count: usize) -> Vec<Vec<u8>> {
    let seeds = seeds();
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| {
            let mut text = rng.pick(&seeds).clone();
            let keys_only = rng.below(2) == 0;
            for _ in 0..1 + rng.below(4) {
                text = match keys_only {
                    true => set_key(&mut rng, &text),
                    false => mutate(&mut rng, &text, &seeds),
                };
            }
            text
        })
        .collect()
}

/// A case error must say where: the origin first, a line inside the text, a message.
fn check_error(e: &CaseError, text: &str) -> Result<(), String> {
    let lines = text.lines().count() + 1;
    if e.origin != "fuzz.toml" || e.message.trim().is_empty() {
        return Err(format!("error without origin or message: {e:?}"));
    }
    if e.line.is_some_and(|l| l == 0 || l > lines) {
        return Err(format!("line outside the text ({lines} lines): {e:?}"));
    }
    if !e.to_string().starts_with("fuzz.toml") {
        return Err(format!("message does not start with the origin: {e}"));
    }
    Ok(())
}

/// What a run does with case `text` before it allocates the grid (and what `check` does):
/// parse, validate the stop criteria, decomposition, walls, physics on the smallest grid of
/// the dimension, write the resolved case. Ok(true) where all pass.
fn examine(text: &str) -> Result<bool, String> {
    let case = match Case::from_toml(text, "fuzz.toml") {
        Ok(case) => case,
        Err(e) => return check_error(&e, text).map(|()| false),
    };
    let mut problems = Vec::new();
    let nodes = case.nodes();
    problems.extend(nodes.as_ref().err().cloned());
    problems.extend(case.stop().err());
    problems.extend(case.walls().err());
    if nodes.is_ok() {
        problems.extend(case.decomposition(1).err());
        let mut small = case.clone();
        small.mesh.nodes = vec![MIN_NODES; case.mesh.dim];
        problems.extend(small.problem::<f64>().err());
        problems.extend(small.problem::<f32>().err());
    }
    case.to_commented_toml();
    let _ = (case.classic(), case.setup_name());
    for problem in &problems {
        let e = CaseError::invalid("fuzz.toml", text, problem);
        if e.message.trim().is_empty() {
            return Err(format!("an empty message for {problem:?}"));
        }
    }
    if !problems.is_empty() {
        return Ok(false);
    }
    // Keys of another model are not written, so compare what is.
    let resolved = case.to_toml();
    match Case::from_toml(&resolved, "resolved") {
        Ok(again) if again.to_toml() == resolved => Ok(true),
        Ok(again) => Err(format!(
            "the resolved case reads back differently:\n{resolved}\n---\n{}",
            again.to_toml()
        )),
        Err(e) => Err(format!(
            "the resolved case does not read back: {e}\n{resolved}"
        )),
    }
}

/// [`examine`], a panic turned into an error.
fn examined(text: &str) -> Result<bool, String> {
    catch_unwind(AssertUnwindSafe(|| examine(text))).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(format!("panic: {message}"))
    })
}

/// `text` cut down, line by line, to the lines that still make `fails` true.
fn shrink(text: &str, fails: impl Fn(&str) -> bool) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let mut fewer = lines.clone();
        fewer.remove(i);
        if fails(&fewer.join("\n")) {
            lines = fewer;
        } else {
            i += 1;
        }
    }
    lines.join("\n")
}

#[test]
fn mutated_case_files_are_parsed_and_checked_without_panics() {
    let found = FOUND.iter().map(|t| t.as_bytes().to_vec());
    let inputs: Vec<Vec<u8>> = found.chain(inputs(0x5eed_0001, IN_PROCESS)).collect();
    // Each input in turn on a worker thread, so that a hang fails with its input.
    let (sender, receiver) = mpsc::channel();
    let worker = thread::spawn(move || {
        let (mut valid, mut failures) = (0, Vec::new());
        for bytes in inputs {
            // Not UTF-8: the program refuses it when reading the file (the spawned test).
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            sender.send(text.clone()).unwrap();
            match examined(&text) {
                Ok(passed) => valid += usize::from(passed),
                Err(why) => failures.push((text, why)),
            }
        }
        (valid, failures)
    });
    let mut current = String::new();
    while !worker.is_finished() {
        match receiver.recv_timeout(LIMIT) {
            Ok(text) => current = text,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no answer after {LIMIT:?} for this input:\n{current}")
            }
        }
    }
    let (valid, mut failures) = worker.join().unwrap();
    // The mutations must leave enough inputs valid, or they only test the syntax errors.
    assert!(
        valid > IN_PROCESS / 50,
        "only {valid} inputs passed every check"
    );
    failures.sort_by_key(|(text, _)| text.len());
    if let Some((text, why)) = failures.first() {
        let smallest = shrink(text, |t| examined(t).is_err());
        panic!(
            "{} of {IN_PROCESS} inputs failed; the shortest, cut down:\n{smallest}\n---\n{why}",
            failures.len()
        );
    }
}

/// `args` for a message, each cut to 100 characters.
fn shown(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().chars().take(100).collect())
        .collect()
}

/// `ferroflow ARGS` in `dir`: its exit code and standard error, or a failure naming the
/// arguments after [`LIMIT`].
fn ferroflow(dir: &Path, args: &[OsString]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflow"))
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read while it runs: a message longer than the pipe holds would block it.
    let mut stderr = child.stderr.take().unwrap();
    let reader = thread::spawn(move || {
        let mut text = Vec::new();
        stderr.read_to_end(&mut text).map(|_| text)
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > LIMIT {
            child.kill().unwrap();
            panic!("ferroflow {:?}: no exit after {LIMIT:?}", shown(args));
        }
        thread::sleep(Duration::from_millis(1));
    };
    let stderr = reader.join().unwrap().unwrap();
    (status.code(), String::from_utf8_lossy(&stderr).into_owned())
}

#[test]
fn check_and_cases_show_with_mutated_files_and_overrides_exit_0_or_2() {
    let tmp = TempDir::new().unwrap();
    let files = inputs(0x5eed_0002, SPAWNED);
    let mut rng = Rng(0x5eed_0003);
    let mut refused = 0;
    for (i, bytes) in files.iter().enumerate() {
        let path = tmp.path().join(format!("case{i}.toml"));
        fs::write(&path, bytes).unwrap();
        // `cases show FILE` (which resolves the case), or `check` of the file or of a built-in
        // case, with overrides.
        let mut args: Vec<OsString> = match rng.below(4) {
            0 => vec!["cases".into(), "show".into(), path.into()],
            1 => vec!["check".into(), rng.pick(&BUILTIN).0.into()],
            _ => vec!["check".into(), path.into()],
        };
        let overrides = if args[0] == "check" { rng.below(3) } else { 0 };
        for _ in 0..overrides {
            let set = match rng.below(8) {
                0 => format!("{}{}", key(&mut rng), rng.pick(&["", "=", "==", " = "])),
                _ => format!("{}={}", key(&mut rng), value(&mut rng)),
            };
            // Command-line arguments cannot hold NUL; a few are not UTF-8.
            let mut set = set.replace('\0', "");
            if rng.below(50) == 0 {
                set.push('\u{fffd}');
                let mut raw = set.into_bytes();
                raw.push(0xff);
                args.push("--set".into());
                args.push(OsString::from_vec(raw));
                continue;
            }
            args.push("--set".into());
            args.push(set.into());
        }
        let (code, err) = ferroflow(tmp.path(), &args);
        assert!(
            code == Some(0) || (code == Some(2) && err.contains("error: ")),
            "ferroflow {:?}: exit code {code:?}\n{}\ncase file:\n{}",
            shown(&args),
            err.chars().take(2000).collect::<String>(),
            String::from_utf8_lossy(bytes)
        );
        refused += usize::from(code == Some(2));
    }
    // Both outcomes must occur, or the inputs are too tame or too wild to test anything.
    assert!(
        refused > SPAWNED / 10 && refused < SPAWNED * 19 / 20,
        "{refused} of {SPAWNED} refused"
    );
    // Neither writes anything: only the case files are there.
    for entry in fs::read_dir(tmp.path()).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(
            name.to_string_lossy().ends_with(".toml"),
            "{name:?} was written"
        );
    }
}

/// Found by the tests above: an unsigned key (an iteration count, an interval, a thread or
/// device number) above i64::MAX read, but the resolved case could not be written (a panic in
/// `Case::to_toml`); it is bad input now.
#[test]
fn a_count_above_i64_max_in_a_case_file_is_bad_input() {
    let text = "[numerics]\ncheck_interval = 9223372036854775808\n";
    assert!(examined(text).is_ok(), "{:?}", examined(text));
    let e = Case::from_toml(text, "fuzz.toml").unwrap_err();
    assert!(e.to_string().contains("largest integer"), "{e}");
}

/// Found by the tests above: NaN in a key the case does not use was written to the resolved
/// case as `NaN`, which TOML does not read back; a non-finite number is bad input in any key.
#[test]
fn nan_in_an_unused_key_is_bad_input() {
    let text = "[physics]\nmodel = \"boussinesq\"\nexpansion = nan\n";
    let e = Case::from_toml(text, "fuzz.toml").unwrap_err();
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(3), Some("physics.expansion"))
    );
}
