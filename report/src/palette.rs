//! Which colour and name each class gets in a report: a `--palette FILE`
//! (GDAL colour files as `gdaldem color-relief` reads them, `value r g b
//! [a] [name]`, and QGIS paletted styles, `.qml`), else the raster's own
//! colour table, else a categorical palette that keeps 20+ classes apart.
//!
//! The categorical palette follows Glasbey et al. (2007, "Colour displays
//! for categorical images"): each colour in turn is the one of a grid of
//! sRGB colours farthest (CIELAB distance) from those already taken, white
//! (the page) and black (the text) taken from the start. Colours go to
//! the classes present by rank, so a 20-class map gets the 20 most
//! distinct; a class named like water is blue, as every map reader expects.

use super::quicklook::Palette;
use mapfilter_core::bail;
use mapfilter_core::error::{Error, Result, Setting};
use std::path::Path;
use std::sync::OnceLock;

/// Colours of the categorical palette.
const CATEGORICAL: usize = 40;

/// The blue of water (ColorBrewer's Paired blue).
pub const WATER: [u8; 3] = [31, 120, 180];

/// Categorical colours closer than this (CIELAB ΔE) to a colour already
/// taken (the water blue, a palette file's colour) are skipped.
const NEAR: f64 = 30.0;

/// CIELAB (D65) of an sRGB colour.
pub fn lab([r, g, b]: [u8; 3]) -> [f64; 3] {
    let lin = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let (r, g, b) = (lin(r), lin(g), lin(b));
    let x = (0.412_456_4 * r + 0.357_576_1 * g + 0.180_437_5 * b) / 0.950_47;
    let y = 0.212_672_9 * r + 0.715_152_2 * g + 0.072_175 * b;
    let z = (0.019_333_9 * r + 0.119_192 * g + 0.950_304_1 * b) / 1.088_83;
    let f = |t: f64| {
        if t > 216.0 / 24_389.0 {
            t.cbrt()
        } else {
            (24_389.0 / 27.0 * t + 16.0) / 116.0
        }
    };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
}

/// CIE76 colour difference ΔE of two sRGB colours.
pub fn delta_e(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (a, b) = (lab(a), lab(b));
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// The categorical palette, most distinct colours first.
pub fn categorical() -> &'static [[u8; 3]] {
    static COLOURS: OnceLock<Vec<[u8; 3]>> = OnceLock::new();
    COLOURS.get_or_init(|| {
        let levels = [0u8, 51, 102, 153, 204, 255];
        // Near-black colours read as text and lines: lightness 30 and up.
        let grid: Vec<([u8; 3], [f64; 3])> = levels
            .iter()
            .flat_map(|&r| levels.iter().flat_map(move |&g| levels.map(|b| [r, g, b])))
            .map(|c| (c, lab(c)))
            .filter(|(_, l)| l[0] >= 30.0)
            .collect();
        let dist = |a: &[f64; 3], b: &[f64; 3]| {
            ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
        };
        // Distance of each candidate to the nearest colour taken so far.
        let mut nearest: Vec<f64> = grid
            .iter()
            .map(|(_, l)| dist(l, &lab([255; 3])).min(dist(l, &lab([0; 3]))))
            .collect();
        let mut out = Vec::with_capacity(CATEGORICAL);
        while out.len() < CATEGORICAL {
            let (i, _) = nearest
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
                .expect("a non-empty grid");
            let (colour, taken) = grid[i];
            out.push(colour);
            for (n, (_, l)) in nearest.iter_mut().zip(&grid) {
                *n = n.min(dist(l, &taken));
            }
        }
        out
    })
}

/// Whether a class name says water (open water, lakes, rivers, sea).
pub fn is_water(name: &str) -> bool {
    let n = name.to_lowercase();
    ["water", "lake", "river", "sea", "ocean", "reservoir"]
        .iter()
        .any(|w| {
            n.split(|c: char| !c.is_alphanumeric())
                .any(|t| t == *w || t.strip_suffix('s') == Some(w))
        })
}

/// Colours for `codes` (the classes present, ascending) named by `names`
/// (by code, may be empty): water-named classes blue, the others the
/// categorical colours in turn, skipping those near a colour `taken`
/// already (another class's from a palette file or colour table) or near
/// the water blue where a class is water.
pub fn class_colours(codes: &[u16], names: &[String], taken: &[[u8; 3]]) -> Vec<(u16, [u8; 3])> {
    let water = |c: u16| names.get(c as usize).is_some_and(|n| is_water(n));
    let mut avoid = taken.to_vec();
    if codes.iter().any(|&c| water(c)) {
        avoid.push(WATER);
    }
    let free_of = |limit: f64| -> Vec<[u8; 3]> {
        categorical()
            .iter()
            .copied()
            .filter(|&c| avoid.iter().all(|&t| delta_e(c, t) >= limit))
            .collect()
    };
    // Fewer colours left than classes: keep apart from the taken ones less.
    let mut pool = free_of(NEAR);
    if pool.len() < codes.len() {
        pool = free_of(NEAR / 2.0);
    }
    if pool.is_empty() {
        pool = categorical().to_vec();
    }
    let mut free = pool.into_iter().cycle();
    codes
        .iter()
        .map(|&c| {
            let colour = if water(c) {
                WATER
            } else {
                free.next().expect("a cycle of a non-empty pool never ends")
            };
            (c, colour)
        })
        .collect()
}

/// A palette file as read: colours and, where given, names by code.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PaletteFile {
    pub entries: Vec<Entry>,
}

/// One class of a palette file.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub code: u16,
    pub rgba: [u8; 4],
    pub name: Option<String>,
}

impl PaletteFile {
    /// Reads a QGIS style (`.qml`) or a GDAL colour file (anything else).
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::io(format!("{}: {e}", Setting::Palette.is(path.display()))).hint(
                "give a GDAL colour file (value r g b [a] [name] per line) or a QGIS .qml style",
            )
        })?;
        let qml = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("qml"));
        let file = if qml {
            parse_qml(&text)
        } else {
            parse_gdal(&text)
        }
        .map_err(|e| e.context(Setting::Palette.is(path.display())))?;
        if file.entries.is_empty() {
            bail!(
                input,
                format!(
                    "{}: holds no class colour",
                    Setting::Palette.is(path.display())
                ),
                hint = if qml {
                    "export a paletted/unique values style from QGIS (its <paletteEntry> elements give the colours)"
                } else {
                    "write one `value r g b [a] [name]` line per class"
                }
            );
        }
        Ok(file)
    }

    /// Names by code (empty where the file gives none), to lay over the
    /// raster's own category names.
    pub fn names_over(&self, names: &[String]) -> Vec<String> {
        let mut out = names.to_vec();
        for e in &self.entries {
            if let Some(n) = &e.name {
                let i = e.code as usize;
                if out.len() <= i {
                    out.resize(i + 1, String::new());
                }
                out[i] = n.clone();
            }
        }
        out
    }
}

/// `value r g b [a] [name]` lines (space, tab or comma separated), as
/// `gdaldem color-relief` and `gdalattachpct.py` read them; `#` comments,
/// `nv` (nodata) lines and blank lines skipped. Classes are whole codes:
/// percentages and fractional values are refused.
pub fn parse_gdal(text: &str) -> Result<PaletteFile> {
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        let fields: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',' || c == ':')
            .filter(|f| !f.is_empty())
            .collect();
        if fields[0].eq_ignore_ascii_case("nv") || fields[0].eq_ignore_ascii_case("nodata") {
            continue;
        }
        let bad = || {
            Error::input(format!("line {}: {line:?} is not `value r g b [a] [name]`", i + 1))
                .hint("one class per line: a whole class code, then red, green and blue in 0-255, optionally alpha and a name")
        };
        let code: u16 = fields[0].parse().map_err(|_| bad())?;
        let channel = |k: usize| fields.get(k).and_then(|v| v.parse::<u8>().ok());
        let (Some(r), Some(g), Some(b)) = (channel(1), channel(2), channel(3)) else {
            return Err(bad());
        };
        let (a, rest) = match channel(4) {
            Some(a) => (a, 5),
            None => (255, 4),
        };
        let name = fields[rest.min(fields.len())..].join(" ");
        entries.push(Entry {
            code,
            rgba: [r, g, b, a],
            name: (!name.is_empty()).then_some(name),
        });
    }
    Ok(PaletteFile { entries })
}

/// The value of attribute `name` in the start tag `tag`, XML entities
/// decoded.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let mut rest = tag;
    while let Some(at) = rest.find(name) {
        let before = rest[..at].chars().last();
        let after = rest[at + name.len()..].trim_start();
        rest = &rest[at + name.len()..];
        if !before.is_some_and(char::is_whitespace) {
            continue;
        }
        let Some(value) = after.strip_prefix('=') else {
            continue;
        };
        let value = value.trim_start();
        let quote = value.chars().next()?;
        if quote != '"' && quote != '\'' {
            return None;
        }
        let end = value[1..].find(quote)?;
        let raw = &value[1..1 + end];
        return Some(
            raw.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&"),
        );
    }
    None
}

/// `#rrggbb` (or `#aarrggbb`, as QGIS writes with alpha).
fn hex_colour(text: &str) -> Option<[u8; 4]> {
    let h = text.strip_prefix('#')?;
    let byte = |i: usize| u8::from_str_radix(h.get(i..i + 2)?, 16).ok();
    match h.len() {
        6 => Some([byte(0)?, byte(2)?, byte(4)?, 255]),
        8 => Some([byte(2)?, byte(4)?, byte(6)?, byte(0)?]),
        _ => None,
    }
}

/// The `<paletteEntry value=".." color="#rrggbb" label=".." [alpha=".."]/>`
/// elements of a QGIS paletted raster style (and the `<item>` elements of
/// a unique-values colour ramp, which carry the same attributes).
pub fn parse_qml(text: &str) -> Result<PaletteFile> {
    let mut entries = Vec::new();
    for (k, piece) in text.split('<').enumerate().skip(1) {
        let Some(tag) = piece.split('>').next() else {
            continue;
        };
        if !(tag.starts_with("paletteEntry") || tag.starts_with("item ")) {
            continue;
        }
        let bad = |what: &str| {
            Error::input(format!(
                "element {k} <{}…>: {what}",
                &tag[..tag.len().min(40)]
            ))
            .hint("a paletted style's entries need a whole value and a #rrggbb color")
        };
        let value = attribute(tag, "value").ok_or_else(|| bad("no value"))?;
        let code: u16 = value
            .trim()
            .parse()
            .map_err(|_| bad("the value is not a class code"))?;
        let colour = attribute(tag, "color").ok_or_else(|| bad("no color"))?;
        let mut rgba = hex_colour(colour.trim()).ok_or_else(|| bad("the color is not #rrggbb"))?;
        if let Some(a) = attribute(tag, "alpha").and_then(|a| a.trim().parse::<u8>().ok()) {
            rgba[3] = a;
        }
        let name = attribute(tag, "label").filter(|l| !l.trim().is_empty());
        entries.push(Entry { code, rgba, name });
    }
    Ok(PaletteFile { entries })
}

/// The palette a report draws a class raster with, and the names it
/// shows: `file`'s colours and names first, then the raster's colour table
/// (`table`, RGBA by code) and category names (`names`), then categorical
/// colours for the classes `codes` still uncoloured.
pub fn choose(
    file: Option<&PaletteFile>,
    table: &[[i16; 4]],
    names: &[String],
    codes: &[u16],
    nodata: Option<u16>,
) -> (Palette, Vec<String>) {
    let names = file.map_or_else(|| names.to_vec(), |f| f.names_over(names));
    let mut colours: Vec<(u16, [u8; 4])> = Vec::new();
    let given = |c: u16| -> Option<[u8; 4]> {
        if let Some(e) = file.and_then(|f| f.entries.iter().find(|e| e.code == c)) {
            return Some(e.rgba);
        }
        let t = table.get(c as usize)?;
        // An entry of all zeros is a gap in the table, not black.
        (t.iter().any(|&v| v != 0)).then(|| t.map(|v| v.clamp(0, 255) as u8))
    };
    let missing: Vec<u16> = codes
        .iter()
        .copied()
        .filter(|&c| Some(c) != nodata)
        .filter(|&c| match given(c) {
            Some(rgba) => {
                colours.push((c, rgba));
                false
            }
            None => true,
        })
        .collect();
    let taken: Vec<[u8; 3]> = colours.iter().map(|(_, c)| [c[0], c[1], c[2]]).collect();
    for (c, [r, g, b]) in class_colours(&missing, &names, &taken) {
        colours.push((c, [r, g, b, 255]));
    }
    if let Some(f) = file {
        // The file's other classes too: a report may show codes the
        // counted ones lack (the other raster of a comparison).
        for e in &f.entries {
            if !colours.iter().any(|(c, _)| *c == e.code) {
                colours.push((e.code, e.rgba));
            }
        }
    }
    (Palette::from_entries(&colours, nodata), names)
}

/// [`choose`] for two rasters drawn alike (a comparison, a mosaic before
/// and after): the first's colour table and names where it has them, else
/// the second's, each as `(colour table, category names)`.
pub fn choose_for_two(
    file: Option<&PaletteFile>,
    first: (&[[i16; 4]], &[String]),
    second: (&[[i16; 4]], &[String]),
    codes: &[u16],
    nodata: Option<u16>,
) -> (Palette, Vec<String>) {
    let table = if first.0.is_empty() {
        second.0
    } else {
        first.0
    };
    let names = if first.1.is_empty() {
        second.1
    } else {
        first.1
    };
    choose(file, table, names, codes, nodata)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categorical_colours_stay_apart_and_off_the_page() {
        let c = categorical();
        let mut closest = f64::INFINITY;
        for (i, a) in c.iter().enumerate().take(24) {
            assert!(delta_e(*a, [255; 3]) > 20.0, "{a:?} near white");
            for b in &c[..i] {
                closest = closest.min(delta_e(*a, *b));
            }
        }
        // The generated golden-angle hues this replaces put classes 1, 6
        // and 14 within ΔE 10 of each other; 24 classes here keep > 30.
        assert!(closest > 30.0, "closest pair of 24: ΔE {closest}");
    }

    #[test]
    fn water_is_blue_and_no_other_class_near_it() {
        let names: Vec<String> = ["", "forest", "Open water", "crops"]
            .map(String::from)
            .to_vec();
        let c = class_colours(&[1, 2, 3], &names, &[]);
        assert_eq!(c[1], (2, WATER));
        assert!(
            c.iter()
                .filter(|x| x.0 != 2)
                .all(|x| delta_e(x.1, WATER) >= NEAR)
        );
        assert!(is_water("Lakes") && is_water("lake") && !is_water("seagrass"));
    }

    #[test]
    fn gdal_colour_files_parse_with_names_and_alpha() {
        let f = parse_gdal(
            "# classes\n1 0 100 0 Forest\n2,31,120,180,255,Open water\nnv 0 0 0 0\n3 255 255 0\n",
        )
        .unwrap();
        assert_eq!(f.entries.len(), 3);
        assert_eq!(f.entries[0].name.as_deref(), Some("Forest"));
        assert_eq!(f.entries[1].rgba, [31, 120, 180, 255]);
        assert_eq!(f.entries[1].name.as_deref(), Some("Open water"));
        assert_eq!(f.entries[2].name, None);
        let err = parse_gdal("1 0 100\n").unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("(hint: "), "{err}");
        assert!(parse_gdal("5% 0 0 0\n").is_err());
    }

    #[test]
    fn qgis_paletted_styles_parse() {
        let qml = r##"<qgis><pipe><rasterrenderer type="paletted" band="1"><colorPalette>
<paletteEntry value="1" label="Tree cover" alpha="255" color="#006400"/>
<paletteEntry color="#0064c8" value="80" label="Permanent water &amp; lakes" alpha="255"/>
</colorPalette></rasterrenderer></pipe></qgis>"##;
        let f = parse_qml(qml).unwrap();
        assert_eq!(f.entries.len(), 2);
        assert_eq!(f.entries[0].rgba, [0, 100, 0, 255]);
        assert_eq!(f.entries[1].code, 80);
        assert_eq!(
            f.entries[1].name.as_deref(),
            Some("Permanent water & lakes")
        );
        let bad = parse_qml(r##"<paletteEntry value="x" color="#000000"/>"##).unwrap_err();
        assert!(bad.to_string().contains("not a class code"));
    }

    #[test]
    fn the_file_comes_first_then_the_table_then_categorical() {
        let file = parse_gdal("2 1 2 3 Two\n").unwrap();
        let table = [[0, 0, 0, 0], [9, 9, 9, 255]];
        let (p, names) = choose(Some(&file), &table, &[], &[1, 2, 3], None);
        assert_eq!(p.color(1), [9, 9, 9, 255]);
        assert_eq!(p.color(2), [1, 2, 3, 255]);
        let [r, g, b, _] = p.color(3);
        assert_eq!([r, g, b], categorical()[0]);
        assert_eq!(names[2], "Two");
        // A categorical colour near one given is left to that class.
        let green = parse_gdal("1 0 102 0 Forest\n").unwrap();
        let (p, _) = choose(
            Some(&green),
            &[],
            &[],
            &(1..=24).collect::<Vec<u16>>(),
            None,
        );
        for c in 2..=24 {
            let [r, g, b, _] = p.color(c);
            assert!(delta_e([r, g, b], [0, 102, 0]) >= NEAR / 2.0, "class {c}");
        }
    }
}
