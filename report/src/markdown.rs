//! Text from data (category names, file paths, method names) made safe to
//! put into a Markdown report: it shows as the text it is, never as table
//! cells, markup or HTML (a category named `a|b` or `<script>` stays one
//! cell of plain text), and never as terminal control sequences.

use mapfilter_core::output::text::printable;
use std::fmt::Write;

/// `text` as literal Markdown inline text: punctuation Markdown acts on is
/// backslash-escaped, `<`, `>` and `&` become entities (raw HTML is
/// allowed in Markdown), line breaks and control characters are shown
/// escaped.
pub fn text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            // What acts inline, in a table cell or a list item's text.
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {
                // `\n` shown as such: its backslash escaped too.
                for e in c.escape_default() {
                    if e == '\\' {
                        out.push('\\');
                    }
                    out.push(e);
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` as a Markdown code span: fenced by more backticks than it holds
/// in a row (so a backtick in a path cannot end it), line breaks and
/// control characters shown escaped, and `|` escaped so that a span in a
/// table stays in its cell.
pub fn code(text: &str) -> String {
    let text = printable(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    let mut out = String::new();
    let _ = write!(out, "{fence}{pad}{}{pad}{fence}", text.replace('|', "\\|"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_plain_text_in_one_cell() {
        assert_eq!(text("a|b"), "a\\|b");
        assert_eq!(
            text("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(text("R&D *x* 1.5"), "R&amp;D \\*x\\* 1.5");
        assert_eq!(text("a\nb\x1b[31m"), r"a\\nb\\u{1b}\[31m");
        assert_eq!(code("p`q"), "``p`q``");
        assert_eq!(code("`q"), "`` `q ``");
        assert_eq!(code("a|b"), "`a\\|b`");
    }
}
