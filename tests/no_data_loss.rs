//! Fault injection for every command that writes: full disk, read-only
//! directory, special files and symlinks at the target, planted temp
//! symlinks, signals at many moments, SIGKILL and a rerun, concurrent
//! writers, inputs reached by other paths. Each case checks the exit code,
//! the message, that no temp file is left, that an old output is byte for
//! byte as it was, and that a new output is complete.
//!
//! Cases that need root (tmpfs and bind mounts) fail instead of skipping
//! when `MAPFILTER_REQUIRE_ROOT` is set (CI runs as root and sets it).
#![cfg(feature = "gdal")]

use crate::common;

use common::{mapfilter, mapfilter_ok};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const MODIS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/modis_igbp_2019_2048.tif");
const PHOTO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/photo_grace_hopper.tif");
const BIN: &str = env!("CARGO_BIN_EXE_mapfilter");

/// Whether this process may mount; panics where root is required (CI).
fn root() -> bool {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } == 0 {
        return true;
    }
    assert!(
        std::env::var_os("MAPFILTER_REQUIRE_ROOT").is_none(),
        "MAPFILTER_REQUIRE_ROOT is set but the tests do not run as root"
    );
    eprintln!("skipped: needs root to mount a tmpfs");
    false
}

/// A tmpfs of `kib` KiB mounted on a fresh directory, unmounted on drop.
struct Tmpfs {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Tmpfs {
    fn new(kib: usize, options: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mnt");
        std::fs::create_dir(&path).unwrap();
        let opts = format!("size={kib}k{options}");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &opts, "tmpfs"])
            .arg(&path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount tmpfs failed");
        Tmpfs { _dir: dir, path }
    }

    /// Fills the filesystem, leaving about `free` bytes.
    fn fill_leaving(&self, free: u64) {
        let filler = self.path.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![7u8; 4096];
        loop {
            if std::io::Write::write_all(&mut f, &chunk).is_err() {
                break;
            }
            if free_bytes(&self.path) <= free {
                break;
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

fn free_bytes(dir: &Path) -> u64 {
    let c = std::ffi::CString::new(dir.as_os_str().to_str().unwrap()).unwrap();
    // SAFETY: statvfs fills the zeroed struct.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(c.as_ptr(), &mut s), 0);
        s.f_bavail * s.f_frsize
    }
}

/// Files in `dir` (names), sorted.
fn names(dir: &Path) -> Vec<String> {
    common::files_in(dir)
}

fn temps(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| n.contains("mapfilter-tmp"))
        .collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every command that writes a file, as arguments writing to `out` in
/// `dir` (inputs are the bundled rasters).
fn writers(out: &Path) -> Vec<(&'static str, Vec<String>)> {
    let o = out.display().to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        ("smooth", s(&["smooth", MODIS, &o, "-k", "box:3", "-q"])),
        (
            "smooth --mmu",
            s(&["smooth", MODIS, &o, "-k", "box:3", "--mmu", "20", "-q"]),
        ),
        ("sieve", s(&["sieve", MODIS, &o, "-s", "10", "-q"])),
        ("filter", s(&["filter", PHOTO, &o, "--op", "box:3", "-q"])),
        (
            "gen",
            s(&[
                "gen",
                &o,
                "--size",
                "1500x1500",
                "--classes",
                "200",
                "--pattern",
                "random",
                "-q",
            ]),
        ),
        (
            "compare --mismatch",
            s(&["compare", MODIS, MODIS, "--mismatch", &o, "-q"]),
        ),
        (
            "compare --html",
            s(&["compare", MODIS, MODIS, "--html", &o, "-q"]),
        ),
        ("histogram --json", s(&["histogram", PHOTO, "--json", &o])),
        ("histogram --csv", s(&["histogram", PHOTO, "--csv", &o])),
    ]
}

fn run(args: &[String]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

#[test]
fn a_full_disk_fails_the_run_and_keeps_the_old_output() {
    if !root() {
        return;
    }
    for (name, mut args) in writers(Path::new("PLACEHOLDER")) {
        let fs = Tmpfs::new(1024, "");
        let out = fs.path.join("out");
        for a in args.iter_mut() {
            if a == "PLACEHOLDER" {
                *a = out.display().to_string();
            }
        }
        args.push("--overwrite".into());
        std::fs::write(&out, b"the old output").unwrap();
        fs.fill_leaving(2048);
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("is full"), "{name}: {err}");
        assert!(
            !err.contains('\n') || err.lines().count() == 1,
            "{name}: {err}"
        );
        assert_eq!(std::fs::read(&out).unwrap(), b"the old output", "{name}");
        assert!(temps(&fs.path).is_empty(), "{name}: {:?}", names(&fs.path));
    }
}

#[test]
fn a_new_output_on_a_small_disk_is_complete_or_absent() {
    if !root() {
        return;
    }
    // Room for some outputs and not others: whatever exists must read back whole.
    for (name, mut args) in writers(Path::new("PLACEHOLDER")) {
        let fs = Tmpfs::new(300, "");
        let out = fs.path.join("out");
        for a in args.iter_mut() {
            if a == "PLACEHOLDER" {
                *a = out.display().to_string();
            }
        }
        let o = run(&args);
        assert!(temps(&fs.path).is_empty(), "{name}");
        if o.status.success() {
            assert!(out.exists(), "{name}");
            if name != "histogram --json" && name != "histogram --csv" && name != "compare --html" {
                let info = mapfilter(&["info", &out.display().to_string()]);
                assert!(info.status.success(), "{name}: {}", stderr(&info));
            }
        } else {
            assert_eq!(o.status.code(), Some(1), "{name}");
            assert!(!out.exists(), "{name}");
        }
    }
}

#[test]
fn a_read_only_directory_is_refused_before_any_work() {
    if !root() {
        return;
    }
    let fs = Tmpfs::new(1024, ",ro");
    for (name, args) in writers(&fs.path.join("out")) {
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("not writable"), "{name}: {err}");
    }
}

#[test]
fn special_files_directories_and_dangling_links_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("gone"), &dangling).unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    for target in [Path::new("/dev/null"), &fifo, &dangling, &sub] {
        for (name, mut args) in writers(target) {
            args.push("--overwrite".into());
            let o = run(&args);
            let err = stderr(&o);
            assert_eq!(
                o.status.code(),
                Some(1),
                "{name} {}: {err}",
                target.display()
            );
            assert!(
                err.contains("not a regular file")
                    || err.contains("is a directory")
                    || err.contains("does not exist"),
                "{name}: {err}"
            );
        }
    }
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo_like()
    );
    assert!(std::fs::symlink_metadata(&dangling).unwrap().is_symlink());
    assert_eq!(temps(dir.path()), Vec::<String>::new());
}

trait FifoLike {
    fn is_fifo_like(&self) -> bool;
}

impl FifoLike for std::fs::FileType {
    fn is_fifo_like(&self) -> bool {
        std::os::unix::fs::FileTypeExt::is_fifo(self)
    }
}

#[test]
fn a_symlink_target_is_written_through_and_keeps_pointing_at_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.tif");
    std::fs::write(&real, b"old").unwrap();
    let link = dir.path().join("link.tif");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let link_s = link.display().to_string();
    let o = mapfilter(&["smooth", MODIS, &link_s, "-k", "box:3", "-q"]);
    assert!(stderr(&o).contains("--overwrite"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&real).unwrap(), b"old");
    mapfilter_ok(&["smooth", MODIS, &link_s, "-k", "box:3", "-q", "--overwrite"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert!(std::fs::metadata(&real).unwrap().len() > 1000);
    assert!(temps(dir.path()).is_empty());
}

#[test]
fn planted_temp_symlinks_are_never_followed_or_removed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, b"precious").unwrap();
    // Symlinks under every name an attacker could guess from the old scheme
    // and the new prefix.
    let pid_guesses = (1..200).map(|p| format!(".out.tif.{p}.mapfilter-tmp.tif"));
    let new_style = (0..50).map(|i| format!(".mapfilter-tmp.{i}.aaaaaaaaaa.out.tif"));
    for name in pid_guesses.chain(new_style) {
        std::os::unix::fs::symlink(&victim, dir.path().join(name)).unwrap();
    }
    let out = dir.path().join("out.tif");
    mapfilter_ok(&["smooth", MODIS, out.to_str().unwrap(), "-k", "box:3", "-q"]);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    let links = names(dir.path())
        .iter()
        .filter(|n| {
            std::fs::symlink_metadata(dir.path().join(n))
                .unwrap()
                .is_symlink()
        })
        .count();
    assert_eq!(links, 249);
}

#[test]
fn existing_files_and_inputs_are_never_replaced_without_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, b"important").unwrap();
    let n = notes.to_str().unwrap();
    for (name, args) in writers(&notes) {
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains("exists") && err.contains("--overwrite"),
            "{name}: {err}"
        );
    }
    assert_eq!(std::fs::read(&notes).unwrap(), b"important");
    // The input as the output: by its path, a symlink and a hard link, even with --overwrite.
    let input = dir.path().join("in.tif");
    std::fs::copy(PHOTO, &input).unwrap();
    let sym = dir.path().join("sym.tif");
    std::os::unix::fs::symlink(&input, &sym).unwrap();
    let hard = dir.path().join("hard.tif");
    std::fs::hard_link(&input, &hard).unwrap();
    let before = std::fs::read(&input).unwrap();
    for out in [&input, &sym, &hard] {
        let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
        for args in [
            vec!["histogram", i, "--json", o, "--overwrite"],
            vec!["filter", i, o, "--op", "box:3", "--overwrite", "-q"],
        ] {
            let r = mapfilter(&args);
            assert_eq!(r.status.code(), Some(1), "{args:?}");
            assert!(stderr(&r).contains("is the input"), "{}", stderr(&r));
        }
    }
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let _ = n;
}

/// Every file a command reads besides its main input (a VRT's member, a
/// baseline, a confidence raster, a kernel file, an alpha raster, a sweep
/// config, a batch's tiles and outputs) is never an output, even with
/// `--overwrite`: refused before any work, the file byte for byte as it was.
#[test]
fn secondary_inputs_are_never_replaced_even_with_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    for name in ["a.tif", "base.tif", "conf.tif"] {
        std::fs::copy(MODIS, d.join(name)).unwrap();
    }
    std::fs::copy(PHOTO, d.join("photo.tif")).unwrap();
    let alpha = Command::new("gdal_translate")
        .args(["-q", "-b", "1", PHOTO, &p("alpha.tif")])
        .status()
        .unwrap();
    assert!(alpha.success());
    // A VRT of a VRT of a.tif, the member named relative to the VRT.
    for (vrt, member) in [("inner.vrt", "a.tif"), ("m.vrt", "inner.vrt")] {
        let ok = Command::new("gdalbuildvrt")
            .current_dir(d)
            .args(["-q", vrt, member])
            .status()
            .unwrap();
        assert!(ok.success());
    }
    std::fs::write(d.join("k.txt"), "1 1 1\n1 1 1\n1 1 1\n").unwrap();
    let smoke = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/sweeps/smoke.toml");
    std::fs::copy(smoke, d.join("results.csv")).unwrap();
    std::fs::create_dir(d.join("tiles")).unwrap();
    std::fs::copy(MODIS, d.join("tiles/t.tif")).unwrap();
    mapfilter_ok(&[
        "batch",
        "plan",
        &p("tiles"),
        "--out",
        &p("batch"),
        "-k",
        "box:3",
    ]);
    let all = [
        "a.tif",
        "base.tif",
        "conf.tif",
        "photo.tif",
        "alpha.tif",
        "inner.vrt",
        "m.vrt",
        "k.txt",
        "results.csv",
        "tiles/t.tif",
        "batch/plan.json",
    ];
    let before: Vec<Vec<u8>> = all
        .iter()
        .map(|n| std::fs::read(d.join(n)).unwrap())
        .collect();
    let smooth = |extra: &[&str]| {
        let mut v = vec!["smooth".to_string(), p("a.tif"), p("out.tif")];
        v.extend(["-k", "box:3", "-q", "--overwrite"].map(String::from));
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "a VRT's member, two VRTs deep",
            vec![
                "smooth".into(),
                p("m.vrt"),
                p("a.tif"),
                "-k".into(),
                "box:3".into(),
                "--overwrite".into(),
                "-q".into(),
            ],
        ),
        (
            "a VRT's member by a report",
            vec![
                "compare".into(),
                p("m.vrt"),
                p("base.tif"),
                "--html".into(),
                p("a.tif"),
                "--overwrite".into(),
                "-q".into(),
            ],
        ),
        (
            "--baseline as the report",
            smooth(&["--report", &p("base.tif"), "--baseline", &p("base.tif")]),
        ),
        (
            "--baseline as --json",
            smooth(&[
                "--report",
                &p("r.html"),
                "--baseline",
                &p("base.tif"),
                "--json",
                &p("base.tif"),
            ]),
        ),
        (
            "--confidence as the output",
            vec![
                "smooth".into(),
                p("a.tif"),
                p("conf.tif"),
                "-k".into(),
                "box:3".into(),
                "--method".into(),
                "naive".into(),
                "--confidence".into(),
                p("conf.tif"),
                "--overwrite".into(),
                "-q".into(),
            ],
        ),
        (
            "a kernel file as --json",
            vec![
                "smooth".into(),
                p("a.tif"),
                p("out.tif"),
                "-k".into(),
                format!("file:{}", p("k.txt")),
                "--json".into(),
                p("k.txt"),
                "--overwrite".into(),
                "-q".into(),
            ],
        ),
        (
            "a filter's kernel file as the output",
            vec![
                "filter".into(),
                p("photo.tif"),
                p("k.txt"),
                "--op".into(),
                format!("kernel:{}", p("k.txt")),
                "--overwrite".into(),
                "-q".into(),
            ],
        ),
        (
            "blend --alpha as the output",
            vec![
                "blend".into(),
                p("photo.tif"),
                p("photo.tif"),
                p("alpha.tif"),
                "--alpha".into(),
                p("alpha.tif"),
                "--overwrite".into(),
                "-q".into(),
            ],
        ),
        (
            "a sweep's config as a result file",
            vec![
                "sweep".into(),
                p("results.csv"),
                "--out".into(),
                d.to_str().unwrap().into(),
                "--overwrite".into(),
                "-q".into(),
            ],
        ),
        (
            "batch report --cog over an input tile",
            vec![
                "batch".into(),
                "report".into(),
                p("batch"),
                "--cog".into(),
                p("tiles/t.tif"),
                "--overwrite".into(),
            ],
        ),
        (
            "batch report --cog over the plan",
            vec![
                "batch".into(),
                "report".into(),
                p("batch"),
                "--cog".into(),
                p("batch/plan.json"),
                "--overwrite".into(),
            ],
        ),
    ];
    for (what, args) in &cases {
        let o = run(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{what}: {err}");
        assert!(
            err.contains("is the input") && err.lines().count() <= 2,
            "{what}: {err}"
        );
    }
    for (name, bytes) in all.iter().zip(&before) {
        assert_eq!(
            &std::fs::read(d.join(name)).unwrap(),
            bytes,
            "{name} changed"
        );
    }
    assert!(temps(d).is_empty(), "{:?}", names(d));
}

#[test]
fn an_input_through_a_bind_mount_is_never_the_output() {
    if !root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    std::fs::copy(MODIS, a.join("map.tif")).unwrap();
    let ok = Command::new("mount")
        .arg("--bind")
        .arg(&a)
        .arg(&b)
        .status()
        .unwrap();
    assert!(ok.success());
    let before = std::fs::read(a.join("map.tif")).unwrap();
    let o = mapfilter(&[
        "smooth",
        a.join("map.tif").to_str().unwrap(),
        b.join("map.tif").to_str().unwrap(),
        "-k",
        "box:3",
        "--overwrite",
        "-q",
    ]);
    let _ = Command::new("umount").arg(&b).status();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("is the input"), "{}", stderr(&o));
    assert_eq!(std::fs::read(a.join("map.tif")).unwrap(), before);
}

/// The exit a signal should give: 128 + N, or death by the signal itself
/// when it came before `main` could install the handler.
fn stopped_by(status: std::process::ExitStatus, signal: i32) -> bool {
    status.code() == Some(128 + signal) || status.signal() == Some(signal)
}

#[test]
fn signals_at_any_moment_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.tif");
    std::fs::write(&old, b"the old output").unwrap();
    let o = old.to_str().unwrap();
    let commands: [&[&str]; 6] = [
        &["smooth", MODIS, o, "-k", "gaussian:5", "--overwrite", "-q"],
        &["gen", o, "--size", "6000x6000", "--overwrite", "-q"],
        &["filter", PHOTO, o, "--op", "median:5", "--overwrite", "-q"],
        &[
            "compare",
            MODIS,
            MODIS,
            "--mismatch",
            o,
            "--overwrite",
            "-q",
        ],
        &["sieve", MODIS, o, "-s", "50", "--overwrite", "-q"],
        &["histogram", PHOTO, "--json", o, "--overwrite"],
    ];
    let delays = [0u64, 5, 10, 30, 60, 120, 250];
    for args in commands {
        for (i, &ms) in delays.iter().enumerate() {
            let signal = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP][i % 3];
            let mut child = Command::new(BIN)
                .args(args)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(ms));
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, signal) };
            let status = child.wait().unwrap();
            let done = status.success();
            assert!(
                done || stopped_by(status, signal),
                "{args:?} after {ms} ms: {status:?}"
            );
            assert!(
                temps(dir.path()).is_empty(),
                "{args:?} after {ms} ms: {:?}",
                names(dir.path())
            );
            if done {
                // Finished before the signal: a complete new output.
                if args[0] == "histogram" {
                    let text = std::fs::read(&old).unwrap();
                    assert!(serde_json::from_slice::<serde_json::Value>(&text).is_ok());
                } else {
                    assert!(mapfilter(&["info", o]).status.success());
                }
                std::fs::write(&old, b"the old output").unwrap();
            } else if std::fs::read(&old).unwrap() != b"the old output" {
                // The signal came after the rename, the command's last
                // step: the new output is there, and complete.
                if args[0] == "histogram" {
                    let text = std::fs::read(&old).unwrap();
                    assert!(serde_json::from_slice::<serde_json::Value>(&text).is_ok());
                } else {
                    assert!(mapfilter(&["info", o]).status.success(), "{args:?} {ms} ms");
                }
                std::fs::write(&old, b"the old output").unwrap();
            }
        }
    }
}

/// Sends `signals` (`count` of them, 30 ms apart) to a child once a line
/// of its stderr contains `when`, and returns its status and how long it
/// took to exit after the first signal.
fn signal_when(
    mut cmd: Command,
    when: &str,
    signal: i32,
    count: usize,
) -> (std::process::ExitStatus, Duration, String) {
    use std::io::BufRead;
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen += &line;
        seen.push('\n');
        if line.contains(when) {
            break;
        }
    }
    assert!(seen.contains(when), "never said '{when}': {seen}");
    // The rest of stderr is drained so that the child never blocks on it.
    let rest = std::thread::spawn(move || lines.map_while(|l| l.ok()).collect::<Vec<_>>());
    let sent = std::time::Instant::now();
    for i in 0..count {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(30));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
    }
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    seen += &rest.join().unwrap().join("\n");
    (status, took, seen)
}

/// A signal while GDAL writes a COG (minutes for a large map) stops the
/// run within a second, one signal or two, leaving no temp file.
#[test]
fn a_signal_during_cog_creation_exits_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big.tif");
    for count in [1, 2] {
        let mut cmd = Command::new(BIN);
        cmd.env("RUST_LOG", "info").args([
            "gen",
            out.to_str().unwrap(),
            "--size",
            "12000x12000",
            "--of",
            "COG",
            "--overwrite",
            "-q",
        ]);
        let (status, took, said) = signal_when(cmd, "making the COG", libc::SIGTERM, count);
        assert_eq!(status.code(), Some(143), "{count} signal(s): {said}");
        assert!(took < Duration::from_secs(1), "{count} signal(s): {took:?}");
        assert!(temps(dir.path()).is_empty(), "{:?}", names(dir.path()));
        assert!(!out.exists());
    }
}

/// `batch run` blocked reading a claim (a FIFO here; a hung NFS read
/// alike) while it holds the claims' lock: SIGTERM still ends it within a
/// second with 143.
#[test]
fn a_signal_ends_a_batch_run_blocked_on_a_claim_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let tiles = dir.path().join("tiles");
    std::fs::create_dir(&tiles).unwrap();
    std::fs::copy(MODIS, tiles.join("t.tif")).unwrap();
    let batch = dir.path().join("batch");
    mapfilter_ok(&[
        "batch",
        "plan",
        tiles.to_str().unwrap(),
        "--out",
        batch.to_str().unwrap(),
        "-k",
        "box:3",
    ]);
    let state = batch.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let fifo = std::ffi::CString::new(state.join("task-0.claim").to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let mut child = Command::new(BIN)
        .args(["batch", "run", batch.to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough to be blocked in the open of the FIFO.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "batch run did not block"
    );
    let sent = std::time::Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(status.code(), Some(143));
    assert!(temps(&batch.join("out")).is_empty());
}

#[test]
fn a_killed_run_leaves_the_old_output_and_its_temp_is_swept_later() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tif");
    std::fs::write(&out, b"the old output").unwrap();
    let o = out.to_str().unwrap();
    let mut child = Command::new(BIN)
        .args(["gen", o, "--size", "20000x20000", "--overwrite", "-q"])
        .spawn()
        .unwrap();
    // Wait until it writes.
    for _ in 0..200 {
        if !temps(dir.path()).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"the old output");
    let left = temps(dir.path());
    assert_eq!(left.len(), 1, "{left:?}");
    // A leftover is swept once it is old enough (its owner is dead: no lock).
    let leftover = dir.path().join(&left[0]);
    let old = std::time::SystemTime::now() - Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&leftover)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let r = mapfilter(&["smooth", MODIS, o, "-k", "box:3", "--overwrite", "-q"]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(stderr(&r).contains("interrupted runs"), "{}", stderr(&r));
    assert!(temps(dir.path()).is_empty());
    assert!(mapfilter(&["info", o]).status.success());
}

#[test]
fn concurrent_writers_never_leave_a_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tif");
    let o = out.to_str().unwrap().to_string();
    // Every raster writer, three processes at once on one path.
    for (name, base) in [
        ("filter", vec!["filter", PHOTO, &o, "--op", "box:5", "-q"]),
        ("gen", vec!["gen", &o, "--size", "800x800", "-q"]),
        ("sieve", vec!["sieve", MODIS, &o, "-s", "20", "-q"]),
    ] {
        let _ = std::fs::remove_file(&out);
        let children: Vec<_> = (0..3)
            .map(|_| {
                Command::new(BIN)
                    .args(&base)
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let ok = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .filter(|o| o.status.success())
            .count();
        assert!(ok >= 1, "{name}");
        assert!(temps(dir.path()).is_empty(), "{name}");
        assert!(mapfilter(&["info", &o]).status.success(), "{name}");
    }
    for overwrite in [false, true] {
        let _ = std::fs::remove_file(&out);
        let mut args = vec!["smooth", MODIS, &o, "-k", "box:5", "-q"];
        if overwrite {
            args.push("--overwrite");
        }
        let children: Vec<_> = (0..3)
            .map(|_| {
                Command::new(BIN)
                    .args(&args)
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outputs: Vec<Output> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        let ok = outputs.iter().filter(|o| o.status.success()).count();
        if overwrite {
            assert_eq!(ok, 3);
        } else {
            assert!(ok >= 1);
            for failed in outputs.iter().filter(|o| !o.status.success()) {
                let e = stderr(failed);
                assert!(e.contains("exists") || e.contains("appeared"), "{e}");
            }
        }
        assert!(temps(dir.path()).is_empty());
        let reference = dir.path().join("reference.tif");
        let _ = std::fs::remove_file(&reference);
        mapfilter_ok(&[
            "smooth",
            MODIS,
            reference.to_str().unwrap(),
            "-k",
            "box:5",
            "-q",
        ]);
        assert_eq!(common::read_raster(&out), common::read_raster(&reference));
    }
}

#[test]
fn dash_is_standard_output_for_text_outputs() {
    let o = mapfilter(&["histogram", PHOTO, "--json", "-"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.is_array());
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .current_dir(dir.path())
        .args(["compare", MODIS, MODIS, "--json", "-", "-q"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("summary").is_some(), "{v}");
    assert!(names(dir.path()).is_empty(), "a file named - was written");
}

#[test]
fn a_name_of_251_characters_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(format!("{}.tif", "n".repeat(247)));
    // A map without category names: those go to a side file NAME.aux.xml,
    // which a 251-byte NAME leaves no room for.
    let synthetic = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/synthetic_simplex_512.tif"
    );
    mapfilter_ok(&[
        "smooth",
        synthetic,
        out.to_str().unwrap(),
        "-k",
        "box:3",
        "-q",
    ]);
    assert!(out.exists());
    let too_long = dir.path().join("n".repeat(256));
    let o = mapfilter(&[
        "smooth",
        MODIS,
        too_long.to_str().unwrap(),
        "-k",
        "box:3",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("shorter name"), "{}", stderr(&o));
}
