//! PNG plots of a run: residual history, and centreline profiles against reference data. The
//! font is embedded (DejaVu Sans), so plots need no system fonts. Plots are drawn in memory
//! and written atomically ([`ferroflow_io::file`]).
use ferroflow_cases::reference::Profile;
use ferroflow_io::file;
use ferroflow_solver::simulation::HistoryRow;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::error::Error;
use std::io;
use std::path::Path;
use std::sync::Once;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Where a plot is drawn: an RGB image in memory.
type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

const FONT: &str = "sans-serif";

/// Line colours, one per equation (distinguishable, also in greyscale print).
const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font shipped by the `dejavu` crate.
        let _ = register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

/// Writes the relative residual of each equation against the iteration, log scale, with the
/// tolerance as a dashed line.
pub fn residuals(
    path: &Path,
    names: &[&str],
    history: &[HistoryRow],
    tolerance: f64,
) -> io::Result<()> {
    save_png(path, (900, 560), |root| {
        draw_residuals(root, names, history, tolerance)
    })
}

/// Draws a `size` image with `draw` and writes it to `path` as PNG.
fn save_png(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(Area) -> Result<()>,
) -> io::Result<()> {
    register_fonts();
    let mut rgb = vec![0; 3 * size.0 as usize * size.1 as usize];
    draw(BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area())
        .map_err(|e| io::Error::other(e.to_string()))?;
    file::write_with(path, |w| {
        let mut png = png::Encoder::new(w, size.0, size.1);
        png.set_color(png::ColorType::Rgb);
        png.set_depth(png::BitDepth::Eight);
        png.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        let mut png = png.write_header()?;
        png.write_image_data(&rgb)?;
        Ok(png.finish()?)
    })
}

fn draw_residuals(root: Area, names: &[&str], history: &[HistoryRow], tol: f64) -> Result<()> {
    root.fill(&WHITE)?;
    let last = history.last().map_or(1, |h| h.iteration).max(1) as f64;
    let values = history
        .iter()
        .flat_map(|h| h.relative.iter().copied())
        .filter(|r| *r > 0.0 && r.is_finite());
    let (lo, hi) = values.fold((tol, 1.0f64), |(lo, hi), r| (lo.min(r), hi.max(r)));
    let (lo, hi) = (lo / 3.0, hi * 3.0);
    let mut chart = ChartBuilder::on(&root)
        .caption("Residual history", (FONT, 24))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(0.0..last, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc("residual / first residual")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0e}"))
        .label_style((FONT, 15))
        .draw()?;
    for (e, name) in names.iter().enumerate() {
        let color = COLORS[e % COLORS.len()];
        let points = history
            .iter()
            .map(|h| (h.iteration as f64, h.relative[e].clamp(lo, hi)));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart
        .draw_series(DashedLineSeries::new(
            [(0.0, tol), (last, tol)],
            8,
            6,
            BLACK.into(),
        ))?
        .label("tolerance")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));
    chart
        .configure_series_labels()
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Writes the centreline profiles, u(y) at x = 0.5 and v(x) at y = 0.5, with the reference
/// data as circles where there are some.
pub fn centrelines(
    path: &Path,
    title: &str,
    u: &[(f64, f64)],
    v: &[(f64, f64)],
    reference: Option<&(Profile, Profile)>,
) -> io::Result<()> {
    save_png(path, (1100, 540), |root| {
        draw_centrelines(root, title, u, v, reference)
    })
}

fn draw_centrelines(
    root: Area,
    title: &str,
    u: &[(f64, f64)],
    v: &[(f64, f64)],
    reference: Option<&(Profile, Profile)>,
) -> Result<()> {
    root.fill(&WHITE)?;
    let root = root.titled(title, (FONT, 24))?;
    let (left, right) = root.split_horizontally(550);
    // u(y) is drawn with y upwards, as the profile lies in the cavity.
    let swap = |p: &[(f64, f64)]| p.iter().map(|&(y, u)| (u, y)).collect::<Vec<_>>();
    let source = reference.map(|(r, _)| r.source);
    panel(
        &left,
        ("u", "y", SeriesLabelPosition::LowerRight),
        &swap(u),
        reference.map(|(r, _)| swap(&r.points)).as_deref(),
        source,
    )?;
    panel(
        &right,
        ("x", "v", SeriesLabelPosition::LowerLeft),
        v,
        reference.map(|(_, r)| r.points.as_slice()),
        source,
    )?;
    root.present()?;
    Ok(())
}

/// One profile panel: the computed line and, if any, the reference points.
fn panel(
    area: &Area,
    (x_desc, y_desc, legend): (&str, &str, SeriesLabelPosition),
    computed: &[(f64, f64)],
    reference: Option<&[(f64, f64)]>,
    source: Option<&str>,
) -> Result<()> {
    let all = || computed.iter().chain(reference.unwrap_or_default());
    let range = |f: fn(&(f64, f64)) -> f64| {
        let (lo, hi) = all()
            .map(f)
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
        let pad = 0.05 * (hi - lo).max(1e-12);
        lo - pad..hi + pad
    };
    let mut chart = ChartBuilder::on(area)
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(range(|p| p.0), range(|p| p.1))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .label_style((FONT, 15))
        .draw()?;
    let blue = BLUE.stroke_width(2);
    chart
        .draw_series(LineSeries::new(computed.iter().copied(), blue))?
        .label("ferroflow")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], blue));
    if let (Some(points), Some(source)) = (reference, source) {
        let red = RED.stroke_width(2);
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, red)))?
            .label(source)
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, red));
    }
    chart
        .configure_series_labels()
        .position(legend)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
