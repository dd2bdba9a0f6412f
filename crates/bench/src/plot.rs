//! PNG plots of benchmark results (plotters, bitmap backend).
//!
//! Text is drawn with a TrueType font loaded at run time (DejaVu Sans from
//! the system's font folders); without one the plots are skipped with a
//! message and the CSV files remain the record.

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Registers a font once; false if none could be found.
fn font_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        for p in FONT_PATHS {
            if let Ok(bytes) = std::fs::read(p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    })
}

type Root<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;
type Chart<'a, 'b> = ChartContext<
    'a,
    BitMapBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The titled plotting area all charts share.
fn frame<'a, 'b>(
    root: &'a Root<'b>,
    title: &str,
    x_max: f64,
    y_max: f64,
) -> Result<Chart<'a, 'b>, String> {
    ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(75)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(err)
}

/// Legend box, then write the file.
fn finish<'a, 'b>(root: &'a Root<'b>, chart: &mut Chart<'a, 'b>) -> Result<bool, String> {
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(true)
}

/// One line of a line chart.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

const COLORS: [RGBColor; 4] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Draws `series` as lines with markers; `Ok(false)` if no font exists.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
) -> Result<bool, String> {
    if !font_ready() {
        return Ok(false);
    }
    let x_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        .max(1.0);
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let root = BitMapBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = frame(&root, title, x_max, y_max)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(s.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        if s.points.len() <= 40 {
            chart
                .draw_series(s.points.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(err)?;
        }
    }
    finish(&root, &mut chart)
}

/// Grouped bars: one group per category, one bar per series value.
pub fn bar_chart(
    path: &Path,
    title: &str,
    y_desc: &str,
    categories: &[String],
    series_labels: &[&str],
    values: &[Vec<f64>],
) -> Result<bool, String> {
    if !font_ready() {
        return Ok(false);
    }
    let n = series_labels.len().max(1);
    let y_max = values
        .iter()
        .flatten()
        .copied()
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.15;
    let root = BitMapBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = frame(&root, title, categories.len() as f64, y_max)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(y_desc)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    // Category names above each group of bars.
    chart
        .draw_series(categories.iter().enumerate().map(|(i, c)| {
            let top = values
                .get(i)
                .map_or(0.0, |v| v.iter().copied().fold(0.0, f64::max));
            Text::new(
                c.clone(),
                (i as f64 + 0.1, top + y_max * 0.03),
                ("sans-serif", 13),
            )
        }))
        .map_err(err)?;
    let width = 0.8 / n as f64;
    for (si, label) in series_labels.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        chart
            .draw_series(values.iter().enumerate().filter_map(|(ci, v)| {
                let x0 = ci as f64 + 0.1 + si as f64 * width;
                v.get(si)
                    .map(|y| Rectangle::new([(x0, 0.0), (x0 + width * 0.95, *y)], color.filled()))
            }))
            .map_err(err)?
            .label(label.to_string())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
    }
    finish(&root, &mut chart)
}
