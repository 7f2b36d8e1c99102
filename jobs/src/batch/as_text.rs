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
