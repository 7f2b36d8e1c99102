//! The architecture rules of docs/architecture.md, checked on every
//! crate's sources (`tiles/src`, `base/src`, `opencl/src`, `core/src`,
//! `gdal/src`, `report/src`, `jobs/src`, `src`, `python/src`, `benches/criterion`) with std only: no file-level
//! import cycle, no function over [`MAX_FN_LINES`] lines, no file over
//! [`MAX_FILE_LINES`] lines of code, the environment read in `switches.rs`
//! only, no `too_many_arguments` allowance, and no CLI flag (`--tile`) in a
//! string of the library's code (every crate but the CLI's `src/cli/`):
//! library messages name settings through `error::Setting`, which each
//! front end spells its own way. Test code (`#[cfg(test)]` items) and
//! comments do not count. The layering of the crates themselves is
//! checked on their manifests: no crate depends on a layer above it
//! ([`LAYERS`]); and no file under `src/` sits in the folder of a module
//! another crate owns (where a merge from before a split puts a new file,
//! which no crate would compile).
//!
//! The crate table of docs/architecture.md is checked against `cargo
//! metadata` (read with serde_json).
//!
//! The checker reads Rust with a small lexer rather than a parser: it knows
//! comments, string and char literals, braces and `crate::`/`super::`/
//! `self::` paths (use trees included), which is all the rules need. Its own
//! tests below feed it small in-memory sources, so a rule that stopped
//! firing would fail here and not only pass on a clean tree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The longest a function may be, in lines from `fn` to its closing brace.
const MAX_FN_LINES: usize = 120;
/// The most lines of code (not blank, not comment, not test) a file may hold.
const MAX_FILE_LINES: usize = 900;
/// The one file that reads the process environment (the core crate's).
const SWITCHES: &str = "switches.rs";
/// One crate of the workspace: its package name, where its sources and
/// manifest are, its rank in the layering (it may depend only on crates
/// of ours of a lower rank), the fewest `.rs` files its folder must hold
/// (a guard against reading an empty or moved folder), and the libraries
/// it has no business with (GDAL, clap, OpenCL but in the device layer).
struct Layer {
    name: &'static str,
    dir: &'static str,
    manifest: &'static str,
    rank: u8,
    fewest: usize,
    libraries: &'static [&'static str],
}

/// GDAL's bindings and the CLI's parser: no crate below them may name them.
const GDAL_AND_CLAP: &[&str] = &["gdal", "gdal-sys", "clap"];
/// The same and OpenCL: what the crates beside the device layer must not name.
const GDAL_CLAP_OPENCL: &[&str] = &["gdal", "gdal-sys", "clap", "opencl3"];

/// The workspace's crates from the bottom (docs/architecture.md, Crates).
/// Crates of one rank may not depend on each other (GDAL and the reports;
/// the Python binding beside them, on the core only).
const LAYERS: [Layer; 10] = [
    Layer {
        name: "tiles",
        dir: "tiles/src",
        manifest: "tiles/Cargo.toml",
        rank: 0,
        fewest: 0,
        libraries: GDAL_CLAP_OPENCL,
    },
    Layer {
        name: "mapfilter-base",
        dir: "base/src",
        manifest: "base/Cargo.toml",
        rank: 1,
        fewest: 10,
        libraries: GDAL_CLAP_OPENCL,
    },
    Layer {
        name: "mapfilter-opencl",
        dir: "opencl/src",
        manifest: "opencl/Cargo.toml",
        rank: 2,
        fewest: 6,
        libraries: GDAL_AND_CLAP,
    },
    Layer {
        name: "mapfilter-core",
        dir: "core/src",
        manifest: "core/Cargo.toml",
        rank: 3,
        fewest: 80,
        libraries: GDAL_CLAP_OPENCL,
    },
    Layer {
        name: "mapfilter-gdal",
        dir: "gdal/src",
        manifest: "gdal/Cargo.toml",
        rank: 4,
        fewest: 12,
        libraries: &["clap", "opencl3"],
    },
    Layer {
        name: "mapfilter-report",
        dir: "report/src",
        manifest: "report/Cargo.toml",
        rank: 4,
        fewest: 8,
        libraries: GDAL_CLAP_OPENCL,
    },
    Layer {
        name: "mapfilter-python",
        dir: "python/src",
        manifest: "python/Cargo.toml",
        rank: 4,
        fewest: 0,
        libraries: GDAL_CLAP_OPENCL,
    },
    Layer {
        name: "mapfilter-benches",
        dir: "benches/criterion",
        manifest: "benches/criterion/Cargo.toml",
        rank: 4,
        fewest: 2,
        libraries: GDAL_CLAP_OPENCL,
    },
    Layer {
        name: "mapfilter-jobs",
        dir: "jobs/src",
        manifest: "jobs/Cargo.toml",
        rank: 5,
        fewest: 25,
        libraries: &["clap", "opencl3"],
    },
    Layer {
        name: "mapfilter",
        dir: "src",
        manifest: "Cargo.toml",
        rank: 6,
        fewest: 30,
        libraries: &["opencl3", "mapfilter-python", "mapfilter-benches"],
    },
];

impl Layer {
    /// What this crate must not depend on: every crate of ours of its rank
    /// or above (itself aside), and its [`Layer::libraries`].
    fn forbidden(&self) -> Vec<&'static str> {
        LAYERS
            .iter()
            .filter(|other| other.rank >= self.rank && other.name != self.name)
            .map(|other| other.name)
            .chain(self.libraries.iter().copied())
            .collect()
    }
}
/// The modules split out of a crate into one below or beside it, by the
/// folder of their new home (a crate's `src/` for a module that became a
/// crate): (crate folder they left, module, new folder).
const MOVED_MODULES: [(&str, &str, &str); 14] = [
    ("src", "gdal", "gdal/src"),
    ("src", "report", "report/src"),
    ("src", "job", "jobs/src/job"),
    ("src", "sweep", "jobs/src/sweep"),
    ("src", "batch", "jobs/src/batch"),
    ("core/src", "device", "opencl/src"),
    ("core/src", "error", "base/src/error"),
    ("core/src", "switches", "base/src/switches"),
    ("core/src", "output", "base/src/output"),
    ("core/src", "interrupt", "base/src/interrupt"),
    ("core/src", "cpu", "base/src/cpu"),
    ("core/src", "limits", "base/src/limits"),
    ("core/src", "progress", "base/src/progress"),
    ("core/src", "grain", "base/src/grain"),
];
/// The folder, under `src/`, of the one layer whose strings may name CLI
/// flags: the CLI's own.
const CLI_DIR: &str = "cli/";
/// Lines of the library's code whose strings may hold a `--flag`, as
/// (file, a fragment of the line, why): none is a message naming one of
/// mapfilter's settings.
const FLAG_ALLOWANCES: [(&str, &str, &str); 4] = [
    (
        "jobs/src/batch/slurm.rs",
        "#SBATCH --",
        "Slurm's own directives, in the script `batch plan --emit slurm` writes",
    ),
    (
        "jobs/src/batch/slurm.rs",
        "`mapfilter batch plan --emit slurm`",
        "the written script's comment naming the command that wrote it",
    ),
    (
        "jobs/src/batch/slurm.rs",
        "batch run {dir} --jobs 1",
        "the command line the written script runs",
    ),
    (
        "gdal/src/creation_options.rs",
        "gdalinfo --format",
        "GDAL's gdalinfo's own option, not one of mapfilter's",
    ),
];
#[test]
fn the_source_tree_keeps_the_architecture_rules() {
    let mut broken = Vec::new();
    let mut trees = BTreeMap::new();
    for layer in &LAYERS {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(layer.dir);
        let mut files = Vec::new();
        read_tree(&root, &root, &mut files);
        assert!(
            files.len() > layer.fewest,
            "read only {} files under {}/",
            files.len(),
            layer.dir
        );
        broken.extend(check_in(layer.dir, &files));
        trees.insert(layer.dir, files);
    }
    let core_modules = trees["core/src"]
        .iter()
        .map(|(p, _)| top_module(p))
        .filter(|m| m != "lib")
        .map(|m| (m.clone(), format!("core/src/{m}")));
    let mut owners: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
    owners.entry("src").or_default().extend(core_modules);
    for (from, module, to) in MOVED_MODULES {
        owners
            .entry(from)
            .or_default()
            .insert(module.to_string(), to.to_string());
    }
    for (dir, owned) in &owners {
        broken.extend(stranded(dir, &trees[dir], owned));
    }
    assert!(
        broken.is_empty(),
        "{} architecture rule(s) broken (docs/architecture.md):\n  {}",
        broken.len(),
        broken.join("\n  ")
    );
}

#[test]
fn no_crate_depends_on_a_layer_above_it() {
    for layer in &LAYERS {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join(layer.manifest);
        let text = std::fs::read_to_string(&manifest).unwrap();
        assert!(
            text.contains("[package]"),
            "{} is not a package manifest",
            layer.manifest
        );
        let upward = upward_dependencies(&text, &layer.forbidden());
        assert!(
            upward.is_empty(),
            "{} depends on {upward:?}, a layer above it or a library it has no business with \
             (docs/architecture.md, Crates): move the code that needs it up a layer",
            layer.manifest
        );
    }
}

/// The table of docs/architecture.md that lists each crate and the crates
/// of ours it depends on: (crate, its dependencies), from the rows after
/// the header `| crate | folder | depends on (ours) |`.
fn documented_graph(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split(',')
            .map(|n| n.trim().trim_matches('`').to_string())
            .filter(|n| !n.is_empty() && n != "—")
            .collect()
    };
    doc.lines()
        .skip_while(|l| !l.starts_with("| crate | folder | depends on (ours) |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').collect();
            let [name, _, deps] = cells[..] else {
                return None;
            };
            Some((name.trim().trim_matches('`').to_string(), names(deps)))
        })
        .collect()
}

/// Each workspace crate and the workspace crates among its normal
/// dependencies, from `cargo metadata`'s JSON.
fn cargo_graph(metadata: &serde_json::Value) -> BTreeMap<String, BTreeSet<String>> {
    let packages = metadata["packages"]
        .as_array()
        .expect("cargo metadata lists packages");
    let ours: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|n| ours.contains(n))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().unwrap_or_default().to_string(), deps)
        })
        .collect()
}

#[test]
fn the_documented_crate_graph_is_cargos() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let doc = std::fs::read_to_string(Path::new(root).join("docs/architecture.md")).unwrap();
    let documented = documented_graph(&doc);
    assert!(
        documented.len() >= 9,
        "read {} crates in docs/architecture.md",
        documented.len()
    );
    assert_eq!(
        documented,
        cargo_graph(&metadata),
        "docs/architecture.md's crate table (Crates) differs from cargo metadata"
    );
}

/// The first module of a path under a crate's source folder (`method`
/// for `method/naive/mod.rs`, `engine` for `engine.rs`).
fn top_module(path: &str) -> String {
    let first = path.split('/').next().unwrap_or(path);
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

/// Files of a crate (`files`, under its folder `dir`) in the folder or
/// file of a module another crate owns (`owners`: module → its folder
/// there; `src/method/...`, `src/gdal/...`, `core/src/device/...`) that
/// the crate's `lib.rs` does not declare: compiled nowhere. A file added
/// under one of the moved folders on a branch from before a split lands
/// there when the branch is merged; it belongs in the crate that owns the
/// module.
fn stranded(
    dir: &str,
    files: &[(String, String)],
    owners: &BTreeMap<String, String>,
) -> Vec<String> {
    let lib = files
        .iter()
        .find(|(p, _)| p == "lib.rs")
        .map_or("", |(_, t)| t.as_str());
    files
        .iter()
        .filter_map(|(p, _)| {
            let module = top_module(p);
            let owner = owners.get(&module)?;
            let declared = lib.lines().any(|l| {
                let l = l.trim();
                l == format!("pub mod {module};") || l == format!("mod {module};")
            });
            (p != "lib.rs" && !declared).then(|| {
                let rest = p.strip_prefix(&module).unwrap_or(p).trim_start_matches('/');
                let to = match (rest, owner.ends_with("/src")) {
                    ("" | ".rs", true) => format!("{owner}/lib.rs"),
                    ("" | ".rs", false) => format!("{owner}.rs"),
                    ("mod.rs", true) => format!("{owner}/lib.rs"),
                    _ => format!("{owner}/{rest}"),
                };
                format!(
                    "{dir}/{p}: a path of the module `{module}` that {} owns, compiled nowhere \
                     in this crate (git mv it to {to})",
                    owner.split('/').next().unwrap_or(owner)
                )
            })
        })
        .collect()
}

/// The packages a Cargo manifest depends on, in any dependency table
/// (normal, dev, build, target-specific; inline `name = ...` entries and
/// `[dependencies.name]` tables), by package name (a `package = "..."`
/// rename counts as the package it names).
fn dependencies(manifest: &str) -> Vec<String> {
    let is_table = |header: &str| {
        header
            .rsplit('.')
            .next()
            .is_some_and(|last| last.ends_with("dependencies"))
    };
    let mut found = Vec::new();
    let mut in_table = false;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.trim();
            in_table = is_table(header);
            // `[dependencies.name]`: the table of one dependency.
            if let Some((table, name)) = header.rsplit_once('.')
                && is_table(table)
            {
                found.push(name.trim().trim_matches('"').to_string());
            }
            continue;
        }
        if !in_table {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let renamed = value.split_once("package").and_then(|(_, rest)| {
            let rest = rest.trim_start().strip_prefix('=')?.trim_start();
            rest.strip_prefix('"')?
                .split('"')
                .next()
                .map(str::to_string)
        });
        let key = key.trim().split('.').next().unwrap_or("").trim_matches('"');
        found.push(renamed.unwrap_or_else(|| key.to_string()));
    }
    found
}

/// The dependencies of a manifest that `above` forbids.
fn upward_dependencies(manifest: &str, above: &[&str]) -> Vec<String> {
    dependencies(manifest)
        .into_iter()
        .filter(|name| above.contains(&name.as_str()))
        .collect()
}

/// Every `.rs` file under `dir`, as (path relative to `root` with `/`, text).
fn read_tree(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_tree(root, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap().to_string_lossy();
            let text = std::fs::read_to_string(&path).unwrap();
            files.push((relative.replace('\\', "/"), text));
        }
    }
}

/// Every broken rule in `files` ((path under src/, text) pairs), one
/// message each, naming the file or function and the limit.
fn check(files: &[(String, String)]) -> Vec<String> {
    check_in("src", files)
}

/// [`check`] on one crate's files, under its source folder `dir`
/// (`src`, `core/src`): the messages name the files under it.
fn check_in(dir: &str, files: &[(String, String)]) -> Vec<String> {
    let sources: Vec<Source> = files.iter().map(|(p, t)| Source::read(dir, p, t)).collect();
    let mut broken = cycles(dir, &sources);
    for source in &sources {
        if source.test_only(&sources) {
            continue;
        }
        source.check_sizes(&mut broken);
        source.check_environment(&mut broken);
        if !(dir == "src" && source.path.starts_with(CLI_DIR)) {
            source.check_flags(&mut broken);
        }
        let allowances = source
            .code
            .iter()
            .collect::<String>()
            .matches("too_many_arguments")
            .count();
        if allowances > 0 {
            broken.push(format!(
                "{}/{}: {allowances} clippy::too_many_arguments allowance(s), none allowed \
                 (pass a parameter struct)",
                source.dir, source.path
            ));
        }
    }
    broken
}

/// One source file in the views the rules need. The views keep every
/// character's position (a blanked character becomes a space, a newline
/// stays), so an index in one is the same place in the others.
struct Source {
    /// The crate's source folder (`src`, `core/src`), for messages.
    dir: String,
    /// The path under `dir`.
    path: String,
    module: Vec<String>,
    /// Comments and `#[cfg(test)]` items blanked; strings kept.
    code: Vec<char>,
    /// `code` with string and char literals blanked too: braces and paths
    /// in it are the program's.
    skeleton: Vec<char>,
    /// Child modules declared `#[cfg(test)] mod name;` (in their own file).
    test_children: Vec<String>,
}

impl Source {
    fn read(dir: &str, path: &str, text: &str) -> Source {
        let chars: Vec<char> = text.chars().collect();
        let (mut code, mut skeleton) = blank_comments_and_strings(&chars);
        let mut test_children = Vec::new();
        for (start, end) in test_items(&skeleton) {
            let item: String = skeleton[start..end].iter().collect();
            if let Some(name) = declared_module(&item) {
                test_children.push(name);
            }
            for i in start..end {
                if code[i] != '\n' {
                    code[i] = ' ';
                    skeleton[i] = ' ';
                }
            }
        }
        Source {
            dir: dir.to_string(),
            path: path.to_string(),
            module: module_of(path),
            code,
            skeleton,
            test_children,
        }
    }

    /// Whether a parent declares this file `#[cfg(test)] mod name;`.
    fn test_only(&self, sources: &[Source]) -> bool {
        let Some((name, parent)) = self.module.split_last() else {
            return false;
        };
        sources
            .iter()
            .any(|s| s.module.as_slice() == parent && s.test_children.iter().any(|c| c == name))
    }

    /// The file and function size limits.
    fn check_sizes(&self, broken: &mut Vec<String>) {
        let code_lines = lines(&self.code).filter(|l| !l.trim().is_empty()).count();
        if code_lines > MAX_FILE_LINES {
            broken.push(format!(
                "{}/{}: {code_lines} lines of code, over the {MAX_FILE_LINES}-line file limit \
                 (split it by responsibility)",
                self.dir, self.path
            ));
        }
        for (name, length) in functions(&self.skeleton) {
            if length > MAX_FN_LINES {
                broken.push(format!(
                    "{}/{}: fn {name} is {length} lines, over the {MAX_FN_LINES}-line limit \
                     (split it into named steps)",
                    self.dir, self.path
                ));
            }
        }
    }

    /// Environment reads outside `switches.rs`.
    fn check_environment(&self, broken: &mut Vec<String>) {
        if self.path == SWITCHES {
            return;
        }
        let tokens = tokens(&self.skeleton);
        for w in tokens.windows(3) {
            if w[0].is_ident("env")
                && w[1].kind == Kind::PathSep
                && ["var", "var_os", "vars", "vars_os"]
                    .iter()
                    .any(|v| w[2].is_ident(v))
            {
                broken.push(format!(
                    "{}/{}:{}: reads the environment (env::{}); only base/src/{SWITCHES} may: \
                     read it there once and pass the value down",
                    self.dir, self.path, w[2].line, w[2].text
                ));
            }
        }
    }

    /// CLI flags (`--` and a letter) in the strings of library code, but
    /// on the lines [`FLAG_ALLOWANCES`] allows.
    fn check_flags(&self, broken: &mut Vec<String>) {
        let file = format!("{}/{}", self.dir, self.path);
        let lines: Vec<String> = lines(&self.code).collect();
        for i in 0..self.code.len().saturating_sub(2) {
            // In a string: kept in `code` (comments and tests blanked),
            // blanked in `skeleton`.
            let in_string = self.code[i] != self.skeleton[i];
            if !(in_string
                && self.code[i] == '-'
                && self.code[i + 1] == '-'
                && self.code[i + 2].is_ascii_lowercase()
                && (i == 0 || self.code[i - 1] != '-'))
            {
                continue;
            }
            let line = self.code[..i].iter().filter(|&&c| c == '\n').count();
            let allowed = FLAG_ALLOWANCES
                .iter()
                .any(|(f, fragment, _)| *f == file && lines[line].contains(fragment));
            if allowed {
                continue;
            }
            let flag: String = self.code[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == '-')
                .collect();
            broken.push(format!(
                "{file}:{}: a library string names the CLI flag {flag}; name the setting \
                 through error::Setting (each front end spells it: docs/architecture.md, Errors)",
                line + 1
            ));
        }
    }

    /// The crate paths this file names (`crate::`, `super::`, `self::`),
    /// resolved to absolute module paths (not yet to files).
    fn paths(&self) -> Vec<Vec<String>> {
        let tokens = tokens(&self.skeleton);
        let mut raw = Vec::new();
        let mut k = 0;
        while k < tokens.len() {
            let rooted = ["crate", "super", "self"]
                .iter()
                .any(|r| tokens[k].is_ident(r))
                && tokens.get(k + 1).is_some_and(|t| t.kind == Kind::PathSep)
                && (k == 0 || tokens[k - 1].kind != Kind::PathSep);
            if rooted {
                k = use_tree(&tokens, k, Vec::new(), &mut raw);
            } else {
                k += 1;
            }
        }
        raw.into_iter().filter_map(|p| self.resolve(&p)).collect()
    }

    /// `crate::a::b`, `super::a` or `self::a` seen from this file, as an
    /// absolute module path.
    fn resolve(&self, path: &[String]) -> Option<Vec<String>> {
        let mut base = self.module.clone();
        let mut rest = path;
        while let Some((head, tail)) = rest.split_first() {
            match head.as_str() {
                "crate" => base.clear(),
                "super" => {
                    base.pop()?;
                }
                "self" => {}
                _ => break,
            }
            rest = tail;
        }
        base.extend(rest.iter().filter(|s| *s != "self").cloned());
        Some(base)
    }
}

/// The module path of a file under src/: `a/b.rs` and `a/b/mod.rs` are
/// `a::b`; `lib.rs` and `main.rs` the crate root.
fn module_of(path: &str) -> Vec<String> {
    let stem = path.strip_suffix(".rs").unwrap_or(path);
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main")
        || parts.last().unwrap() == "mod"
    {
        parts.pop();
    }
    parts
}

/// The file-level import graph's cycles: an edge from each file to every
/// file whose module it names, the longest named prefix that is a file,
/// except its own module and its ancestors (a child using its parent's items
/// is the module tree, not an import).
fn cycles(dir: &str, sources: &[Source]) -> Vec<String> {
    let files: BTreeMap<&[String], &str> = sources
        .iter()
        .map(|s| (s.module.as_slice(), s.path.as_str()))
        .collect();
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for source in sources {
        let targets = edges.entry(&source.path).or_default();
        for path in source.paths() {
            let named = (1..=path.len())
                .rev()
                .find_map(|n| files.get_key_value(&path[..n]));
            if let Some((module, file)) = named
                && !source.module.starts_with(module)
            {
                targets.insert(file);
            }
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .map(|component| {
            let arrows: Vec<String> = component
                .iter()
                .flat_map(|from| {
                    edges[from]
                        .iter()
                        .filter(|to| component.contains(*to))
                        .map(move |to| format!("{from} -> {to}"))
                })
                .collect();
            format!(
                "import cycle among {} files of {dir}/ (none allowed; move the shared item down \
                 or invert the dependency): {}",
                component.len(),
                arrows.join(", ")
            )
        })
        .collect()
}

/// The strongly connected components of more than one node (Tarjan).
fn strongly_connected<'a>(edges: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<BTreeSet<&'a str>> {
    struct Walk<'a, 'e> {
        edges: &'e BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<BTreeSet<&'a str>>,
    }
    impl<'a> Walk<'a, '_> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            for &w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let at = self.stack.iter().rposition(|&s| s == v).unwrap();
                let component: BTreeSet<&str> = self.stack.drain(at..).collect();
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for &v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// The lines of a view.
fn lines(view: &[char]) -> impl Iterator<Item = String> + '_ {
    view.split(|&c| c == '\n').map(|l| l.iter().collect())
}

/// The source with comments blanked (strings kept), and with comments and
/// string and char literals blanked (the literal's quotes kept).
fn blank_comments_and_strings(src: &[char]) -> (Vec<char>, Vec<char>) {
    let mut code = src.to_vec();
    let mut skeleton = src.to_vec();
    let blank = |view: &mut Vec<char>, from: usize, to: usize| {
        for c in &mut view[from..to] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let at = |i: usize, s: &str| {
        s.chars()
            .enumerate()
            .all(|(k, c)| src.get(i + k) == Some(&c))
    };
    let mut i = 0;
    while i < src.len() {
        let after_ident = i > 0 && (src[i - 1].is_alphanumeric() || src[i - 1] == '_');
        if at(i, "//") {
            let end = (i..src.len())
                .find(|&k| src[k] == '\n')
                .unwrap_or(src.len());
            blank(&mut code, i, end);
            blank(&mut skeleton, i, end);
            i = end;
        } else if at(i, "/*") {
            let mut depth = 0;
            let mut k = i;
            while k < src.len() {
                if at(k, "/*") {
                    depth += 1;
                    k += 2;
                } else if at(k, "*/") {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            blank(&mut code, i, k);
            blank(&mut skeleton, i, k);
            i = k;
        } else if let Some(end) = string_end(src, i, after_ident) {
            blank(&mut skeleton, i + 1, end - 1);
            i = end;
        } else if src[i] == '\'' {
            // A char literal ('x', '\n', '\''); otherwise a lifetime or label.
            let end = if src.get(i + 1) == Some(&'\\') {
                (i + 3..src.len()).find(|&k| src[k] == '\'').map(|k| k + 1)
            } else if src.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut skeleton, i + 1, end - 1);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    (code, skeleton)
}

/// The end (one past the closing quote) of a string literal starting at
/// `i`: `"…"`, `b"…"`, `r"…"`, `r#"…"#`, `br#"…"#`.
fn string_end(src: &[char], i: usize, after_ident: bool) -> Option<usize> {
    let mut k = i;
    if !after_ident && src[k] == 'b' {
        k += 1;
    }
    if !after_ident && src.get(k) == Some(&'r') {
        k += 1;
        let hashes = src[k..].iter().take_while(|&&c| c == '#').count();
        k += hashes;
        if src.get(k) != Some(&'"') {
            return None;
        }
        let closing: Vec<char> = std::iter::once('"')
            .chain(std::iter::repeat_n('#', hashes))
            .collect();
        return (k + 1..src.len())
            .find(|&e| src[e..].starts_with(&closing))
            .map(|e| e + closing.len());
    }
    if src.get(k) != Some(&'"') || (k == i && after_ident && src[i] != '"') {
        return None;
    }
    let mut e = k + 1;
    while e < src.len() {
        match src[e] {
            '\\' => e += 2,
            '"' => return Some(e + 1),
            _ => e += 1,
        }
    }
    Some(src.len())
}

/// The spans of `#[cfg(test)]` items (the attribute through the item's end).
fn test_items(skeleton: &[char]) -> Vec<(usize, usize)> {
    let attribute: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut spans = Vec::new();
    let mut i = 0;
    while i + attribute.len() <= skeleton.len() {
        if skeleton[i..].starts_with(&attribute) {
            let end = item_end(skeleton, i + attribute.len());
            spans.push((i, end));
            i = end;
        } else {
            i += 1;
        }
    }
    spans
}

/// The end of the item starting at `from`: past its first `;` or its
/// brace-matched body, whichever comes first outside parentheses and
/// brackets.
fn item_end(skeleton: &[char], from: usize) -> usize {
    let mut depth = 0i32;
    let mut i = from;
    while i < skeleton.len() {
        match skeleton[i] {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ';' if depth == 0 => return i + 1,
            '{' if depth == 0 => return matching_brace(skeleton, i) + 1,
            _ => {}
        }
        i += 1;
    }
    skeleton.len()
}

/// The index of the `}` closing the `{` at `open`.
fn matching_brace(skeleton: &[char], open: usize) -> usize {
    let mut depth = 0;
    for (i, &c) in skeleton.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    skeleton.len() - 1
}

/// `name` where `item` is `mod name;` (with any visibility).
fn declared_module(item: &str) -> Option<String> {
    let words: Vec<&str> = item
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ';'))
        .filter(|w| !w.is_empty())
        .collect();
    let at = words.iter().position(|w| *w == "mod")?;
    words.get(at + 1)?.strip_suffix(';').map(str::to_string)
}

/// Every function with a body, as (name, lines from `fn` to its closing
/// brace).
fn functions(skeleton: &[char]) -> Vec<(String, usize)> {
    let tokens = tokens(skeleton);
    let mut found = Vec::new();
    for (k, pair) in tokens.windows(2).enumerate() {
        if !(pair[0].is_ident("fn") && pair[1].kind == Kind::Ident) {
            continue;
        }
        let end = item_end(skeleton, tokens[k].start);
        if skeleton.get(end - 1) == Some(&'}') {
            let last_line = tokens[k].line
                + skeleton[tokens[k].start..end]
                    .iter()
                    .filter(|&&c| c == '\n')
                    .count();
            found.push((pair[1].text.clone(), last_line - tokens[k].line + 1));
        }
    }
    found
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Ident,
    PathSep,
    Open,
    Close,
    Comma,
    Other,
}

#[derive(Debug)]
struct Token {
    kind: Kind,
    text: String,
    start: usize,
    line: usize,
}

impl Token {
    fn is_ident(&self, name: &str) -> bool {
        self.kind == Kind::Ident && self.text == name
    }
}

/// The skeleton's identifiers, `::`, braces and commas (anything else as
/// one `Other` token per character), with 1-based lines.
fn tokens(skeleton: &[char]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < skeleton.len() {
        let c = skeleton[i];
        let (kind, len) = if c.is_alphabetic() || c == '_' {
            let n = skeleton[i..]
                .iter()
                .take_while(|c| c.is_alphanumeric() || **c == '_')
                .count();
            (Kind::Ident, n)
        } else if c == ':' && skeleton.get(i + 1) == Some(&':') {
            (Kind::PathSep, 2)
        } else if c == '{' {
            (Kind::Open, 1)
        } else if c == '}' {
            (Kind::Close, 1)
        } else if c == ',' {
            (Kind::Comma, 1)
        } else {
            if c == '\n' {
                line += 1;
            }
            i += 1;
            if !c.is_whitespace() {
                out.push(Token {
                    kind: Kind::Other,
                    text: c.to_string(),
                    start: i - 1,
                    line,
                });
            }
            continue;
        };
        out.push(Token {
            kind,
            text: skeleton[i..i + len].iter().collect(),
            start: i,
            line,
        });
        i += len;
    }
    out
}

/// Reads the path (or use tree) starting at token `k` onto `prefix`,
/// pushing every full path it names to `out`; returns the token after it.
fn use_tree(
    tokens: &[Token],
    mut k: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(k) {
            Some(t) if t.kind == Kind::Ident => prefix.push(t.text.clone()),
            _ => break,
        }
        k += 1;
        if tokens.get(k).is_none_or(|t| t.kind != Kind::PathSep) {
            break;
        }
        k += 1;
        if tokens.get(k).is_some_and(|t| t.kind == Kind::Open) {
            k += 1;
            while tokens.get(k).is_some_and(|t| t.kind != Kind::Close) {
                let next = use_tree(tokens, k, prefix.clone(), out);
                // Skip `as alias`, `*` and anything else up to the next entry.
                k = next.max(k + 1);
                while tokens
                    .get(k)
                    .is_some_and(|t| t.kind != Kind::Comma && t.kind != Kind::Close)
                {
                    k += 1;
                }
                if tokens.get(k).is_some_and(|t| t.kind == Kind::Comma) {
                    k += 1;
                }
            }
            return k + 1;
        }
    }
    out.push(prefix);
    k
}

#[cfg(test)]
mod checker {
    //! The checker on small in-memory trees: each rule fires where it should
    //! and nowhere else.

    use super::*;

    fn tree(files: &[(&str, &str)]) -> Vec<String> {
        let owned: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        check(&owned)
    }

    fn function(name: &str, lines: usize) -> String {
        let body = "    let _ = 1;\n".repeat(lines - 2);
        format!("fn {name}() {{\n{body}}}\n")
    }

    #[test]
    fn a_two_file_cycle_is_named_with_its_arrows() {
        let broken = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            ("b.rs", "pub struct B(crate::a::A);\n"),
        ]);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(
            broken[0].contains("a.rs -> b.rs") && broken[0].contains("b.rs -> a.rs"),
            "{broken:?}"
        );
    }

    #[test]
    fn use_trees_and_super_paths_count_but_ancestors_comments_and_tests_do_not() {
        // c -> d through a grouped use and d -> c through super: a cycle.
        let broken = tree(&[
            ("x/mod.rs", "pub struct X;\n"),
            ("x/c.rs", "use crate::{x::{d::D, X}, y};\n"),
            ("x/d.rs", "pub struct D(super::c::C);\n"),
        ]);
        assert_eq!(broken.len(), 1, "{broken:?}");
        // A child naming its parent, a comment, a string and a test module
        // naming the other file: no cycle.
        let broken = tree(&[
            ("x/mod.rs", "pub struct X;\nuse self::c::C;\n"),
            (
                "x/c.rs",
                "use super::X;\n// crate::x::d\nconst S: &str = \"crate::x::d\";\n",
            ),
            (
                "x/d.rs",
                "use crate::x::c::C;\n#[cfg(test)]\nmod tests {\n    use crate::x::c;\n}\n",
            ),
        ]);
        assert!(broken.is_empty(), "{broken:?}");
    }

    #[test]
    fn a_three_file_cycle_is_one_failure() {
        let broken = tree(&[
            ("p.rs", "use crate::q::Q;\n"),
            ("q.rs", "use crate::r::R;\n"),
            ("r.rs", "fn f() { crate::p::go() }\n"),
        ]);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(broken[0].contains("3 files"), "{broken:?}");
    }

    #[test]
    fn a_function_over_the_limit_is_named_with_the_limit() {
        let long = function("too_long", MAX_FN_LINES + 1);
        let fine = function("just_fits", MAX_FN_LINES);
        let broken = tree(&[("a.rs", &format!("{long}{fine}"))]);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(
            broken[0].contains("fn too_long is 121 lines") && broken[0].contains("120-line"),
            "{broken:?}"
        );
        // Braces in strings and chars do not end or extend a function.
        let tricky = format!("fn short() {{ let _ = \"}}\"; let _ = '{{'; }}\n{fine}");
        assert!(tree(&[("a.rs", &tricky)]).is_empty());
    }

    #[test]
    fn a_file_over_the_limit_counts_code_lines_only() {
        let code = "const X: u8 = 1;\n".repeat(MAX_FILE_LINES);
        let padded = format!("{code}\n// a comment\n\n#[cfg(test)]\nmod tests {{\n{code}}}\n");
        assert!(tree(&[("a.rs", &padded)]).is_empty());
        let broken = tree(&[("a.rs", &format!("{code}const Y: u8 = 2;\n"))]);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(
            broken[0].contains("901 lines") && broken[0].contains("900-line"),
            "{broken:?}"
        );
    }

    #[test]
    fn environment_reads_belong_to_switches() {
        let read = "fn f() -> bool { std::env::var_os(\"MAPFILTER_X\").is_some() }\n";
        assert!(tree(&[("switches.rs", read)]).is_empty());
        let broken = tree(&[("device/mod.rs", read)]);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(
            broken[0].contains("src/device/mod.rs:1") && broken[0].contains("switches.rs"),
            "{broken:?}"
        );
        let in_test = format!("#[cfg(test)]\nmod tests {{\n{read}}}\n");
        assert!(tree(&[("device/mod.rs", &in_test)]).is_empty());
    }

    /// What the core crate must not depend on.
    fn core_above() -> Vec<&'static str> {
        LAYERS[3].forbidden()
    }

    #[test]
    fn a_core_dependency_on_a_layer_above_is_named_in_any_table() {
        assert_eq!(LAYERS[3].dir, "core/src");
        let above = core_above();
        for name in [
            "mapfilter-gdal",
            "mapfilter-jobs",
            "mapfilter",
            "gdal",
            "clap",
            "opencl3",
        ] {
            assert!(
                above.contains(&name),
                "{name} not forbidden to the core: {above:?}"
            );
        }
        for name in [
            "mapfilter-core",
            "mapfilter-base",
            "mapfilter-opencl",
            "tiles",
        ] {
            assert!(
                !above.contains(&name),
                "{name} forbidden to the core: {above:?}"
            );
        }
        let clean = "[package]\nname = \"mapfilter-core\"\n\n[dependencies]\n\
                     tiles = { path = \"../tiles\" }\nrayon = \"1\"\n\
                     serde = { version = \"1\", features = [\"derive\"] }\n\
                     \n[dev-dependencies]\ntempfile = \"3\" # not gdal\n";
        assert_eq!(dependencies(clean), ["tiles", "rayon", "serde", "tempfile"]);
        assert!(upward_dependencies(clean, &core_above()).is_empty());
        for (upward, name) in [
            ("[dependencies]\ngdal = \"0.19\"\n", "gdal"),
            ("[dependencies]\nclap.version = \"4\"\n", "clap"),
            (
                "[dev-dependencies]\nmapfilter = { path = \"..\" }\n",
                "mapfilter",
            ),
            ("[build-dependencies]\ngdal-sys = \"0.12\"\n", "gdal-sys"),
            (
                "[target.'cfg(unix)'.dependencies]\ngdal = \"0.19\"\n",
                "gdal",
            ),
            ("[dependencies.clap]\nversion = \"4\"\n", "clap"),
            (
                "[dependencies]\nengine = { package = \"mapfilter\", path = \"..\" }\n",
                "mapfilter",
            ),
        ] {
            let manifest = format!("{clean}{upward}");
            assert_eq!(
                upward_dependencies(&manifest, &core_above()),
                [name],
                "{manifest}"
            );
        }
        // Names in other tables are not dependencies.
        let features = format!("{clean}[features]\ngdal = []\n");
        assert!(upward_dependencies(&features, &core_above()).is_empty());
    }

    #[test]
    fn the_crate_table_and_the_metadata_are_read_as_graphs() {
        let doc = "x\n| crate | folder | depends on (ours) |\n| --- | --- | --- |\n\
                   | `a` | `a/` | — |\n| `b` | `b/` | `a`, `c` |\n\nafter\n| `z` | | `a` |\n";
        let set = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        let graph = documented_graph(doc);
        assert_eq!(graph.len(), 2, "{graph:?}");
        assert_eq!(graph["a"], set(&[]));
        assert_eq!(graph["b"], set(&["a", "c"]));
        let metadata = serde_json::json!({"packages": [
            {"name": "a", "dependencies": [{"name": "rayon", "kind": null}]},
            {"name": "b", "dependencies": [
                {"name": "a", "kind": null},
                {"name": "a", "kind": "dev"},
                {"name": "c", "kind": "dev"}
            ]}
        ]});
        let cargo = cargo_graph(&metadata);
        assert_eq!(cargo["a"], set(&[]));
        assert_eq!(cargo["b"], set(&["a"]), "dev-dependencies are not layers");
    }

    #[test]
    fn a_file_in_a_moved_module_folder_is_stranded() {
        let owned = |files: &[&str]| -> Vec<(String, String)> {
            files
                .iter()
                .map(|p| (p.to_string(), String::new()))
                .collect()
        };
        let owners: BTreeMap<String, String> = [
            ("engine", "core/src/engine"),
            ("method", "core/src/method"),
            ("gdal", "gdal/src"),
            ("device", "opencl/src"),
        ]
        .iter()
        .map(|(m, d)| (m.to_string(), d.to_string()))
        .collect();
        let mut root = owned(&["lib.rs", "job/mod.rs", "job/smooth.rs", "cli/mod.rs"]);
        root[0].1 = "pub mod cli;\npub mod job;\n".to_string();
        assert!(stranded("src", &root, &owners).is_empty());
        root.extend(owned(&[
            "method/newfam/mod.rs",
            "engine.rs",
            "gdal/points3d.rs",
            "device/mod.rs",
        ]));
        let broken = stranded("src", &root, &owners);
        assert_eq!(broken.len(), 4, "{broken:?}");
        assert!(
            broken[0].starts_with("src/method/newfam/mod.rs: ")
                && broken[0].contains("core/src/method/newfam/mod.rs"),
            "{broken:?}"
        );
        assert!(
            broken[1].contains("git mv it to core/src/engine.rs"),
            "{broken:?}"
        );
        assert!(
            broken[2].starts_with("src/gdal/points3d.rs: ")
                && broken[2].contains("git mv it to gdal/src/points3d.rs"),
            "{broken:?}"
        );
        assert!(
            broken[3].contains("git mv it to opencl/src/lib.rs"),
            "{broken:?}"
        );
        // A module the crate declares itself is its own.
        root[0].1 += "pub mod engine;\n";
        assert_eq!(stranded("src", &root, &owners).len(), 3);
    }

    #[test]
    fn a_message_names_the_crate_folder() {
        let long = function("too_long", MAX_FN_LINES + 1);
        let owned = vec![("engine.rs".to_string(), long)];
        let broken = check_in("core/src", &owned);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(broken[0].starts_with("core/src/engine.rs: "), "{broken:?}");
    }

    #[test]
    fn a_cli_flag_in_a_library_string_is_refused_outside_the_cli() {
        let message = "fn f() -> String { format!(\"give a smaller --tile\") }\n";
        let broken = tree(&[("job/smooth.rs", message)]);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(
            broken[0].starts_with("src/job/smooth.rs:1: ") && broken[0].contains("--tile;"),
            "{broken:?}"
        );
        let raw = "const H: &str = r#\"use --method fft\"#;\n";
        assert_eq!(tree(&[("a.rs", raw)]).len(), 1);
        // The CLI's own strings, comments, tests, settings rendered at run
        // time and a lone `--` are not flags named by the library.
        assert!(tree(&[("cli/smooth.rs", message)]).is_empty());
        let quiet = "// see --tile\nfn f() -> String { format!(\"--{}\", \"x\") + \"a -- b\" }\n";
        assert!(tree(&[("a.rs", quiet)]).is_empty());
        let in_test = format!("#[cfg(test)]\nmod tests {{\n{message}}}\n");
        assert!(tree(&[("a.rs", &in_test)]).is_empty());
        // A line the allowances name passes; the same flag elsewhere does not.
        let script = "const S: &str = \"#SBATCH --mem=1G\";\n";
        let jobs = |path: &str| check_in("jobs/src", &[(path.to_string(), script.to_string())]);
        assert!(jobs("batch/slurm.rs").is_empty());
        assert_eq!(jobs("batch/plan.rs").len(), 1);
        assert_eq!(
            tree(&[("batch/slurm.rs", script)]).len(),
            1,
            "the allowance names its crate"
        );
        let broken = check_in("core/src", &[("cli/x.rs".to_string(), message.to_string())]);
        assert_eq!(broken.len(), 1, "core has no CLI folder: {broken:?}");
    }

    #[test]
    fn too_many_arguments_allowances_are_refused() {
        let allowed = "#[allow(clippy::too_many_arguments)]\nfn f() {}\n";
        let broken = tree(&[("a.rs", allowed)]);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(broken[0].contains("too_many_arguments"), "{broken:?}");
        assert!(tree(&[("a.rs", "// too_many_arguments was here\n")]).is_empty());
    }
}
