//! The self-contained HTML page shared by every report: one file with inline
//! CSS, inline SVG plots and PNG pictures as `data:` URIs, no scripts and no
//! external resources, so it opens anywhere and can be mailed on. The markup
//! lives in `templates/` (compiled into the binary), rendered by minijinja
//! with HTML auto-escaping: the Rust side hands over text and figures only.

use base64::Engine;
use mapfilter_core::error::{Error, Result};
use minijinja::Environment;
use serde::Serialize;
use std::sync::OnceLock;

/// The templates, by name, as compiled into the binary.
const TEMPLATES: [(&str, &str); 6] = [
    ("page.html", include_str!("templates/page.html")),
    ("page.css", include_str!("templates/page.css")),
    ("macros.html", include_str!("templates/macros.html")),
    ("compare.html", include_str!("templates/compare.html")),
    ("sweep.html", include_str!("templates/sweep.html")),
    ("accuracy.html", include_str!("templates/accuracy.html")),
];

fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        // Auto-escaping follows the name: on for the .html templates.
        let mut env = Environment::new();
        // Each report ends with a line break, like every text mapfilter writes.
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .build()
            .expect("the default syntax with trailing newlines kept is valid");
        env.set_syntax(syntax);
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        for (name, source) in TEMPLATES {
            // The templates are part of the binary and checked by the tests.
            env.add_template(name, source)
                .unwrap_or_else(|e| panic!("built-in template {name}: {e}"));
        }
        env
    })
}

/// Renders template `name` (a page of its own, extending `page.html`) with
/// `context` and the page title.
pub fn render<C: Serialize>(name: &str, title: &str, context: C) -> Result<String> {
    let fail = |e: minijinja::Error| {
        Error::io(format!("cannot write the HTML report ({name}): {e:#}"))
            .hint("this is a bug in mapfilter's report templates; the JSON report has the figures")
    };
    let template = environment().get_template(name).map_err(fail)?;
    template
        .render(minijinja::context! {
            title => title,
            mapfilter_version => env!("CARGO_PKG_VERSION"),
            ..minijinja::Value::from(minijinja::value::Serde(context))
        })
        .map_err(fail)
}

/// Escapes text for HTML content and attribute values (for pages whose body
/// is still put together in Rust).
pub fn escape(text: &str) -> String {
    minijinja::HtmlEscape(text).to_string()
}

/// A PNG as a `data:` URI.
pub fn png_data_uri(png: &[u8]) -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

/// An SVG document from [`super::plot`] without its XML prolog, for inline use.
pub fn svg_element(svg: &str) -> String {
    let start = svg.find("<svg").unwrap_or(0);
    svg[start..].to_string()
}

/// A table with a header row; cells are raw HTML (escape text first). For
/// pages whose body is still put together in Rust.
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

/// The whole page around `body` (raw HTML).
pub fn page(title: &str, body: &str) -> Result<String> {
    #[derive(Serialize)]
    struct Raw<'a> {
        body: &'a str,
    }
    render("page.html", title, Raw { body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_wraps() {
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
        assert_eq!(png_data_uri(b"abc"), "data:image/png;base64,YWJj");
        assert_eq!(
            svg_element("<?xml version=\"1.0\"?><svg x=\"1\"></svg>"),
            "<svg x=\"1\"></svg>"
        );
        let p = page("A<B", "<p>x</p>").unwrap();
        assert!(p.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"), "{p}");
        assert!(p.contains("<title>A&lt;B</title>") && p.contains("<p>x</p>"));
        assert!(p.contains("<style>\nbody{font-family:") && p.ends_with("</html>\n"));
        let t = table(&["a"], &[vec!["1".into()]]);
        assert_eq!(
            t,
            "<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>"
        );
    }

    #[test]
    fn every_template_compiles() {
        for (name, _) in TEMPLATES {
            environment().get_template(name).unwrap();
        }
    }
}
