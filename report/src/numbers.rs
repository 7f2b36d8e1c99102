//! How reports write numbers: fixed decimals that never show "-0.0", areas
//! in the unit that suits their size (m², ha or km² for metric rasters), and
//! the provenance of a report (command line, version, date).

use mapfilter_core::error::Setting;

/// `v` with `digits` decimals; a value that rounds to zero is written
/// without a sign ("-0.0" would read as a real change).
pub fn fixed(v: f64, digits: usize) -> String {
    let s = format!("{v:.digits$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// The unit one table of areas is written in.
#[derive(Clone, Debug, PartialEq)]
pub struct AreaUnit {
    /// Shown in headers, e.g. "km²".
    pub name: String,
    /// Source units per shown unit.
    pub per: f64,
    digits: usize,
}

impl AreaUnit {
    /// For areas measured in `unit` ("m²" is rescaled to ha or km² when the
    /// largest of `values` is that large; other units are kept).
    pub fn for_values(unit: &str, values: impl IntoIterator<Item = f64>) -> Self {
        let largest = values.into_iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let (name, per, digits) = match unit {
            "m²" if largest >= 1e6 => ("km²", 1e6, 3),
            "m²" if largest >= 1e4 => ("ha", 1e4, 2),
            "m²" => ("m²", 1.0, 1),
            "pixels" => ("pixels", 1.0, 0),
            other => (other, 1.0, 3),
        };
        AreaUnit {
            name: name.to_string(),
            per,
            digits,
        }
    }

    /// The unit a user chose (`ha`, `km2`, `m2`) for areas measured in
    /// `unit`, or with `auto` the one that suits `values`.
    pub fn chosen(
        choice: &str,
        unit: &str,
        values: impl IntoIterator<Item = f64>,
    ) -> mapfilter_core::error::Result<Self> {
        let (name, per, digits) = match choice {
            "auto" => return Ok(Self::for_values(unit, values)),
            "ha" => ("ha", 1e4, 2),
            "km2" | "km²" => ("km²", 1e6, 3),
            "m2" | "m²" => ("m²", 1.0, 1),
            other => mapfilter_core::bail!(
                usage,
                format!("{}: not an area unit", Setting::AreaUnit.is(other)),
                hint = "give ha, km2, m2 or auto"
            ),
        };
        if unit != "m²" {
            mapfilter_core::bail!(
                usage,
                format!(
                    "{}: the map's areas are in {unit}, not metres",
                    Setting::AreaUnit.is(choice)
                ),
                hint = format!(
                    "use {} for a map whose coordinate system is not in metres",
                    Setting::AreaUnit.is("auto")
                )
            );
        }
        Ok(AreaUnit {
            name: name.to_string(),
            per,
            digits,
        })
    }

    /// `v` (in the source unit) written in this unit.
    pub fn show(&self, v: f64) -> String {
        fixed(v / self.per, self.digits)
    }
}

/// Who made a report, when and how: recorded in every report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Provenance {
    /// The command line, arguments quoted where the shell would need it.
    pub command_line: String,
    pub version: String,
    /// UTC, ISO 8601.
    pub date: String,
}

/// `report` as pretty JSON with `"provenance"` (this process's) and the
/// `extra` fields beside its own.
pub fn json_with_provenance(
    report: &impl serde::Serialize,
    extra: &[(&str, serde_json::Value)],
) -> mapfilter_core::error::Result<String> {
    let fail = |e: serde_json::Error| {
        mapfilter_core::error::Error::io(format!("cannot write the JSON report: {e}"))
    };
    let mut value = serde_json::to_value(report).map_err(fail)?;
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "provenance".into(),
            serde_json::to_value(Provenance::now()).map_err(fail)?,
        );
        for (key, v) in extra {
            object.insert((*key).into(), v.clone());
        }
    }
    serde_json::to_string_pretty(&value).map_err(fail)
}

impl Provenance {
    /// This process's.
    pub fn now() -> Self {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Provenance {
            command_line: std::env::args()
                .map(|a| quote(&a))
                .collect::<Vec<_>>()
                .join(" "),
            version: format!("mapfilter {}", env!("CARGO_PKG_VERSION")),
            date: iso_date(secs),
        }
    }
}

/// `arg` as a POSIX shell reads it back.
fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic
/// Gregorian calendar, Howard Hinnant's days-to-civil).
fn iso_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_negative_zero() {
        assert_eq!(fixed(-0.0, 1), "0.0");
        assert_eq!(fixed(-0.04, 1), "0.0");
        assert_eq!(fixed(-0.05001, 1), "-0.1");
        assert_eq!(fixed(-12.5, 0), "-12");
        assert_eq!(fixed(3.25, 2), "3.25");
    }

    #[test]
    fn areas_take_the_unit_of_their_size() {
        let km = AreaUnit::for_values("m²", [2.5e9, -10.0]);
        assert_eq!(
            (km.name.as_str(), km.show(2.5e9)),
            ("km²", "2500.000".into())
        );
        assert_eq!(km.show(-1.0), "0.000");
        let ha = AreaUnit::for_values("m²", [5e4]);
        assert_eq!((ha.name.as_str(), ha.show(5e4)), ("ha", "5.00".into()));
        assert_eq!(AreaUnit::for_values("m²", [900.0]).name, "m²");
        assert_eq!(AreaUnit::for_values("foot²", [1e9]).name, "foot²");
        let ha = AreaUnit::chosen("ha", "m²", [1e9]).unwrap();
        assert_eq!((ha.name.as_str(), ha.show(2.5e6)), ("ha", "250.00".into()));
        assert_eq!(AreaUnit::chosen("auto", "m²", [1e9]).unwrap().name, "km²");
        assert!(AreaUnit::chosen("km2", "pixels", [1.0]).is_err());
        assert!(AreaUnit::chosen("acre", "m²", [1.0]).is_err());
    }

    #[test]
    fn dates_and_command_lines() {
        assert_eq!(iso_date(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_date(1_795_000_000), "2026-11-18T11:06:40Z");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("gaussian:2.5"), "gaussian:2.5");
        assert_eq!(quote("it's"), "'it'\\''s'");
    }
}
