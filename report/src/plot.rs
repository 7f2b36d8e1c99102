//! Plots for reports as inline SVG (plotters' SVG backend): line charts with
//! log₂/log₁₀ axes like the thesis' figures (with error bars where a series
//! has intervals), and bar charts per class.
//!
//! Log axes are drawn on the logarithm of the values with labels at whole
//! powers (2, 4, 8, ...), so ticks land where the thesis puts them.

use mapfilter_core::error::{Error, Result};
use plotters::prelude::*;

/// Plot size in SVG pixels.
const SIZE: (u32, u32) = (640, 400);

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Base-2 logarithmic: ticks at 1, 2, 4, 8, ...
    Log2,
    /// Base-10 logarithmic: ticks at 0.01, 0.1, 1, 10, ...
    Log10,
}

impl Scale {
    fn forward(self, v: f64) -> Option<f64> {
        match self {
            Scale::Linear => v.is_finite().then_some(v),
            Scale::Log2 => (v > 0.0 && v.is_finite()).then(|| v.log2()),
            Scale::Log10 => (v > 0.0 && v.is_finite()).then(|| v.log10()),
        }
    }

    /// Axis range around transformed values `lo..hi`.
    fn range(self, lo: f64, hi: f64) -> (f64, f64) {
        match self {
            Scale::Linear => {
                let pad = if hi > lo {
                    0.05 * (hi - lo)
                } else {
                    lo.abs().max(1.0) * 0.05
                };
                (lo - pad, hi + pad)
            }
            _ => {
                let (a, b) = (lo.floor(), hi.ceil());
                if b > a { (a, b) } else { (a - 1.0, b + 1.0) }
            }
        }
    }

    /// The tick label of transformed value `v` on an axis spanning `span`.
    fn label(self, v: f64, span: f64) -> String {
        let power = |base: f64| {
            if (v - v.round()).abs() > 1e-6 {
                String::new()
            } else {
                format_number(base.powf(v.round()))
            }
        };
        match self {
            Scale::Linear => linear_label(v, span),
            Scale::Log2 => power(2.0),
            Scale::Log10 => power(10.0),
        }
    }

    fn ticks(self, (lo, hi): (f64, f64)) -> usize {
        match self {
            Scale::Linear => 8,
            _ => ((hi - lo).round() as usize + 1).clamp(2, 16),
        }
    }
}

/// A linear tick label with as many decimals as ticks `span / 8` apart need.
fn linear_label(v: f64, span: f64) -> String {
    let step = span / 8.0;
    if step.is_nan() || step <= 0.0 {
        return format_number(v);
    }
    if v.abs() >= 1e5 {
        // As many significant digits as neighbouring ticks need to differ
        // (2.0e5, 2.5e5 rather than 2e5 twice).
        let digits = (v.abs().log10().floor() - step.log10().floor()).clamp(0.0, 6.0) as usize;
        return format!("{v:.digits$e}");
    }
    let digits = (-step.log10()).ceil().clamp(0.0, 9.0) as usize;
    format!("{v:.digits$}")
}

/// A short rendering of an axis value.
pub fn format_number(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e5 || v.abs() < 1e-3 {
        format!("{v:.0e}")
    } else if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// One line of a line chart.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// Each point's interval `(low, high)` drawn as an error bar (e.g. a
    /// 95 % confidence interval); empty: none.
    pub intervals: Vec<(f64, f64)>,
    /// The line's colour (a class's, say); `None`: the chart's next one.
    pub color: Option<(u8, u8, u8)>,
    pub mark: Mark,
    /// Left out of the legend (a line that another series names).
    pub no_legend: bool,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mark {
    /// A line through dots.
    #[default]
    LineAndPoints,
    /// Dots only (estimates with their error bars).
    Points,
    /// A thin line without dots (a reference level).
    ThinLine,
}

/// A line chart with one line per series.
#[derive(Clone, Debug)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    pub series: Vec<Series>,
    /// Fixed y range (in values, before the scale); from the data when `None`.
    pub y_range: Option<(f64, f64)>,
    /// Legend in the lower left corner instead of the upper left (lines near the top).
    pub legend_at_bottom: bool,
}

/// The title's font size: 18 px, smaller for a title that would not fit
/// the plot's width at 18 px (about 0.53 em per character).
fn caption_size(title: &str) -> u32 {
    let chars = title.chars().count().max(1) as f64;
    let fits = f64::from(SIZE.0 - 24) / (0.53 * chars);
    fits.clamp(11.0, 18.0) as u32
}

fn draw_error<E: std::fmt::Debug>(e: E) -> Error {
    Error::internal(format!("cannot draw a plot: {e:?}"))
}

/// A chart's series in transformed (axis) values, with their colours,
/// error bars `(x, low, high)` and the axis ranges they need.
struct Prepared {
    colors: Vec<RGBAColor>,
    series: Vec<(String, Vec<(f64, f64)>)>,
    bars: Vec<Vec<(f64, f64, f64)>>,
    xr: (f64, f64),
    yr: (f64, f64),
}

fn prepare(chart: &LineChart) -> Prepared {
    let colors: Vec<RGBAColor> = chart
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| match s.color {
            Some((r, g, b)) => RGBColor(r, g, b).to_rgba(),
            None => Palette99::pick(i).to_rgba(),
        })
        .collect();
    let series: Vec<(String, Vec<(f64, f64)>)> = chart
        .series
        .iter()
        .map(|s| {
            let pts = s
                .points
                .iter()
                .filter_map(|&(x, y)| Some((chart.x_scale.forward(x)?, chart.y_scale.forward(y)?)))
                .collect();
            (s.label.clone(), pts)
        })
        .collect();
    // Error bars as (x, low, high) in transformed values, per series.
    let bars: Vec<Vec<(f64, f64, f64)>> = chart
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .zip(&s.intervals)
                .filter_map(|(&(x, _), &(lo, hi))| {
                    let f = |v| chart.y_scale.forward(v);
                    Some((chart.x_scale.forward(x)?, f(lo)?, f(hi)?))
                })
                .collect()
        })
        .collect();
    let ends: Vec<(f64, f64)> = bars
        .iter()
        .flatten()
        .flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)])
        .collect();
    let all = || {
        series
            .iter()
            .flat_map(|(_, p)| p.iter().copied())
            .chain(ends.iter().copied())
    };
    let bounds = |f: fn((f64, f64)) -> f64| {
        all().map(f).fold(None, |acc: Option<(f64, f64)>, v| {
            Some(acc.map_or((v, v), |(a, b)| (a.min(v), b.max(v))))
        })
    };
    let (x0, x1) = bounds(|p| p.0).unwrap_or((0.0, 1.0));
    let (y0, y1) = bounds(|p| p.1).unwrap_or((0.0, 1.0));
    let xr = chart.x_scale.range(x0, x1);
    let yr = match chart.y_range {
        Some((a, b)) => match (chart.y_scale.forward(a), chart.y_scale.forward(b)) {
            (Some(a), Some(b)) if b > a => (a, b),
            _ => chart.y_scale.range(y0, y1),
        },
        None => chart.y_scale.range(y0, y1),
    };

    Prepared {
        colors,
        series,
        bars,
        xr,
        yr,
    }
}

/// Draws error bars `(x, low, high)`: a vertical line with short caps, in
/// pixels so the caps keep their width on any axis.
fn draw_bars<DB: DrawingBackend>(
    ctx: &ChartContext<
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    root: &DrawingArea<DB, plotters::coord::Shift>,
    bars: &[(f64, f64, f64)],
    color: RGBAColor,
) -> Result<()> {
    for &(x, lo, hi) in bars {
        let (px, top) = ctx.backend_coord(&(x, hi));
        let (_, bottom) = ctx.backend_coord(&(x, lo));
        for line in [
            [(px, top), (px, bottom)],
            [(px - 4, top), (px + 4, top)],
            [(px - 4, bottom), (px + 4, bottom)],
        ] {
            root.draw(&PathElement::new(line, color.stroke_width(1)))
                .map_err(draw_error)?;
        }
    }
    Ok(())
}

/// Renders `chart` as an SVG document.
pub fn line_chart(chart: &LineChart) -> Result<String> {
    let Prepared {
        colors,
        series,
        bars,
        xr,
        yr,
    } = prepare(chart);
    let (xs, ys) = (chart.x_scale, chart.y_scale);
    // Few x values (kernel sides, ranks, terms, sizes): ticks at the data
    // values themselves, so 3/5/7 are labelled 3/5/7 and integer axes get no
    // 1.5; else the scale's own ticks.
    let x_values = x_data_values(chart);
    let data_ticks = !x_values.is_empty() && x_values.len() <= 16;
    let y_area = y_label_area(ys, yr);
    let draw = |yr: (f64, f64)| -> Result<(String, f64)> {
        let mut svg = String::new();
        let mut extend = 0.0;
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            root.fill(&WHITE).map_err(draw_error)?;
            let mut ctx = ChartBuilder::on(&root)
                .caption(&chart.title, ("sans-serif", caption_size(&chart.title)))
                .margin(12)
                .x_label_area_size(42)
                .y_label_area_size(y_area)
                .build_cartesian_2d(xr.0..xr.1, yr.0..yr.1)
                .map_err(draw_error)?;
            ctx.configure_mesh()
                .label_style(("sans-serif", 15))
                .axis_desc_style(("sans-serif", 16))
                .x_desc(&chart.x_label)
                .y_desc(&chart.y_label)
                .x_labels(if data_ticks { 0 } else { xs.ticks(xr) })
                .y_labels(ys.ticks(yr))
                .x_label_formatter(&|v| xs.label(*v, xr.1 - xr.0))
                .y_label_formatter(&|v| ys.label(*v, yr.1 - yr.0))
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .map_err(draw_error)?;
            for (i, (label, pts)) in series.iter().enumerate() {
                let color = colors[i];
                let (mark, in_legend) = (chart.series[i].mark, !chart.series[i].no_legend);
                let width = if mark == Mark::ThinLine { 1 } else { 2 };
                let line = if mark == Mark::Points {
                    Vec::new()
                } else {
                    pts.clone()
                };
                let drawn = ctx
                    .draw_series(LineSeries::new(line, color.stroke_width(width)))
                    .map_err(draw_error)?;
                if in_legend {
                    drawn
                        .label(label)
                        .legend(move |(x, y)| -> DynElement<_, _> {
                            // A square for dots: a circle would read as data.
                            if mark == Mark::Points {
                                Rectangle::new([(x + 6, y - 3), (x + 12, y + 3)], color.filled())
                                    .into_dyn()
                            } else {
                                PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2))
                                    .into_dyn()
                            }
                        });
                }
                if mark != Mark::ThinLine {
                    ctx.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(draw_error)?;
                }
                draw_bars(&ctx, &root, &bars[i], color)?;
            }
            if data_ticks {
                draw_data_ticks(&ctx, &root, &x_values, yr.0)?;
            }
            if chart.series.iter().any(|s| !s.no_legend) {
                let named: Vec<&str> = series
                    .iter()
                    .zip(&chart.series)
                    .filter(|(_, s)| !s.no_legend)
                    .map(|((l, _), _)| l.as_str())
                    .collect();
                let (position, covered, band) =
                    legend_corner(&ctx, &series, &named, chart.legend_at_bottom);
                if covered > 0 {
                    // Negative: the legend sits at the bottom.
                    extend = match position {
                        SeriesLabelPosition::LowerLeft | SeriesLabelPosition::LowerRight => -band,
                        _ => band,
                    };
                }
                ctx.configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK.mix(0.3))
                    .position(position)
                    .draw()
                    .map_err(draw_error)?;
            }
            root.present().map_err(draw_error)?;
        }
        Ok((svg, extend))
    };
    let (svg, extend) = draw(yr)?;
    let band = extend.abs();
    if band > 0.0 && band < 0.6 {
        // No corner is free: move the end of the y axis the legend is at
        // out by the legend's height, so that the band it takes holds no
        // data.
        let span = (yr.1 - yr.0) / (1.0 - band);
        let moved = if extend > 0.0 {
            (yr.0, yr.0 + span)
        } else {
            (yr.1 - span, yr.1)
        };
        return Ok(draw(moved)?.0);
    }
    Ok(svg)
}

/// The distinct x values of `chart`'s points with their scale coordinates,
/// in order: the ticks when there are few of them.
fn x_data_values(chart: &LineChart) -> Vec<(f64, f64)> {
    let mut x_values: Vec<(f64, f64)> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter_map(|x| Some((x, chart.x_scale.forward(x)?)))
        .collect();
    x_values.sort_by(|a, b| a.1.total_cmp(&b.1));
    x_values.dedup_by(|a, b| (a.1 - b.1).abs() < 1e-9);
    x_values
}

/// The y label area's width: the widest tick label of `ys` over `yr`
/// beside the axis title.
fn y_label_area(ys: Scale, yr: (f64, f64)) -> u32 {
    let widest = (0..=8)
        .map(|i| {
            ys.label(yr.0 + (yr.1 - yr.0) * i as f64 / 8.0, yr.1 - yr.0)
                .chars()
                .count()
        })
        .max()
        .unwrap_or(1);
    (widest as u32 * 9 + 40).max(64)
}

/// A tick and its label under the x axis (at `y0`) at each data value.
fn draw_data_ticks<DB: DrawingBackend>(
    ctx: &ChartContext<
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    root: &DrawingArea<DB, plotters::coord::Shift>,
    x_values: &[(f64, f64)],
    y0: f64,
) -> Result<()> {
    let font = TextStyle::from(("sans-serif", 15).into_font()).pos(
        plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Top,
        ),
    );
    for &(x, tx) in x_values {
        let (px, py) = ctx.backend_coord(&(tx, y0));
        root.draw(&PathElement::new([(px, py), (px, py + 5)], BLACK))
            .map_err(draw_error)?;
        root.draw(&Text::new(format_number(x), (px, py + 7), font.clone()))
            .map_err(draw_error)?;
    }
    Ok(())
}

/// The corner of the plotting area where the legend covers the fewest
/// points and line segments (lines sampled along their length); the first
/// of equals in the preferred order (upper left, or lower left with
/// `bottom_first`).
fn legend_corner<DB: DrawingBackend>(
    ctx: &ChartContext<
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    series: &[(String, Vec<(f64, f64)>)],
    named: &[&str],
    bottom_first: bool,
) -> (SeriesLabelPosition, usize, f64) {
    let (xr, yr) = ctx.plotting_area().get_pixel_range();
    let longest = named.iter().map(|l| l.chars().count()).max().unwrap_or(0) as i32;
    // plotters' legend: 10 px from the corner, rows of about 20 px.
    let (w, h) = (longest * 9 + 50, named.len() as i32 * 20 + 16);
    let boxes = [
        (xr.start, yr.start),
        (xr.end - w, yr.start),
        (xr.start, yr.end - h),
        (xr.end - w, yr.end - h),
    ];
    let mut samples = Vec::new();
    for (_, pts) in series {
        for pair in pts.windows(2) {
            for k in 0..=16 {
                let t = k as f64 / 16.0;
                samples.push(ctx.backend_coord(&(
                    pair[0].0 + t * (pair[1].0 - pair[0].0),
                    pair[0].1 + t * (pair[1].1 - pair[0].1),
                )));
            }
        }
        samples.extend(pts.iter().map(|p| ctx.backend_coord(p)));
    }
    let covered = |x0: i32, y0: i32| {
        samples
            .iter()
            .filter(|&&(x, y)| x >= x0 - 4 && x <= x0 + w + 4 && y >= y0 - 4 && y <= y0 + h + 4)
            .count()
    };
    let mut order: Vec<usize> = vec![0, 1, 2, 3];
    if bottom_first {
        order = vec![2, 3, 0, 1];
    }
    let best = order
        .into_iter()
        .min_by_key(|&i| covered(boxes[i].0, boxes[i].1))
        .unwrap_or(0);
    let position = match best {
        0 => SeriesLabelPosition::UpperLeft,
        1 => SeriesLabelPosition::UpperRight,
        2 => SeriesLabelPosition::LowerLeft,
        _ => SeriesLabelPosition::LowerRight,
    };
    // The share of the plot's height the legend takes, with a margin.
    let band = f64::from(h + 14) / f64::from((yr.end - yr.start).max(1));
    (position, covered(boxes[best].0, boxes[best].1), band)
}

/// The y range of a bar chart of `values` from zero, or with `zoom`, where
/// every bar is positive and they differ by less than half the tallest
/// (IoU of 0.97-0.99, say), the data's own range: bars from zero would
/// hide the differences. The second value says whether it zoomed.
fn bar_range(values: &[f64], zoom: bool) -> ((f64, f64), bool) {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if zoom && lo.is_finite() && lo > 0.0 && hi - lo < 0.5 * hi {
        let span = (hi - lo).max(hi * 1e-3);
        return (((lo - 0.25 * span).max(0.0), hi + 0.1 * span), true);
    }
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    (
        Scale::Linear.range(lo, if hi > lo { hi } else { lo + 1.0 }),
        false,
    )
}

/// Renders one bar per label (e.g. per class) as an SVG document; `colors`
/// gives each bar's `(r, g, b)`. With `zoom` the axis may start at the
/// data ([`bar_range`]); the title then says from where.
pub fn bar_chart(
    title: &str,
    y_label: &str,
    labels: &[String],
    values: &[f64],
    colors: &[(u8, u8, u8)],
    zoom: bool,
) -> Result<String> {
    let n = labels.len().max(1);
    let ((y0, y1), zoomed) = bar_range(values, zoom);
    let base = if zoomed { y0 } else { 0.0 };
    let title = if zoomed {
        format!(
            "{title} (axis from {}, zoomed to the data)",
            linear_label(y0, y1 - y0)
        )
    } else {
        title.to_string()
    };
    // Room for the widest tick label beside the axis title (a zoomed axis
    // has long ones: 0.9995).
    let widest = (0..=10)
        .map(|i| linear_label(y0 + (y1 - y0) * f64::from(i) / 10.0, y1 - y0).len())
        .max()
        .unwrap_or(1);
    let y_area = (widest as u32 * 9 + 40).max(64);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let mut ctx = ChartBuilder::on(&root)
            .caption(&title, ("sans-serif", caption_size(&title)))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(y_area)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, y0..y1)
            .map_err(draw_error)?;
        let label_of = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        ctx.configure_mesh()
            .disable_x_mesh()
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .x_labels(n.min(40) + 1)
            .x_label_formatter(&label_of)
            .y_desc(y_label)
            .y_label_formatter(&|v| linear_label(*v, y1 - y0))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(draw_error)?;
        ctx.draw_series(values.iter().enumerate().map(|(i, &v)| {
            let (r, g, b) = colors.get(i).copied().unwrap_or((70, 130, 180));
            let x = i as f64;
            Rectangle::new(
                [(x - 0.35, base), (x + 0.35, v)],
                RGBColor(r, g, b).filled(),
            )
        }))
        .map_err(draw_error)?;
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether an SVG `<text>` element holds exactly `t`.
    fn has_text(svg: &str, t: &str) -> bool {
        svg.contains(&format!(">\n{t}\n</text>"))
    }

    #[test]
    fn log2_axis_labels_whole_powers() {
        assert_eq!(Scale::Log2.label(8.0, 4.0), "256");
        assert_eq!(Scale::Log2.label(8.5, 4.0), "");
        assert_eq!(Scale::Log10.label(-2.0, 3.0), "0.01");
        // Linear labels get the decimals their spacing needs.
        assert_eq!(Scale::Linear.label(0.0014, 0.0008), "0.0014");
        assert_eq!(Scale::Linear.label(96.0, 8.0), "96");
        assert_eq!(Scale::Log2.range(8.0, 12.0), (8.0, 12.0));
        assert_eq!(Scale::Log2.range(1.58, 6.99), (1.0, 7.0));
        assert_eq!(format_number(1234.5), "1234.5");
        assert_eq!(format_number(4096.0), "4096");
        assert_eq!(Scale::Linear.label(250_000.0, 400_000.0), "2.5e5");
        assert_eq!(Scale::Linear.label(200_000.0, 400_000.0), "2.0e5");
    }

    #[test]
    fn line_chart_draws_every_series() {
        let chart = LineChart {
            title: "time vs size".into(),
            x_label: "image side".into(),
            y_label: "s".into(),
            x_scale: Scale::Log2,
            y_scale: Scale::Log10,
            series: vec![
                Series {
                    label: "naive@host".into(),
                    points: vec![(256.0, 0.01), (512.0, 0.04), (1024.0, 0.16)],
                    ..Default::default()
                },
                Series {
                    label: "svd@host".into(),
                    points: vec![(256.0, 0.02), (512.0, 0.03), (1024.0, 0.0)],
                    ..Default::default()
                },
            ],
            y_range: None,
            legend_at_bottom: false,
        };
        let svg = line_chart(&chart).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..60]);
        assert!(svg.contains("naive@host") && svg.contains("svd@host"));
        assert!(has_text(&svg, "1024"), "x axis labelled with powers of two");
        assert!(svg.matches("<circle").count() >= 5);
    }

    #[test]
    fn intervals_are_drawn_as_error_bars_inside_the_axis() {
        let chart = LineChart {
            title: "overall accuracy".into(),
            x_label: "σ".into(),
            y_label: "%".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: vec![Series {
                label: "naive@host".into(),
                points: vec![(1.0, 90.0), (2.0, 92.0)],
                intervals: vec![(85.0, 95.0), (80.0, 99.0)],
                ..Default::default()
            }],
            y_range: None,
            legend_at_bottom: false,
        };
        let svg = line_chart(&chart).unwrap();
        // On the same axes, three strokes per bar.
        let fixed = LineChart {
            y_range: Some((70.0, 100.0)),
            ..chart.clone()
        };
        let plain = LineChart {
            series: vec![Series {
                intervals: Vec::new(),
                ..chart.series[0].clone()
            }],
            ..fixed.clone()
        };
        let count = |c: &LineChart| line_chart(c).unwrap().matches("<polyline").count();
        assert_eq!(count(&fixed), count(&plain) + 6);
        // From the data, the axis reaches the intervals' ends.
        assert!(
            has_text(&svg, "80") || has_text(&svg, "80.0"),
            "axis down to 80"
        );
    }

    #[test]
    fn bar_chart_labels_classes() {
        let labels: Vec<String> = ["3", "7", "11"].iter().map(|s| s.to_string()).collect();
        let svg = bar_chart("IoU", "IoU", &labels, &[0.9, 0.5, -0.1], &[], true).unwrap();
        assert!(has_text(&svg, "11"));
        assert!(svg.matches("<rect").count() >= 4);
        assert!(
            !svg.contains("zoomed"),
            "a bar below zero: the axis keeps 0"
        );
    }

    #[test]
    fn bars_all_near_one_zoom_to_the_data() {
        // Every IoU near 1: from zero the bars would look equal.
        let ((lo, hi), zoomed) = bar_range(&[0.985, 0.991, 0.999], true);
        assert!(
            zoomed && lo > 0.97 && lo < 0.985 && hi > 0.999 && hi < 1.001,
            "{lo} {hi}"
        );
        assert!(!bar_range(&[0.985, 0.991], false).1);
        assert!(!bar_range(&[0.2, 0.9], true).1);
        let labels: Vec<String> = ["1", "2", "3"].map(String::from).to_vec();
        let svg = bar_chart(
            "IoU per class",
            "IoU",
            &labels,
            &[0.985, 0.991, 0.999],
            &[],
            true,
        )
        .unwrap();
        assert!(svg.contains("zoomed to the data"), "the title says so");
    }
}
