//! Every file a command reads through one input path: the path itself and,
//! for a GDAL VRT, the files its sources name (recursively, through VRTs of
//! VRTs). [`super::Target::check`] compares an output with each of them, so
//! that `--overwrite` never replaces a file a run is still reading, whichever
//! path names it.
//!
//! The VRT is read as text, not opened with GDAL: the check runs before any
//! input is opened, in builds without GDAL too, and must not fail where GDAL
//! would only fail later with a clearer message. Only the elements that name
//! source files are looked at (`SourceFilename`, and `SourceDataset` of a
//! warped VRT); a name that is not a plain file (`/vsicurl/…`, a
//! subdataset `GTIFF_DIR:…`) is skipped, as it cannot be an output path.

use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// VRTs larger than this are not looked into (a VRT of a million tiles is
/// about 500 MB; the check would cost more than the run's first second).
const MAX_VRT_BYTES: u64 = 256 << 20;
/// How deep VRTs of VRTs are followed (GDAL itself stops at 32).
const MAX_DEPTH: usize = 32;

/// One file read: its path, and the VRT that names it (`None` for the
/// input path itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    pub path: PathBuf,
    pub via: Option<PathBuf>,
}

/// The files read through `input`: the input first, then its VRT sources.
pub fn files(input: &Path) -> Vec<Read> {
    let mut out = vec![Read {
        path: input.to_path_buf(),
        via: None,
    }];
    let mut seen = Vec::new();
    collect(input, 0, &mut seen, &mut out);
    out
}

/// The files read through `input` by identity (device and inode), for
/// many checks against one input: a batch checks each of its thousands of
/// task outputs against its mosaic VRT, which is read and its members
/// looked up once (again only when the VRT changed).
pub fn by_identity(input: &Path) -> Arc<HashMap<(u64, u64), Read>> {
    type Cache = HashMap<PathBuf, (Option<Stamp>, Arc<HashMap<(u64, u64), Read>>)>;
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    let stamp = stamp(input);
    if let Some((s, set)) = CACHE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .get(input)
        && *s == stamp
        && stamp.is_some()
    {
        return set.clone();
    }
    // Read without the lock held: the files may be slow to read.
    let mut set = HashMap::new();
    for read in files(input) {
        if let Ok(meta) = std::fs::metadata(&read.path) {
            set.entry(identity(&meta)).or_insert(read);
        }
    }
    let set = Arc::new(set);
    CACHE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(input.to_path_buf(), (stamp, set.clone()));
    set
}

/// What tells a changed file: identity, size and modification time.
type Stamp = ((u64, u64), u64, Option<SystemTime>);

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((identity(&meta), meta.len(), meta.modified().ok()))
}

fn collect(vrt: &Path, depth: usize, seen: &mut Vec<(u64, u64)>, out: &mut Vec<Read>) {
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(meta) = std::fs::metadata(vrt) else {
        return;
    };
    let id = identity(&meta);
    if !meta.is_file() || meta.len() > MAX_VRT_BYTES || seen.contains(&id) {
        return;
    }
    seen.push(id);
    let Some(text) = vrt_text(vrt) else {
        return;
    };
    let dir = super::parent_dir(vrt);
    for (name, relative) in sources(&text) {
        let Some(path) = source_path(&name, relative, &dir) else {
            continue;
        };
        out.push(Read {
            path: path.clone(),
            via: Some(vrt.to_path_buf()),
        });
        collect(&path, depth + 1, seen, out);
    }
}

/// The text of the VRT at `path` (`<VRTDataset` first, after white
/// space), or `None` for any other file, of which only the first bytes
/// are read (an input of gigabytes is not read here).
fn vrt_text(path: &Path) -> Option<String> {
    const TAG: &str = "<VRTDataset";
    let mut file = std::fs::File::open(path).ok()?;
    let mut head = Vec::new();
    (&mut file).take(4096).read_to_end(&mut head).ok()?;
    let start = String::from_utf8_lossy(&head);
    if !start
        .trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with(TAG)
    {
        return None;
    }
    file.take(MAX_VRT_BYTES).read_to_end(&mut head).ok()?;
    String::from_utf8(head).ok()
}

/// The source names of a VRT's text with their `relativeToVRT` flag.
fn sources(text: &str) -> Vec<(String, bool)> {
    let mut found = Vec::new();
    for tag in ["SourceFilename", "SourceDataset"] {
        let open = format!("<{tag}");
        let close = format!("</{tag}>");
        let mut rest = text;
        while let Some(at) = rest.find(&open) {
            rest = &rest[at + open.len()..];
            // `<SourceFilenameX` is another element.
            if !rest.starts_with(|c: char| c == '>' || c == '/' || c.is_whitespace()) {
                continue;
            }
            let Some(end) = rest.find('>') else { break };
            let attributes = &rest[..end];
            if attributes.ends_with('/') {
                continue;
            }
            let body = &rest[end + 1..];
            let Some(stop) = body.find(&close) else { break };
            let relative = attribute(attributes, "relativeToVRT").is_some_and(|v| v.trim() == "1");
            found.push((unescape(body[..stop].trim()), relative));
            rest = &body[stop..];
        }
    }
    found
}

/// The value of `name="…"` (or `'…'`) among an element's attributes.
fn attribute<'a>(attributes: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = attributes;
    while let Some(at) = rest.find(name) {
        let before_ok = at == 0 || rest[..at].ends_with(char::is_whitespace);
        rest = &rest[at + name.len()..];
        let after = rest.trim_start();
        if !before_ok || !after.starts_with('=') {
            continue;
        }
        let value = after[1..].trim_start();
        let quote = value.chars().next().filter(|q| *q == '"' || *q == '\'')?;
        let value = &value[1..];
        return value.find(quote).map(|end| &value[..end]);
    }
    None
}

/// XML text with its five predefined entities and character references decoded.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';') else { break };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .map(|h| u32::from_str_radix(h, 16))
                .or_else(|| entity.strip_prefix('#').map(str::parse::<u32>))
                .and_then(|n| n.ok())
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The file a source name stands for, or `None` where it is not a plain
/// file (a GDAL virtual file system or a driver's prefixed name).
fn source_path(name: &str, relative: bool, vrt_dir: &Path) -> Option<PathBuf> {
    // `vrt://PATH?options` (GDAL 3.7) reads PATH.
    let name = match name.strip_prefix("vrt://") {
        Some(rest) => rest.split('?').next().unwrap_or(rest),
        None => name,
    };
    if name.is_empty() || name.starts_with("/vsi") || looks_prefixed(name) {
        return None;
    }
    let path = Path::new(name);
    Some(if relative && path.is_relative() {
        vrt_dir.join(path)
    } else {
        path.to_path_buf()
    })
}

/// Whether `name` is a driver's prefixed name (`GTIFF_DIR:1:a.tif`,
/// `NETCDF:"f.nc":var`): letters, digits or `_` before a first `:`, which
/// no plain relative path of a VRT has (a Windows drive letter aside).
fn looks_prefixed(name: &str) -> bool {
    name.split_once(':').is_some_and(|(prefix, _)| {
        prefix.len() > 1
            && prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !Path::new(name).exists()
    })
}

/// Device and inode: one file whatever path reaches it.
pub fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vrt_sources_are_found_relative_absolute_escaped_and_nested() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a&b.tif"), b"x").unwrap();
        std::fs::write(d.join("c.tif"), b"x").unwrap();
        let inner = format!(
            "<VRTDataset><VRTRasterBand><SimpleSource><SourceFilename relativeToVRT=\"0\">{}</SourceFilename></SimpleSource></VRTRasterBand></VRTDataset>",
            d.join("c.tif").display()
        );
        std::fs::write(d.join("inner.vrt"), inner).unwrap();
        let outer = "\u{feff}\n<VRTDataset rasterXSize=\"1\"><VRTRasterBand>\
            <ComplexSource><SourceFilename relativeToVRT='1' shared=\"0\">a&amp;b.tif</SourceFilename></ComplexSource>\
            <SimpleSource><SourceFilename relativeToVRT=\"1\">inner.vrt</SourceFilename></SimpleSource>\
            <SimpleSource><SourceFilename>/vsicurl/http://x/y.tif</SourceFilename></SimpleSource>\
            <SimpleSource><SourceFilename relativeToVRT=\"1\">outer.vrt</SourceFilename></SimpleSource>\
            </VRTRasterBand></VRTDataset>";
        std::fs::write(d.join("outer.vrt"), outer).unwrap();
        let found: Vec<PathBuf> = files(&d.join("outer.vrt"))
            .into_iter()
            .map(|r| r.path)
            .collect();
        assert_eq!(
            found,
            vec![
                d.join("outer.vrt"),
                d.join("a&b.tif"),
                d.join("inner.vrt"),
                d.join("c.tif"),
                // Itself: named, but not followed twice.
                d.join("outer.vrt"),
            ]
        );
        // Not a VRT: the file alone.
        assert_eq!(files(&d.join("c.tif")).len(), 1);
    }
}
