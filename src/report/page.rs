//! The self-contained HTML page shared by every report: one file with inline
//! CSS, inline SVG plots and PNG pictures as `data:` URIs, no scripts and no
//! external resources, so it opens anywhere and can be mailed on.

use base64::Engine;

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A PNG as a `data:` URI.
pub fn png_data_uri(png: &[u8]) -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

/// An `<img>` of a PNG picture, scaled up without smoothing (class maps).
pub fn img(png: &[u8], alt: &str) -> String {
    format!(
        "<img class=\"map\" alt=\"{}\" src=\"{}\">",
        escape(alt),
        png_data_uri(png)
    )
}

/// Wraps an SVG document from [`super::plot`] for inline use (drops any XML prolog).
pub fn inline_svg(svg: &str) -> String {
    let start = svg.find("<svg").unwrap_or(0);
    format!("<div class=\"plot\">{}</div>", &svg[start..])
}

/// A table with a header row; cells are raw HTML (escape text first).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><thead><tr>");
    for h in header {
        s.push_str(&format!("<th>{}</th>", escape(h)));
    }
    s.push_str("</tr></thead><tbody>");
    for row in rows {
        s.push_str("<tr>");
        for cell in row {
            s.push_str(&format!("<td>{cell}</td>"));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    s
}

/// A colour swatch for legends.
pub fn swatch(hex: &str) -> String {
    format!("<span class=\"swatch\" style=\"background:{hex}\"></span>")
}

/// The whole page around `body` (raw HTML).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"mapfilter {version}\">\n\
         <title>{title}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{title}</h1>\n{body}\n\
         <footer>Written by mapfilter {version}.</footer>\n</body>\n</html>\n",
        title = escape(title),
        version = env!("CARGO_PKG_VERSION"),
    )
}

const CSS: &str = "
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
/* Figures never break across lines: a wrapped percentage reads as two numbers. */
td:not(:first-child){white-space:nowrap}
/* Settings are words (a kernel's conversion from metres): they wrap, left-aligned. */
table.settings td{white-space:normal;text-align:left;max-width:48em}table.settings td:first-child{white-space:nowrap}
table{max-width:100%;overflow-x:auto;display:block}
.maps{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0;flex:1 1 300px;max-width:520px}
figcaption{font-size:.9em;color:#555}
img.map{width:100%;image-rendering:pixelated;border:1px solid #ccc;
 background:repeating-conic-gradient(#eee 0% 25%,#fff 0% 50%) 0 0/16px 16px}
.plot svg{max-width:100%;height:auto}
.plots{display:flex;flex-wrap:wrap;gap:1em}
.swatch{display:inline-block;width:.9em;height:.9em;border:1px solid #888;vertical-align:middle;margin-right:.3em}
.legend span.item{margin-right:1em;white-space:nowrap;font-size:.9em}
.headline{font-size:1.1em}
footer{margin-top:3em;font-size:.8em;color:#777}
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_wraps() {
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
        assert_eq!(png_data_uri(b"abc"), "data:image/png;base64,YWJj");
        assert_eq!(
            inline_svg("<?xml version=\"1.0\"?><svg x=\"1\"></svg>"),
            "<div class=\"plot\"><svg x=\"1\"></svg></div>"
        );
        let p = page("A<B", "<p>x</p>");
        assert!(p.contains("<title>A&lt;B</title>") && p.contains("<p>x</p>"));
        let t = table(&["a"], &[vec!["1".into()]]);
        assert_eq!(
            t,
            "<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>"
        );
    }
}
