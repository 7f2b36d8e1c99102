//! The benchmark tables (BENCHMARKS.md, benches/background.md) are
//! rendered from the committed JSON lines by `scripts/render-benchmarks.py`:
//! the same lines always give the same Markdown, the committed renderings
//! are current, and a changed figure shows.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn render(results: &Path, out: &Path) -> String {
    let status = Command::new("python3")
        .arg(format!("{ROOT}/scripts/render-benchmarks.py"))
        .arg("render")
        .arg("--in")
        .arg(format!("{ROOT}/BENCHMARKS.md"))
        .arg("--out")
        .arg(out)
        .arg("--results")
        .arg(results)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "render failed");
    std::fs::read_to_string(out).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.path().extension().is_some_and(|e| e == "jsonl") {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn rendering_is_deterministic_and_current() {
    let dir = tempfile::tempdir().unwrap();
    let results = PathBuf::from(ROOT).join("benches/results");
    let a = render(&results, &dir.path().join("a.md"));
    let b = render(&results, &dir.path().join("b.md"));
    assert_eq!(a, b, "two renderings of the same JSON lines differ");
    let committed = std::fs::read_to_string(PathBuf::from(ROOT).join("BENCHMARKS.md")).unwrap();
    assert_eq!(
        a, committed,
        "BENCHMARKS.md is stale: run python3 scripts/render-benchmarks.py render"
    );
    assert!(a.contains("<!-- table:host-vs-grass -->\n| case | peer |"));

    // A figure changed in the JSON lines comes out in the table.
    let copy = dir.path().join("results");
    copy_dir(&results, &copy);
    let path = copy.join("dev-2core/host-vs-grass.jsonl");
    let lines = std::fs::read_to_string(&path).unwrap();
    assert!(lines.contains("**74.8×**"));
    std::fs::write(&path, lines.replace("**74.8×**", "**75.0×**")).unwrap();
    let changed = render(&copy, &dir.path().join("c.md"));
    assert!(changed.contains("**75.0×**") && !changed.contains("**74.8×**"));
    assert_eq!(changed.lines().count(), a.lines().count());
}

#[test]
fn the_background_page_is_current_too() {
    let status = Command::new("python3")
        .arg(format!("{ROOT}/scripts/render-benchmarks.py"))
        .arg("check")
        .arg("--in")
        .arg(format!("{ROOT}/benches/background.md"))
        .status()
        .expect("python3 runs");
    assert!(
        status.success(),
        "benches/background.md is stale: run python3 scripts/render-benchmarks.py render --in benches/background.md"
    );
}
