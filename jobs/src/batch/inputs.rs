//! The inputs of `batch plan`: files, directories (their rasters, not
//! recursive), globs in the file name (`tiles/*.tif`) and list files
//! (`@list.txt`, one path a line, `#` comments), in a stable order.

use mapfilter_core::bail;
use mapfilter_core::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Extensions taken from a directory (other files there are ignored).
const RASTER_EXTENSIONS: [&str; 6] = ["tif", "tiff", "vrt", "img", "jp2", "png"];

/// Expands `args` into raster paths, duplicates removed, first seen first.
pub fn expand(args: &[String]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for arg in args {
        expand_one(arg, &mut out, 0)?;
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    if out.is_empty() {
        bail!(
            input,
            "no input rasters found",
            hint = "give files, directories, globs such as 'tiles/*.tif', or @list.txt"
        );
    }
    Ok(out)
}

fn expand_one(arg: &str, out: &mut Vec<PathBuf>, depth: usize) -> Result<()> {
    if let Some(list) = arg.strip_prefix('@') {
        if depth > 4 {
            bail!(usage, format!("@{list}: lists nested too deep"));
        }
        let text = mapfilter_core::limits::read_text_file(Path::new(list), "input list")?;
        let base = Path::new(list).parent().unwrap_or(Path::new(""));
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let p = Path::new(line);
            let p = if p.is_relative() {
                base.join(p)
            } else {
                p.to_path_buf()
            };
            expand_one(&p.to_string_lossy(), out, depth + 1)?;
        }
        return Ok(());
    }
    let path = Path::new(arg);
    if arg.contains(['*', '?']) {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let pattern = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if dir.to_string_lossy().contains(['*', '?']) {
            bail!(
                usage,
                format!("{arg}: wildcards only in the file name"),
                hint = "write DIR/*.tif, or list the files with @list.txt"
            );
        }
        let mut found: Vec<PathBuf> = read_dir(dir)?
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| matches(&pattern, &n.to_string_lossy()))
            })
            .collect();
        found.sort();
        out.extend(found);
        return Ok(());
    }
    if path.is_dir() && !path.join("hdr.adf").exists() {
        let mut found: Vec<PathBuf> = read_dir(path)?
            .into_iter()
            .filter(|p| {
                p.extension().is_some_and(|e| {
                    RASTER_EXTENSIONS.contains(&e.to_string_lossy().to_ascii_lowercase().as_str())
                })
            })
            .collect();
        found.sort();
        out.extend(found);
        return Ok(());
    }
    if !path.exists() {
        bail!(
            input,
            format!("{arg}: no such file"),
            hint = "check the input path"
        );
    }
    out.push(path.to_path_buf());
    Ok(())
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Error::io(format!("{}: {e}", dir.display())).hint("check the input directory")
    })?;
    Ok(entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect())
}

/// Shell-style match of `*` (any run) and `?` (one character).
fn matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn wildcards() {
        assert!(matches("*.tif", "a.tif"));
        assert!(matches("t_??.tif", "t_01.tif"));
        assert!(!matches("*.tif", "a.tiff"));
        assert!(matches("a*b*c", "aXXbYc"));
        assert!(!matches("a*b*c", "aXXbY"));
    }
}
