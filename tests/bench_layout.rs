//! The benchmarks' layout (benches/README.md): every `benches/…` and
//! `scripts/…` path that the project's pages name exists; every folder of
//! `benches/` is listed in benches/README.md; the one harness,
//! `benches/run.sh`, names an existing driver for each suite and a suite
//! for each folder of drivers; every file of `scripts/` is
//! used somewhere (no one-off drivers); `benches/results/` holds
//! `<machine>/<table>.jsonl` files of table rows only (no dated run logs,
//! no notes); and every `.jsonl` under `benches/` is JSON lines. Std and
//! serde_json only, no build of the CLI: cheap.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The pages whose `benches/…` and `scripts/…` paths must exist (besides
/// every `.md` under docs/).
const PAGES: [&str; 4] = [
    "README.md",
    "BENCHMARKS.md",
    "benches/README.md",
    "benches/background.md",
];

/// Where a file of `scripts/` may be named to count as used.
const USERS: [&str; 4] = ["README.md", "BENCHMARKS.md", "benches", "docs"];

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(ROOT)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The `benches/…` and `scripts/…` paths in `text`: a run of path
/// characters starting with either prefix at a word start. One written
/// `COMMIT:benches/…` (a path in git's history, `git show`) is left out.
fn named_paths(text: &str) -> Vec<String> {
    let is_path = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut found = Vec::new();
    for prefix in ["benches/", "scripts/"] {
        for (at, _) in text.match_indices(prefix) {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| is_path(c) || c == ':') {
                continue;
            }
            let rest = &text[at..];
            let end = rest.find(|c: char| !is_path(c)).unwrap_or(rest.len());
            let path = rest[..end].trim_end_matches(['.', ',', '-']);
            found.push(path.to_string());
        }
    }
    found
}

#[test]
fn the_named_bench_and_script_paths_exist() {
    let mut pages: Vec<PathBuf> = PAGES.iter().map(|p| Path::new(ROOT).join(p)).collect();
    let mut docs = Vec::new();
    files_under(&Path::new(ROOT).join("docs"), &mut docs);
    pages.extend(
        docs.into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md")),
    );
    let mut missing = Vec::new();
    let mut seen = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for path in named_paths(&text) {
            seen += 1;
            if !Path::new(ROOT).join(&path).exists() {
                missing.push(format!("{}: {path}", relative(page)));
            }
        }
    }
    assert!(seen > 50, "only {seen} paths named: is the scan broken?");
    assert!(
        missing.is_empty(),
        "named but not in the tree (a path of git's history is written COMMIT:path):\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_path_scan_finds_what_a_page_names() {
    let text = "Run `bash benches/node/run.sh`, then scripts/test.sh. See \
                `git show 855b977:benches/results/batch.md`, out/benches/x and \
                benches/results/<machine>/*.jsonl.";
    assert_eq!(
        named_paths(text),
        ["benches/node/run.sh", "benches/results/", "scripts/test.sh"]
    );
}

#[test]
fn every_bench_folder_is_listed_in_the_benches_readme() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("benches/README.md")).unwrap();
    let mut unlisted = Vec::new();
    for entry in std::fs::read_dir(Path::new(ROOT).join("benches")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if entry.path().is_dir() && !readme.contains(&format!("`{name}/`")) {
            unlisted.push(name);
        }
    }
    assert!(
        unlisted.is_empty(),
        "benches/ folders missing from benches/README.md's table (question, section, command): {unlisted:?}"
    );
}

/// The folders of `benches/` that hold no driver of their own: the rows,
/// the sweep configurations, and a C program built by hand on the GPU
/// machine (benches/README.md).
const NOT_DRIVERS: [&str; 3] = ["results", "sweeps", "memory"];

/// The suites of `benches/run.sh` as (name, driver path): its lines
/// `"name|runs on|section|interpreter path"`.
fn harness_suites(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim().strip_prefix('"')?.strip_suffix('"')?;
            let fields: Vec<&str> = line.split('|').collect();
            let [name, _, _, driver] = fields[..] else {
                return None;
            };
            let path = driver.split_whitespace().nth(1)?;
            Some((name.to_string(), path.to_string()))
        })
        .collect()
}

#[test]
fn the_harness_names_a_driver_for_every_folder() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("benches/run.sh")).unwrap();
    let suites = harness_suites(&text);
    assert!(
        suites.len() >= 15,
        "read {} suites in benches/run.sh",
        suites.len()
    );
    let missing: Vec<_> = suites
        .iter()
        .filter(|(_, path)| !Path::new(ROOT).join(path).is_file())
        .collect();
    assert!(
        missing.is_empty(),
        "benches/run.sh suites whose driver is missing: {missing:?}"
    );
    let mut names: Vec<&str> = suites.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(
        names.len(),
        before,
        "a suite name used twice in benches/run.sh"
    );
    let mut uncovered = Vec::new();
    for entry in std::fs::read_dir(Path::new(ROOT).join("benches")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let prefix = format!("benches/{name}/");
        if entry.path().is_dir()
            && !NOT_DRIVERS.contains(&name.as_str())
            && !suites.iter().any(|(_, path)| path.starts_with(&prefix))
        {
            uncovered.push(name);
        }
    }
    assert!(
        uncovered.is_empty(),
        "benches/ folders no suite of benches/run.sh runs: {uncovered:?}"
    );
}

#[test]
fn the_harness_lines_are_read_as_suites() {
    let text = "suites=(\n  \"node|GPU node|The node's throughput|bash benches/node/run.sh\"\n  \
                \"auto|host|auto|python3 benches/auto/grid.py\"\n)\necho \"a|b\"\n";
    assert_eq!(
        harness_suites(text),
        [
            ("node".to_string(), "benches/node/run.sh".to_string()),
            ("auto".to_string(), "benches/auto/grid.py".to_string())
        ]
    );
}

#[test]
fn every_script_is_used() {
    let mut texts = String::new();
    let mut users = Vec::new();
    for user in USERS {
        let path = Path::new(ROOT).join(user);
        if path.is_dir() {
            files_under(&path, &mut users);
        } else {
            users.push(path);
        }
    }
    files_under(&Path::new(ROOT).join("scripts"), &mut users);
    files_under(&Path::new(ROOT).join("tests"), &mut users);
    users.push(Path::new(ROOT).join(".ci/run"));
    for user in &users {
        if let Ok(text) = std::fs::read_to_string(user) {
            texts.push_str(&text);
        }
    }
    let mut scripts = Vec::new();
    files_under(&Path::new(ROOT).join("scripts"), &mut scripts);
    assert!(scripts.len() > 10, "{scripts:?}");
    let unused: Vec<String> = scripts
        .iter()
        .map(|p| relative(p))
        .filter(|name| {
            // Named by another file than itself.
            let own = std::fs::read_to_string(Path::new(ROOT).join(name)).unwrap_or_default();
            texts.matches(name.as_str()).count() <= own.matches(name.as_str()).count()
        })
        .collect();
    assert!(
        unused.is_empty(),
        "scripts named by nothing (README, BENCHMARKS, docs, benches, tests, .ci, other scripts): \
         delete them, or fold a bench driver into benches/<question>/: {unused:?}"
    );
}

/// Whether `name` starts like a date (`2026-11-21-…`).
fn dated(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

#[test]
fn the_results_hold_machine_tables_only() {
    let results = Path::new(ROOT).join("benches/results");
    let mut wrong = Vec::new();
    let mut rows = 0;
    for entry in std::fs::read_dir(&results).unwrap() {
        let machine = entry.unwrap().path();
        let name = relative(&machine);
        if dated(&machine.file_name().unwrap().to_string_lossy()) {
            wrong.push(format!("{name}: a dated run log (git keeps those)"));
            continue;
        }
        if !machine.is_dir() {
            wrong.push(format!("{name}: not a machine folder"));
            continue;
        }
        for file in std::fs::read_dir(&machine).unwrap() {
            let file = file.unwrap().path();
            if file.is_dir() || file.extension().is_none_or(|e| e != "jsonl") {
                wrong.push(format!("{}: not a <table>.jsonl file", relative(&file)));
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let row: serde_json::Value = match serde_json::from_str(line) {
                    Ok(row) => row,
                    Err(e) => {
                        wrong.push(format!("{}:{}: not JSON ({e})", relative(&file), n + 1));
                        continue;
                    }
                };
                let columns = row["columns"].as_array().map(Vec::len);
                let figures = row["figures"].as_array().map(Vec::len);
                if !row["table"].is_string() || columns.is_none() || columns != figures {
                    wrong.push(format!(
                        "{}:{}: not a table row (table, columns, as many figures)",
                        relative(&file),
                        n + 1
                    ));
                }
                rows += 1;
            }
        }
    }
    assert!(rows > 100, "only {rows} table rows under benches/results");
    assert!(
        wrong.is_empty(),
        "benches/results/ holds <machine>/<table>.jsonl table rows only:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_dated_folder_is_recognised() {
    assert!(dated("2026-11-21-h200-sigma64"));
    assert!(!dated("dev-2core") && !dated("h200x2") && !dated("2026"));
}

#[test]
fn every_jsonl_under_benches_is_json_lines() {
    let mut files = Vec::new();
    files_under(&Path::new(ROOT).join("benches"), &mut files);
    let mut bad = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
    {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            if serde_json::from_str::<serde_json::Value>(line).is_err() {
                bad.push(format!("{}:{}", relative(file), n + 1));
            }
        }
    }
    assert!(bad.is_empty(), "lines that are not JSON: {bad:?}");
}
