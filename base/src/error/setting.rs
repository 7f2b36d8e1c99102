//! The settings that library messages refer to, and how each front end
//! spells them.
//!
//! A library message never names a CLI flag: "give a smaller --tile" would
//! be wrong in Python (where it is `tile=`) and for a Rust caller (who sets
//! a struct field). It names a [`Setting`] instead, and the setting renders
//! itself for the [`Front`] the process runs under: the CLI as `--tile`,
//! Python as `tile=`, anything else as the setting's plain name `tile`.
//!
//! The front is process-wide, set once at start-up by the front end
//! ([`set_front`]), so that a message rendered anywhere (an error built
//! deep in the engine, nested in another's cause, written to a batch record
//! or a log line) reads the same as one rendered at the top; the CLI and
//! the Python module never share a process.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// Who reads the messages, and so how settings are spelled in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// A Rust caller of the library: the setting's plain name (`tile`).
    Library,
    /// The command line: the flag (`--tile`).
    Cli,
    /// The Python package: the keyword argument (`tile=`), or a note that
    /// the setting is the CLI's only.
    Python,
}

/// The process's front, [`Front::Library`] until a front end says otherwise.
static FRONT: AtomicU8 = AtomicU8::new(0);

/// Sets the front whose spelling every message of this process uses; a
/// front end calls it once, before any work.
pub fn set_front(front: Front) {
    FRONT.store(front as u8, Ordering::Relaxed);
}

/// The front that messages are rendered for.
pub fn front() -> Front {
    match FRONT.load(Ordering::Relaxed) {
        1 => Front::Cli,
        2 => Front::Python,
        _ => Front::Library,
    }
}

/// Declares [`Setting`] from one table: each setting's plain name (also its
/// CLI flag after `--`) and its Python keyword, where Python has one.
macro_rules! settings {
    ($($(#[doc = $doc:literal])* $variant:ident => $name:literal, $python:expr;)*) => {
        /// A setting that a message refers to (an option of the CLI, a
        /// keyword of Python, a field of a library struct).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Setting {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Setting {
            /// Every setting, in declaration order.
            pub const ALL: &'static [Setting] = &[$(Setting::$variant,)*];

            /// The plain name, in kebab case (`only-isolated`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Setting::$variant => $name,)*
                }
            }

            /// The Python keyword argument, or `None` where the Python
            /// package has no such setting.
            pub fn python(self) -> Option<&'static str> {
                match self {
                    $(Setting::$variant => $python,)*
                }
            }
        }
    };
}

settings! {
    /// The engine's tile side.
    Tile => "tile", Some("tile");
    /// The smoothing method.
    Method => "method", Some("method");
    /// The OpenCL device(s), or the host.
    Device => "device", Some("device");
    /// The naive method's OpenCL variant.
    Variant => "variant", None;
    /// dct5's number of terms.
    Terms => "terms", Some("terms");
    /// svd's rank.
    Rank => "rank", Some("rank");
    /// svd's kept energy.
    Energy => "energy", Some("energy");
    /// The tie rule.
    Ties => "ties", Some("ties");
    /// Classes whose pixels never change.
    Keep => "keep", Some("keep");
    /// Classes that cast no vote.
    NoVote => "no-vote", Some("no_vote");
    /// Smoothing passes.
    Iterations => "iterations", Some("iterations");
    /// Change only pixels with fewer than T like neighbours.
    OnlyIsolated => "only-isolated", Some("only_isolated");
    /// Per-pixel vote weights.
    Confidence => "confidence", Some("confidence");
    /// The value of full confidence.
    ConfidenceScale => "confidence-scale", Some("confidence_scale");
    /// The fast methods' certified mode.
    Exact => "exact", Some("exact");
    /// Replacing an existing output.
    Overwrite => "overwrite", None;
    /// The border mode.
    Border => "border", Some("border");
    /// The kernel spec.
    Kernel => "kernel", Some("kernel");
    /// A gaussian kernel's side.
    KernelSize => "kernel-size", Some("kernel_size");
    /// Rounding a sub-pixel kernel or area up.
    AllowSubpixel => "allow-subpixel", None;
    /// Per-class vote weights.
    ClassWeights => "class-weights", Some("class_weights");
    /// The strata raster of an accuracy sample.
    Strata => "strata", None;
    /// A sample's allocation rule.
    Allocation => "allocation", None;
    /// The target standard error of a sample's design.
    TargetSe => "target-se", None;
    /// The expected user's accuracy of a sample's design.
    ExpectedUsers => "expected-users", None;
    /// A sample's total number of points (`-n` on the CLI).
    SampleSize => "sample-size", None;
    /// The fewest sample points per class.
    MinPerClass => "min-per-class", None;
    /// A histogram's number of bins.
    Bins => "bins", None;
    /// The JSON summary's destination.
    Json => "json", None;
    /// A batch's minimum mapping unit.
    Mmu => "mmu", None;
    /// The minimum mapping unit's connectivity.
    MmuConnectivity => "mmu-connectivity", None;
    /// An output directory.
    Out => "out", None;
    /// A batch's grid of tasks per input.
    Grid => "grid", None;
    /// A batch's baseline method.
    CompareWith => "compare-with", None;
    /// How many tasks a batch compares with its baseline.
    CompareSample => "compare-sample", None;
    /// Labelled reference points.
    Reference => "reference", None;
    /// Running a batch's failed tasks again.
    RetryFailed => "retry-failed", None;
    /// A batch run's share of the tasks.
    Shard => "shard", None;
    /// Slurm's memory per task.
    SlurmMem => "slurm-mem", None;
    /// Slurm's time limit.
    SlurmTime => "slurm-time", None;
    /// The input's nodata value, overridden.
    SrcNodata => "src-nodata", None;
    /// The output's nodata value.
    DstNodata => "dst-nodata", None;
    /// A GDAL creation option.
    Co => "co", None;
    /// The output format (GTiff or COG).
    Of => "of", None;
    /// The output's compression.
    Compress => "compress", None;
    /// The compression level.
    CompressLevel => "compress-level", None;
    /// The reference points' label field.
    Label => "label", None;
    /// The exact output a comparison measures against.
    Baseline => "baseline", None;
    /// Where a level op's levels go.
    Levels => "levels", None;
    /// The output's sample type.
    Ot => "ot", None;
    /// The unit of reported areas.
    AreaUnit => "area-unit", None;
    /// The class colours of reports.
    Palette => "palette", None;
    /// A one-band raster of blending weights.
    Alpha => "alpha", None;
    /// The band of the first raster that holds the blending weights.
    AlphaBand => "alpha-band", None;
}

impl Setting {
    /// The CLI's flag (`--tile`; `-n` for the sample size).
    pub fn flag(self) -> String {
        match self {
            Setting::SampleSize => "-n".to_string(),
            other => format!("--{}", other.name()),
        }
    }

    /// The setting as `front` spells it.
    pub fn render(self, front: Front) -> String {
        match (front, self.python()) {
            (Front::Cli, _) => self.flag(),
            (Front::Python, Some(keyword)) => format!("{keyword}="),
            (Front::Python, None) => format!("the CLI's {} (not in Python)", self.flag()),
            (Front::Library, _) => self.name().to_string(),
        }
    }

    /// The setting given `value`, rendered as a whole: `--tile 512`,
    /// `tile=512`, `tile = 512`.
    pub fn is(self, value: impl fmt::Display) -> Given {
        Given {
            setting: self,
            value: value.to_string(),
        }
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(front()))
    }
}

/// A setting with its value, as a message quotes it ([`Setting::is`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    setting: Setting,
    value: String,
}

impl Given {
    /// The setting and value as `front` spells them.
    pub fn render(&self, front: Front) -> String {
        let (s, v) = (self.setting, &self.value);
        match (front, s.python()) {
            (Front::Cli, _) => format!("{} {v}", s.flag()),
            (Front::Python, Some(keyword)) => format!("{keyword}={v}"),
            (Front::Python, None) => format!("the CLI's {} {v} (not in Python)", s.flag()),
            (Front::Library, _) => format!("{} = {v}", s.name()),
        }
    }
}

impl fmt::Display for Given {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(front()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_front_spells_a_setting_its_own_way() {
        let spell = |s: Setting| [Front::Cli, Front::Python, Front::Library].map(|f| s.render(f));
        assert_eq!(spell(Setting::Tile), ["--tile", "tile=", "tile"]);
        assert_eq!(
            spell(Setting::OnlyIsolated),
            ["--only-isolated", "only_isolated=", "only-isolated"]
        );
        assert_eq!(
            spell(Setting::Overwrite),
            [
                "--overwrite",
                "the CLI's --overwrite (not in Python)",
                "overwrite"
            ]
        );
        assert_eq!(Setting::SampleSize.flag(), "-n");
        let given = Setting::Ties.is("centre");
        assert_eq!(
            [Front::Cli, Front::Python, Front::Library].map(|f| given.render(f)),
            ["--ties centre", "ties=centre", "ties = centre"]
        );
    }

    #[test]
    fn names_are_kebab_case_and_keywords_python_identifiers() {
        for s in Setting::ALL {
            let name = s.name();
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{name}"
            );
            if let Some(k) = s.python() {
                assert_eq!(k, name.replace('-', "_"), "{name}");
            }
        }
        let distinct: std::collections::BTreeSet<_> =
            Setting::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(distinct.len(), Setting::ALL.len());
    }
}
