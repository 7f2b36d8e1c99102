//! Serde of a typed value by its text (`Display` to write, `FromStr` to
//! read), for the plan's options: plan.json keeps the words a user types
//! (`"same"`, `"gpu"`, `"deflate"`, `"COG"`), so a plan written before
//! these fields were typed reads as before, and a word no parser knows
//! fails the plan's load with the parser's own message.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serializer};
use std::fmt::Display;
use std::str::FromStr;

pub fn serialize<T: Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
where
    T: FromStr,
    T::Err: Display,
    D: Deserializer<'de>,
{
    String::deserialize(d)?.parse().map_err(D::Error::custom)
}

/// The same for an optional value (`null` or absent: `None`).
pub mod option {
    use super::*;

    pub fn serialize<T: Display, S: Serializer>(
        value: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => s.collect_str(v),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        Option::<String>::deserialize(d)?
            .map(|t| t.parse().map_err(D::Error::custom))
            .transpose()
    }
}

/// The same for a value with a default, which `null` (or an absent field,
/// with `#[serde(default)]`) stands for: plans wrote `null` for an option
/// left unset before these fields were typed, and still do.
pub mod or_default {
    use super::*;

    pub fn serialize<T, S>(value: &T, s: S) -> Result<S::Ok, S::Error>
    where
        T: Display + Default + PartialEq,
        S: Serializer,
    {
        if *value == T::default() {
            return s.serialize_none();
        }
        s.collect_str(value)
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: FromStr + Default,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        Ok(super::option::deserialize(d)?.unwrap_or_default())
    }
}

/// Class codes as `--keep` and `--no-vote` take them (`80,190`); none is
/// `null`, as older plans wrote it, and `null`, an absent field or an empty
/// text read as none. A code that is not one fails the load with the
/// option's own message.
pub mod codes {
    use super::*;
    use mapfilter_core::error::Setting;
    use mapfilter_core::method::policy::parse_codes;

    pub fn serialize<S: Serializer>(codes: &[u16], s: S) -> Result<S::Ok, S::Error> {
        if codes.is_empty() {
            return s.serialize_none();
        }
        let text: Vec<String> = codes.iter().map(u16::to_string).collect();
        s.collect_str(&text.join(","))
    }

    fn read<'de, D: Deserializer<'de>>(d: D, option: Setting) -> Result<Vec<u16>, D::Error> {
        let text = Option::<String>::deserialize(d)?.unwrap_or_default();
        parse_codes(option, &text).map_err(D::Error::custom)
    }

    pub fn keep<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u16>, D::Error> {
        read(d, Setting::Keep)
    }

    pub fn no_vote<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u16>, D::Error> {
        read(d, Setting::NoVote)
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use tiles::Border;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Typed {
        #[serde(with = "super")]
        border: Border,
        #[serde(default, with = "super::option")]
        other: Option<Border>,
    }

    #[test]
    fn values_travel_as_their_words() {
        let typed = Typed {
            border: Border::Valid,
            other: None,
        };
        let text = serde_json::to_string(&typed).unwrap();
        assert_eq!(text, r#"{"border":"valid","other":null}"#);
        assert_eq!(serde_json::from_str::<Typed>(&text).unwrap(), typed);
        let older: Typed = serde_json::from_str(r#"{"border":"same"}"#).unwrap();
        assert_eq!(older.border, Border::Same);
        assert_eq!(older.other, None);
        let bad = serde_json::from_str::<Typed>(r#"{"border":"wide"}"#).unwrap_err();
        assert!(
            bad.to_string()
                .contains("border 'wide' is neither same nor valid"),
            "{bad}"
        );
    }
}
