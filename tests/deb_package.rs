//! The Debian package (scripts/deb.sh) end to end, as root: builds the .deb
//! around the binary under test, checks its control fields (`dpkg-deb -I`:
//! Debian 12's GDAL and OpenCL loader among the dependencies) and file list
//! (`dpkg-deb -c`: binary, man pages, completions, the QGIS plugin in QGIS's
//! system plugin folder), installs it with `dpkg -i`, runs the installed
//! `mapfilter`, has QGIS find and load the installed plugin
//! (qgis/tests/check_installed_plugin.py), and removes it with `dpkg -r`.
//! Not root: skipped, unless `MAPFILTER_REQUIRE_ROOT` is set (CI), where it
//! fails. Also the QGIS plugin zip (scripts/qgis-plugin-zip.sh), as anyone.
#![cfg(feature = "gdal")]

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_mapfilter");

fn run(program: &str, args: &[&str]) -> Output {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Removes the package on drop, so a failed check leaves no install behind.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["-r", "mapfilter"]).output();
    }
}

#[test]
fn the_deb_installs_a_working_mapfilter_and_a_plugin_qgis_finds() {
    if !is_root() {
        assert!(
            std::env::var_os("MAPFILTER_REQUIRE_ROOT").is_none(),
            "MAPFILTER_REQUIRE_ROOT is set but the tests do not run as root"
        );
        eprintln!("skipped: installing a .deb needs root");
        return;
    }
    let _system = crate::common::system_paths_lock();
    // Never replace or remove an installation this test did not make.
    let status = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", "mapfilter"])
        .output()
        .expect("dpkg-query");
    assert!(
        !stdout(&status).contains("installed") && !Path::new("/usr/bin/mapfilter").exists(),
        "mapfilter is installed on this machine already (hint: dpkg -r mapfilter, or remove /usr/bin/mapfilter, to run this test)"
    );
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    // gzip -1, not xz: the same files, about 15 s sooner on 2 cores.
    let built = run(
        "bash",
        &["scripts/deb.sh", "--bin", BIN, "--out", out_dir, "--fast"],
    );
    let deb = stdout(&built).trim().to_string();
    assert!(deb.ends_with(".deb") && Path::new(&deb).exists(), "{deb}");

    let info = stdout(&run("dpkg-deb", &["-I", &deb]));
    assert!(info.contains("Package: mapfilter"), "{info}");
    let depends = info
        .lines()
        .find_map(|l| l.trim().strip_prefix("Depends: "))
        .unwrap_or_else(|| panic!("no Depends: {info}"));
    for dep in ["libgdal32", "ocl-icd-libopencl1"] {
        assert!(
            depends.split(", ").any(|d| d == dep),
            "{dep} not in {depends}"
        );
    }
    let files = stdout(&run("dpkg-deb", &["-c", &deb]));
    let plugins = "./usr/share/qgis/python/plugins/mapfilter_provider";
    for path in [
        "./usr/bin/mapfilter",
        "./usr/share/man/man1/mapfilter.1.gz",
        "./usr/share/man/man1/mapfilter-smooth.1.gz",
        "./usr/share/bash-completion/completions/mapfilter",
        "./usr/share/zsh/vendor-completions/_mapfilter",
        "./usr/share/fish/vendor_completions.d/mapfilter.fish",
        &format!("{plugins}/metadata.txt"),
        &format!("{plugins}/__init__.py"),
        &format!("{plugins}/provider.py"),
    ] {
        assert!(
            files.lines().any(|l| l.ends_with(&format!(" {path}"))),
            "{path} not in the package:\n{files}"
        );
    }
    assert!(!files.contains("__pycache__"), "{files}");

    run("dpkg", &["-i", &deb]);
    let _installed = Installed;
    let version = stdout(&run("/usr/bin/mapfilter", &["--version"]));
    assert_eq!(
        version.trim(),
        format!("mapfilter {}", env!("CARGO_PKG_VERSION"))
    );
    // The installed binary smooths a raster (it links the system's GDAL).
    let raster = dir.path().join("in.tif");
    let smoothed = dir.path().join("out.tif");
    run(
        "/usr/bin/mapfilter",
        &[
            "gen",
            raster.to_str().unwrap(),
            "--raster-size",
            "64x48",
            "-q",
        ],
    );
    run(
        "/usr/bin/mapfilter",
        &[
            "smooth",
            raster.to_str().unwrap(),
            smoothed.to_str().unwrap(),
            "--kernel",
            "gaussian:1.5",
            "--device",
            "host",
            "-q",
        ],
    );
    assert!(smoothed.exists());
    let man = run("man", &["-w", "mapfilter-smooth"]);
    assert!(stdout(&man).starts_with("/usr/share/man/man1/"));
    let plugin = Command::new("/usr/bin/python3")
        .arg("qgis/tests/check_installed_plugin.py")
        .env("QT_QPA_PLATFORM", "offscreen")
        .output()
        .expect("python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&plugin.stdout),
        String::from_utf8_lossy(&plugin.stderr)
    );
    assert!(
        plugin.status.success() && text.contains("installed plugin OK"),
        "{text}"
    );

    run("dpkg", &["-r", "mapfilter"]);
    assert!(!Path::new("/usr/bin/mapfilter").exists());
    assert!(!Path::new(plugins.trim_start_matches('.')).exists());
}

#[test]
fn the_qgis_plugin_zip_has_the_metadata_the_repository_requires() {
    let dir = tempfile::tempdir().unwrap();
    let built = run(
        "bash",
        &["scripts/qgis-plugin-zip.sh", dir.path().to_str().unwrap()],
    );
    let zip = stdout(&built).trim().to_string();
    assert!(zip.ends_with("mapfilter_provider-0.1.0.zip"), "{zip}");
    let listing = stdout(&run(
        "/usr/bin/python3",
        &[
            "-c",
            "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); \
             print('\\n'.join(z.namelist())); \
             print(z.read('mapfilter_provider/metadata.txt').decode())",
            &zip,
        ],
    ));
    for entry in [
        "mapfilter_provider/__init__.py",
        "mapfilter_provider/metadata.txt",
        "mapfilter_provider/LICENSE",
    ] {
        assert!(listing.lines().any(|l| l == entry), "{entry}:\n{listing}");
    }
    assert!(
        listing
            .lines()
            .all(|l| !l.contains("__pycache__") && !l.ends_with(".pyc")),
        "{listing}"
    );
    // One top-level folder, as the repository requires.
    let names: Vec<&str> = listing
        .lines()
        .take_while(|l| !l.starts_with('['))
        .collect();
    assert!(
        names.iter().all(|l| l.starts_with("mapfilter_provider/")),
        "{names:?}"
    );
    for field in [
        "name",
        "qgisMinimumVersion",
        "description",
        "about",
        "version",
        "author",
        "email",
        "repository",
    ] {
        assert!(
            listing
                .lines()
                .any(|l| l.starts_with(&format!("{field}=")) && l.len() > field.len() + 1),
            "metadata.txt lacks {field}:\n{listing}"
        );
    }
}
