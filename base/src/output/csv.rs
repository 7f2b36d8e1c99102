//! CSV text for the tables mapfilter writes (sweep results, histograms):
//! one header line, then one line per record, quoted by the `csv` crate
//! wherever a field needs it, so a method name or path with a comma or a
//! quote stays one column in every spreadsheet.

use crate::error::{Error, Result};

/// The header and the rows as CSV text (`\n` line ends, quotes only where
/// needed, the header written as is).
pub fn table<R, F>(header: &[&str], rows: impl IntoIterator<Item = R>) -> Result<String>
where
    R: IntoIterator<Item = F>,
    F: AsRef<[u8]>,
{
    let fail = |e: csv::Error| Error::io(format!("cannot write the CSV table: {e}"));
    let mut out = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    out.write_record(header).map_err(fail)?;
    for row in rows {
        out.write_record(row).map_err(fail)?;
    }
    let bytes = out
        .into_inner()
        .map_err(|e| Error::io(format!("cannot write the CSV table: {e}")))?;
    String::from_utf8(bytes).map_err(|e| Error::io(format!("the CSV table is not UTF-8: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_fields_that_need_it() {
        let text = table(
            &["a", "b", "c"],
            [["x", "naive, host", ""], ["say \"hi\"", "2", "line\nbreak"]],
        )
        .unwrap();
        assert_eq!(
            text,
            "a,b,c\nx,\"naive, host\",\n\"say \"\"hi\"\"\",2,\"line\nbreak\"\n"
        );
    }
}
