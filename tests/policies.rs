//! The smoothing policies (docs/semantics.md#policies: `--ties`, `--keep`,
//! `--no-vote`, `--only-isolated`, `--iterations`) against the fixtures of
//! tests/fixtures (`expected_policy_*.tif`, from the independent numpy
//! generator): every exact method, on the host and PoCL, with several tile
//! sizes and the naive OpenCL kernel's CPU paths forced on and off, and the
//! CLI; and the refusals.
#![cfg(feature = "gdal")]

use crate::common;

use common::{exact_methods, fixture, mapfilter, mapfilter_ok, read_raster};
use mapfilter::classes::ClassWeights;
use mapfilter::device::test_device;
use mapfilter::engine::{self, SmoothJob};
use mapfilter::gdal::class_raster::ClassRaster;
use mapfilter::gdal::confidence::ConfidenceSpec;
use mapfilter::io::{ClassSource, MemRaster};
use mapfilter::kernel::KernelSpec;
use mapfilter::method::ClassSmoother;
use mapfilter::method::naive::cl::{NaiveCl, Variant};
use mapfilter::method::naive::tuning::CpuPaths;
use mapfilter::method::policy::PolicyText;
use mapfilter::progress::Progress;
use tiles::Border;

/// One case of `POLICY_CASES` in tests/fixtures/generate.py.
struct Case {
    name: &'static str,
    input: &'static str,
    kernel: &'static str,
    options: &'static [&'static str],
}

const INPUT: &str = "classes_72x64.tif";
const MODIS: &str = "modis_80x64.tif";

/// The cases, as `POLICY_CASES` of generate.py lists them.
const CASES: &[Case] = &[
    Case {
        name: "ties_smallest",
        input: INPUT,
        kernel: "box:3",
        options: &["--ties", "smallest"],
    },
    Case {
        name: "ties_largest",
        input: MODIS,
        kernel: "box:3",
        options: &["--ties", "largest"],
    },
    Case {
        name: "ties_undecided",
        input: MODIS,
        kernel: "box:3",
        options: &["--ties", "undecided:250"],
    },
    Case {
        name: "ties_undecided_fill",
        input: INPUT,
        kernel: "box:5",
        options: &["--ties", "undecided:9", "--fill-nodata"],
    },
    Case {
        name: "keep",
        input: MODIS,
        kernel: "gaussian:1.5",
        options: &["--keep", "0,13"],
    },
    Case {
        name: "no_vote",
        input: INPUT,
        kernel: "file:kernel_disc_r3.txt",
        options: &["--no-vote", "3,40"],
    },
    Case {
        name: "no_vote_modis",
        input: MODIS,
        kernel: "box:5",
        options: &["--no-vote", "8,9,10"],
    },
    Case {
        name: "only_isolated",
        input: MODIS,
        kernel: "box:5",
        options: &["--only-isolated", "4"],
    },
    Case {
        name: "only_isolated_disc",
        input: INPUT,
        kernel: "disc:2",
        options: &["--only-isolated", "2", "--fill-nodata"],
    },
    Case {
        name: "iterations",
        input: MODIS,
        kernel: "box:3",
        options: &["--iterations", "3"],
    },
    Case {
        name: "iterations_valid",
        input: INPUT,
        kernel: "file:kernel_thesis_3x3.txt",
        options: &["--iterations", "2", "--border", "valid", "--fill-nodata"],
    },
    Case {
        name: "combined",
        input: MODIS,
        kernel: "disc:2",
        options: &[
            "--ties",
            "undecided:250",
            "--keep",
            "0",
            "--no-vote",
            "16",
            "--only-isolated",
            "6",
            "--iterations",
            "2",
            "--class-weights",
            "12:2",
        ],
    },
    Case {
        name: "confidence_pct",
        input: MODIS,
        kernel: "gaussian:1.5",
        options: &[
            "--confidence",
            "modis_80x64_confidence_pct.tif",
            "--confidence-scale",
            "100",
        ],
    },
    Case {
        name: "confidence_float",
        input: INPUT,
        kernel: "box:5",
        options: &[
            "--confidence",
            "classes_72x64_confidence.tif:1",
            "--fill-nodata",
        ],
    },
    Case {
        name: "confidence_iterations",
        input: INPUT,
        kernel: "file:kernel_thesis_3x3.txt",
        options: &[
            "--confidence",
            "classes_72x64_confidence.tif",
            "--iterations",
            "2",
            "--border",
            "valid",
            "--ties",
            "largest",
        ],
    },
];

impl Case {
    /// The kernel spec with a file kernel's path made absolute.
    fn kernel_spec(&self) -> String {
        match self.kernel.strip_prefix("file:") {
            Some(name) => format!("file:{}", fixture(name).display()),
            None => self.kernel.to_string(),
        }
    }

    /// The options with the confidence raster's path made absolute.
    fn cli_options(&self) -> Vec<String> {
        let mut options: Vec<String> = self.options.iter().map(|o| o.to_string()).collect();
        if let Some(at) = options.iter().position(|o| o == "--confidence") {
            options[at + 1] = fixture(&options[at + 1]).display().to_string();
        }
        options
    }

    /// The confidence raster, opened for the case's input.
    fn confidence(&self) -> Option<mapfilter::gdal::confidence::ConfidenceRaster> {
        let text = self.option("--confidence")?;
        let scale = self
            .option("--confidence-scale")
            .map(|s| s.parse().unwrap());
        let spec = ConfidenceSpec::parse(&fixture(text).display().to_string(), scale).unwrap();
        let input = ClassRaster::open(&fixture(self.input)).unwrap();
        Some(spec.open(input.meta.width, input.meta.height).unwrap())
    }

    /// The value of `flag`, if the case gives it.
    fn option(&self, flag: &str) -> Option<&'static str> {
        let at = self.options.iter().position(|o| *o == flag)?;
        self.options.get(at + 1).copied()
    }

    fn job(&self, tile: usize) -> (ClassRaster, SmoothJob) {
        let mut input = ClassRaster::open(&fixture(self.input)).unwrap();
        let mut classes = input.scan_classes(&Progress::hidden()).unwrap();
        let policies = PolicyText {
            ties: self.option("--ties"),
            keep: self.option("--keep"),
            no_vote: self.option("--no-vote"),
            only_isolated: self.option("--only-isolated").map(|t| t.parse().unwrap()),
            iterations: self.option("--iterations").map(|n| n.parse().unwrap()),
        }
        .parse()
        .unwrap();
        if let Some(code) = policies.ties.undecided() {
            classes = classes.with_code(code, 255).unwrap();
        }
        let weights: ClassWeights = self
            .option("--class-weights")
            .unwrap_or("")
            .parse()
            .unwrap();
        let job = SmoothJob {
            class_weights: weights.quantise(&classes),
            output_nodata: classes.output_nodata(255),
            kernel: self
                .kernel_spec()
                .parse::<KernelSpec>()
                .unwrap()
                .build()
                .unwrap(),
            classes,
            border: match self.option("--border") {
                Some("valid") => Border::Valid,
                _ => Border::Same,
            },
            fill_nodata: self.options.contains(&"--fill-nodata"),
            tile,
            policies,
        };
        (input, job)
    }
}

/// The naive OpenCL kernel with its CPU paths forced, so that the tie rule
/// of `-D TIES` meets the run path and the sliding histogram whatever the
/// tiles look like.
fn forced_paths() -> Vec<(String, Box<dyn ClassSmoother>)> {
    let Some(dev) = test_device() else {
        return Vec::new();
    };
    let mut methods: Vec<(String, Box<dyn ClassSmoother>)> = Vec::new();
    for (runs, slide) in [(true, false), (false, true), (false, false)] {
        let paths = CpuPaths {
            runs: Some(runs),
            mask: Some(true),
            slide: Some(slide),
        };
        let m = NaiveCl::new(dev.clone(), Variant::Fast)
            .unwrap()
            .with_cpu_paths(paths);
        methods.push((format!("naive fast runs={runs} slide={slide}"), Box::new(m)));
    }
    methods
}

/// The methods a case runs on: a tie rule lives in every method's winner
/// search, so the tie cases take every exact method and forced OpenCL
/// path; the other policies are the engine's, around any method, so one
/// method per kind (host, OpenCL naive, certified) shows them.
fn methods_for(
    case: &Case,
    kernel: &mapfilter::kernel::Kernel,
) -> Vec<(String, Box<dyn ClassSmoother>)> {
    let mut methods = exact_methods(kernel);
    if case.option("--confidence").is_some() {
        // Every method weighs votes: naive on the host and every OpenCL
        // variant, the certified svd/dct5/auto on the host and on OpenCL.
        let names: Vec<&str> = methods.iter().map(|(n, _)| n.as_str()).collect();
        let unweighted: Vec<&str> = methods
            .iter()
            .filter(|(_, m)| !m.weighs_votes())
            .map(|(n, _)| n.as_str())
            .collect();
        let cl = test_device().is_some();
        let on_device = |m: &str| {
            names
                .iter()
                .any(|n| n.starts_with(&format!("{m} --exact on Index")))
        };
        assert!(
            unweighted.is_empty()
                && names.iter().any(|n| n.starts_with("naive/opencl")) == cl
                && names.contains(&"svd --exact on Host")
                && on_device("svd") == cl
                && on_device("dct5") == (cl && names.contains(&"dct5 --exact on Host")),
            "{names:?}, not weighing: {unweighted:?}"
        );
        return methods;
    }
    if case.option("--ties").is_some() {
        methods.extend(forced_paths());
        return methods;
    }
    let mut seen_cl = false;
    methods.retain(|(name, _)| {
        let first_cl = name.contains("(fast)") && !seen_cl;
        seen_cl |= first_cl;
        name == "naive/host" || first_cl || name == "svd --exact on Host"
    });
    methods
}

#[test]
fn every_exact_method_and_tile_size_reproduces_the_policy_fixtures() {
    for case in CASES {
        let (_, job) = case.job(1);
        let (ew, eh, expected) =
            read_raster(&fixture(&format!("expected_policy_{}.tif", case.name)));
        for (method_name, method) in methods_for(case, &job.kernel) {
            let tiles: &[usize] = if method_name == "naive/host" {
                &[1, 6, 13, 1000]
            } else {
                &[9, 1000]
            };
            for &tile in tiles {
                let (mut input, job) = case.job(tile);
                let mut out = MemRaster::filled(ew, eh, 0);
                let mut votes = case.confidence();
                engine::smooth_weighted(
                    &mut input,
                    votes.as_mut().map(|v| v as &mut dyn ClassSource),
                    &mut out,
                    &job,
                    method.as_ref(),
                    &Progress::hidden(),
                )
                .unwrap();
                let differ = out
                    .data
                    .iter()
                    .zip(&expected)
                    .filter(|(a, b)| a != b)
                    .count();
                assert_eq!(differ, 0, "{}: {method_name}, tile {tile}", case.name);
            }
        }
    }
}

#[test]
fn the_cli_reproduces_the_policy_fixtures() {
    let dir = tempfile::tempdir().unwrap();
    for case in CASES {
        let out = dir.path().join(format!("{}.tif", case.name));
        let input = fixture(case.input);
        let spec = case.kernel_spec();
        let options = case.cli_options();
        let mut args = vec![
            "smooth",
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "--kernel",
            &spec,
            "--tile",
            "17",
            "-q",
            "--device",
            "host",
        ];
        args.extend(options.iter().map(String::as_str));
        mapfilter_ok(&args);
        let expected = fixture(&format!("expected_policy_{}.tif", case.name));
        assert_eq!(read_raster(&out), read_raster(&expected), "{}", case.name);
        let (ours, theirs) = (
            gdal::Dataset::open(&out).unwrap(),
            gdal::Dataset::open(&expected).unwrap(),
        );
        assert_eq!(
            ours.geo_transform().unwrap(),
            theirs.geo_transform().unwrap(),
            "{}",
            case.name
        );
        assert_eq!(
            ours.rasterband(1).unwrap().no_data_value(),
            theirs.rasterband(1).unwrap().no_data_value(),
            "{}",
            case.name
        );
    }
}

/// The report records the policies and the confidence raster, and its
/// baseline weighs votes as the run did (agreement 100 %).
#[test]
fn reports_record_the_policies() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture(MODIS);
    let conf = fixture("modis_80x64_confidence_pct.tif");
    let (out, report) = (dir.path().join("out.tif"), dir.path().join("r.json"));
    mapfilter_ok(&[
        "smooth",
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "-k",
        "box:3",
        "-q",
        "--device",
        "host",
        "--ties",
        "undecided:250",
        "--iterations",
        "2",
        "--confidence",
        conf.to_str().unwrap(),
        "--confidence-scale",
        "100",
        "--report",
        report.to_str().unwrap(),
    ]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let settings = json["run"]["settings"].as_array().unwrap();
    let get = |key: &str| {
        settings
            .iter()
            .find(|kv| kv[0] == key)
            .unwrap_or_else(|| panic!("{key} missing: {settings:?}"))[1]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(get("ties"), "undecided:250");
    assert_eq!(get("iterations"), "2");
    assert_eq!(get("keep"), "none");
    assert!(get("confidence").ends_with("modis_80x64_confidence_pct.tif:1"));
    let summary = &json["summary"];
    assert_eq!(
        summary["agreement_percent"].as_f64(),
        Some(100.0),
        "{summary}"
    );
    assert_eq!(summary["differing_pixels"], 0, "{summary}");
}

#[test]
fn policies_a_method_cannot_honour_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture(MODIS);
    let out = dir.path().join("out.tif");
    let refused = |extra: &[&str], says: &str| {
        let mut args = vec![
            "smooth",
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "-k",
            "gaussian:1",
            "-q",
        ];
        args.extend_from_slice(extra);
        let run = mapfilter(&args);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{extra:?}: {err}");
        assert!(
            err.contains(says) && err.contains("hint:"),
            "{extra:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!out.exists());
    };
    refused(&["--iterations", "0"], "--iterations must be 1 to 1000");
    refused(&["--iterations", "999"], "more than 2048");
    refused(&["--only-isolated", "0"], "--only-isolated 0");
    refused(
        &["--ties", "undecided:255"],
        "names the input's nodata value",
    );
    refused(&["--ties", "first"], "unknown tie rule");
    refused(&["--keep", "water"], "'water' is not a class code");
    let pct = fixture("modis_80x64_confidence_pct.tif");
    let pct = pct.to_str().unwrap();
    refused(
        &["--confidence", pct, "--device", "host"],
        "the scale of its integer confidences is not known",
    );
    refused(
        &[
            "--confidence",
            pct,
            "--confidence-scale",
            "50",
            "--device",
            "host",
        ],
        "is outside 0..50",
    );
    // Approximate scores cannot tell a tie, on the host and on OpenCL alike.
    let devices: &[&str] = if test_device().is_some() {
        &["host", "cpu"]
    } else {
        &["host"]
    };
    for &device in devices {
        for method in ["svd", "dct5", "auto"] {
            refused(
                &["--method", method, "--ties", "largest", "--device", device],
                "--ties largest is defined on exact scores",
            );
        }
    }
    refused(
        &[
            "--confidence",
            &fixture("classes_72x64_confidence.tif")
                .display()
                .to_string(),
        ],
        "is 64x72, the class raster 80x64",
    );
    // With --exact the fast methods take every policy.
    mapfilter_ok(&[
        "smooth",
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "-k",
        "gaussian:1",
        "-q",
        "--method",
        "dct5",
        "--exact",
        "--ties",
        "largest",
    ]);
    // dct5 on the host weighs votes; certified, it reproduces the fixture.
    mapfilter_ok(&[
        "smooth",
        input.to_str().unwrap(),
        out.to_str().unwrap(),
        "-k",
        "gaussian:1.5",
        "-q",
        "--overwrite",
        "--method",
        "dct5",
        "--exact",
        "--device",
        "host",
        "--confidence",
        pct,
        "--confidence-scale",
        "100",
    ]);
    assert_eq!(
        read_raster(&out),
        read_raster(&fixture("expected_policy_confidence_pct.tif"))
    );
    // So does dct5 on OpenCL: certified, the fixture again; plain, its
    // report's agreement is taken against the weighted baseline.
    if test_device().is_some() {
        let report = out.with_extension("json");
        for exact in [true, false] {
            let mut args = vec![
                "smooth",
                input.to_str().unwrap(),
                out.to_str().unwrap(),
                "-k",
                "gaussian:1.5",
                "-q",
                "--overwrite",
                "--method",
                "dct5",
                "--device",
                "cpu",
                "--confidence",
                pct,
                "--confidence-scale",
                "100",
                "--report",
                report.to_str().unwrap(),
            ];
            if exact {
                args.push("--exact");
            }
            mapfilter_ok(&args);
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
            let agreement = json["summary"]["agreement_percent"].as_f64().unwrap();
            if exact {
                assert_eq!(agreement, 100.0, "{json}");
                assert_eq!(
                    read_raster(&out),
                    read_raster(&fixture("expected_policy_confidence_pct.tif"))
                );
            } else {
                assert!(agreement >= 99.5, "{agreement}");
            }
        }
    }
}
