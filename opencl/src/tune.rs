//! The per-device configuration database: work-group shapes and tile sides
//! that `mapfilter tune` measured, keyed by device name, driver version and
//! kernel, in a JSON file in the user's cache directory
//! (`$XDG_CACHE_HOME/mapfilter/tune.json`, else `~/.cache/mapfilter/tune.json`;
//! `MAPFILTER_TUNE_DB` names another file, `MAPFILTER_TUNE=off` ignores it).
//!
//! A setting changes how a kernel is launched, never what it computes:
//! every tuned kernel gives the same bytes for every shape (tests force
//! several). A file that cannot be read or parsed, or that another version
//! of the format wrote, is ignored with one warning; a run never fails for it.

use super::DeviceInfo;
use mapfilter_base::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use mapfilter_base::switches::{TUNE_DB_ENV, TUNE_ENV};

/// The format's version; files of another are ignored.
const FORMAT: u32 = 1;

/// Kernels with tuned settings.
pub const NAIVE_FAST: &str = "naive_fast";
pub const DCT5: &str = "dct5";

/// One measured setting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    /// `DeviceInfo::name`.
    pub device: String,
    /// The driver's version (`DeviceInfo::driver`).
    pub driver: String,
    /// [`NAIVE_FAST`] or [`DCT5`].
    pub kernel: String,
    /// naive_fast: `[TX, TY, PY, TILE_LOCAL, HIST_LOCAL]`; dct5: the
    /// work-group sizes of the column and the row pass.
    #[serde(default)]
    pub shape: Vec<usize>,
    /// The tile side runs take unless `--tile` says otherwise.
    #[serde(default)]
    pub tile: Option<usize>,
    /// Throughput measured with this setting, for the record.
    #[serde(default)]
    pub mpix_s: Option<f64>,
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shape: Vec<String> = self.shape.iter().map(ToString::to_string).collect();
        write!(f, "{} shape {}", self.kernel, shape.join(","))?;
        if let Some(t) = self.tile {
            write!(f, ", tile {t}")?;
        }
        Ok(())
    }
}

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TuneDb {
    pub format: u32,
    pub settings: Vec<Setting>,
}

impl TuneDb {
    pub fn new() -> Self {
        TuneDb {
            format: FORMAT,
            settings: Vec::new(),
        }
    }

    /// Parses a database; an error says why it cannot be used.
    pub fn parse(text: &str) -> Result<Self> {
        let db: TuneDb = serde_json::from_str(text)
            .map_err(|e| Error::input(format!("not a tune database: {e}")))?;
        if db.format != FORMAT {
            mapfilter_base::bail!(
                input,
                format!("format {} where this build reads {FORMAT}", db.format)
            );
        }
        Ok(db)
    }

    /// Reads `path`; `Ok(None)` when there is no such file.
    pub fn load(path: &Path) -> Result<Option<Self>> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(format!("reading it: {e}"))),
        }
    }

    /// The setting for `kernel` on `device`, if one was measured with its driver.
    pub fn lookup(&self, device: &DeviceInfo, kernel: &str) -> Option<&Setting> {
        self.settings
            .iter()
            .find(|s| s.device == device.name && s.driver == device.driver && s.kernel == kernel)
    }

    /// Adds `setting`, replacing the one of its device, driver and kernel.
    pub fn put(&mut self, setting: Setting) {
        self.settings.retain(|s| {
            (&s.device, &s.driver, &s.kernel) != (&setting.device, &setting.driver, &setting.kernel)
        });
        self.settings.push(setting);
    }

    /// Writes the database to `path` (temp file and rename), making its directory.
    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                Error::io(format!("creating {}: {e}", dir.display()))
                    .hint(format!("set {TUNE_DB_ENV} to a writable file"))
            })?;
        }
        let text = serde_json::to_string_pretty(self).expect("plain data serialises");
        let target = mapfilter_base::output::Destination::File(
            mapfilter_base::output::Target::check(path, true, &[])?,
        );
        mapfilter_base::output::text::write(&target, &(text + "\n"))
    }
}

/// Where the database lives: `MAPFILTER_TUNE_DB`, else the cache directory
/// ([`mapfilter_base::switches::Environment::tune_db`]).
pub fn db_path() -> Option<PathBuf> {
    mapfilter_base::switches::environment().tune_db.clone()
}

/// Whether runs ignore the database (`MAPFILTER_TUNE=off`).
pub fn ignored() -> bool {
    mapfilter_base::switches::environment().tune_off
}

/// The database runs use, read once per process: empty when ignored,
/// missing or unusable (the last with one warning).
pub fn active() -> &'static TuneDb {
    static DB: OnceLock<TuneDb> = OnceLock::new();
    DB.get_or_init(|| {
        if ignored() {
            log::info!("{TUNE_ENV} is off: no tuned settings");
            return TuneDb::new();
        }
        let Some(path) = db_path() else {
            return TuneDb::new();
        };
        match TuneDb::load(&path) {
            Ok(Some(db)) => {
                log::debug!(
                    "tune database {}: {} settings",
                    path.display(),
                    db.settings.len()
                );
                db
            }
            Ok(None) => TuneDb::new(),
            Err(e) => {
                log::warn!(
                    "ignoring the tune database {}: {}; `mapfilter tune` writes a new one",
                    path.display(),
                    e.cause()
                );
                TuneDb::new()
            }
        }
    })
}

/// Whether the database runs use gives any device a tile side: a run that
/// cannot wait for its device to learn which (`method::bridged`) then
/// does not guess.
pub fn sets_tiles() -> bool {
    active().settings.iter().any(|s| s.tile.is_some())
}

/// The tuned setting runs use for `kernel` on `device`, logged at `-v`.
pub fn tuned(device: &DeviceInfo, kernel: &str) -> Option<Setting> {
    let s = active().lookup(device, kernel)?.clone();
    log::info!("{}: tuned {s}", device.name);
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> Option<DeviceInfo> {
        super::super::list_devices().ok()?.into_iter().next()
    }

    #[test]
    fn round_trip_lookup_and_bad_files() {
        let mut db = TuneDb::new();
        let setting = |device: &str, shape: Vec<usize>| Setting {
            device: device.into(),
            driver: "1.0".into(),
            kernel: DCT5.into(),
            shape,
            tile: Some(1024),
            mpix_s: None,
        };
        db.put(setting("a", vec![32, 64]));
        db.put(setting("b", vec![64, 64]));
        db.put(setting("a", vec![128, 32]));
        assert_eq!(db.settings.len(), 2);
        let text = serde_json::to_string(&db).unwrap();
        assert_eq!(TuneDb::parse(&text).unwrap(), db);
        assert!(TuneDb::parse("{ not json").is_err());
        assert!(TuneDb::parse(r#"{"format": 99, "settings": []}"#).is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("tune.json");
        assert!(TuneDb::load(&path).unwrap().is_none());
        db.save(&path).unwrap();
        assert_eq!(TuneDb::load(&path).unwrap().unwrap(), db);
        if let Some(mut info) = info() {
            info.name = "a".into();
            info.driver = "1.0".into();
            assert_eq!(db.lookup(&info, DCT5).unwrap().shape, vec![128, 32]);
            assert!(db.lookup(&info, NAIVE_FAST).is_none());
            info.driver = "2.0".into();
            assert!(db.lookup(&info, DCT5).is_none());
        }
    }
}
