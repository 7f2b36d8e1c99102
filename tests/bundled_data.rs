//! The bundled real maps carry their category names (in GDAL's side file,
//! data/*.tif.aux.xml), `mapfilter info` lists them, and outputs, COGs
//! included, keep them.
#![cfg(feature = "gdal")]

use crate::common;

use common::mapfilter_ok;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data");

#[test]
fn real_maps_list_their_category_names() {
    for (map, names) in [
        (
            "ne_continents_1440x720.tif",
            &["Africa", "Seven seas (open ocean)"][..],
        ),
        (
            "modis_igbp_2019_2048.tif",
            &["Water bodies", "Evergreen needleleaf forests", "Barren"][..],
        ),
    ] {
        let out = mapfilter_ok(&["info", &format!("{DATA}/{map}")]);
        let text = String::from_utf8_lossy(&out.stdout);
        for name in names {
            assert!(text.contains(name), "{map}: no {name} in\n{text}");
        }
    }
}

#[test]
fn a_cog_keeps_the_category_names() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ne.tif");
    let out = out.to_str().unwrap();
    let map = format!("{DATA}/ne_continents_1440x720.tif");
    mapfilter_ok(&["smooth", &map, out, "-k", "box:3", "--of", "COG", "-q"]);
    let info = mapfilter_ok(&["info", out]);
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("South America"), "{text}");
}
