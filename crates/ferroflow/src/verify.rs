//! `ferroflow verify`: manufactured-solution order of accuracy, cavity benchmarks, the
//! finite-element and finite-volume solvers' reference cases.
use crate::backends::make_backend;
use crate::input::{LoadedCase, Override};
use crate::progress::Mode;
use crate::run::{execute, Job};
use crate::signals::Interrupt;
use crate::world::World;
use crate::Failure;
use clap::Subcommand;
use ferroflow_ac::{Implicit, Method, Numerics};
use ferroflow_cases::case::{
    BackendKind, BackendSpec, ConvectionKind, DifferencesKind, ParallelSpec, Precision,
};
use ferroflow_cases::fem::finest_cg_tolerance;
use ferroflow_cases::mms::{finest_orders, study, Manufactured, MmsRow};
use ferroflow_cases::summary::{self, Summary};
use ferroflow_core::decomposition::Decomposition;
use ferroflow_fem::ethier_steinman::LevelResult;
use ferroflow_fem::fractional::Controls;
use ferroflow_mesh::generate::BoxCells;
use ferroflow_solver::{Simulation, StopCriteria};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Verification studies.
#[derive(Subcommand)]
#[command(after_help = "\
Examples:
  ferroflow verify mms --dim 3 --energy      # observed order of accuracy, PASS or FAIL
  ferroflow verify cavity                    # the 2D cavities against Ghia et al. (1982)
  ferroflow verify cavity bdc2d --out verification
  ferroflow verify ethier-steinman           # edge-based finite elements on tetrahedra
  ferroflow verify sod                       # finite volumes: Sod's shock tube
  ferroflow verify vortex                    # finite volumes: the isentropic vortex's orders
  ferroflow verify flat-plate                # finite volumes: laminar skin friction (Blasius)
  ferroflow verify bump                      # finite volumes: entropy order, implicit iterations")]
pub enum VerifyCommand {
    /// Observed order of accuracy with manufactured solutions: PASS when every order on the
    /// finest pair of grids is within 2 ± 0.1 (with fourth-order differences: at least 1.9).
    #[command(after_help = "Examples:\n  ferroflow verify mms --dim 2\n  \
                            ferroflow verify mms --dim 3 --sizes 9,17,33 --backend cuda\n  \
                            ferroflow verify mms --dim 3 --energy\n  \
                            ferroflow verify mms --sizes 33,65,129,257,513 --multigrid\n\n\
                            Exit codes: 0 PASS, 1 FAIL (an order outside 2 ± 0.1) or a runtime \
                            failure, 2 bad input (an output directory that cannot be written is \
                            found before any grid is computed).")]
    Mms {
        /// 2 or 3.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(2..=3))]
        dim: u8,
        /// With the energy equation: manufactured T, coupled by buoyancy and advection,
        /// isothermal walls.
        #[arg(long)]
        energy: bool,
        /// Nodes per axis of each grid, at least two, ascending [default: 2D 17,33,65,129; 3D
        /// 9,17,33,65].
        #[arg(long, value_delimiter = ',')]
        sizes: Vec<usize>,
        /// Output directory for mms.csv.
        #[arg(long, default_value = "ferroflow-out/mms")]
        out: PathBuf,
        /// Compute backend.
        #[arg(long, value_enum, default_value = "cpu")]
        backend: BackendKind,
        /// Form of the convective terms (`numerics.convection`).
        #[arg(long, value_enum, default_value = "advective")]
        convection: ConvectionKind,
        /// Order of the differences (`numerics.differences`).
        #[arg(long, value_enum, default_value = "second-order")]
        differences: DifferencesKind,
        /// Converge each grid by multigrid cycles (the implicit method, W + FMG over every
        /// level) instead of the explicit scheme.
        #[arg(long)]
        multigrid: bool,
    },
    /// The edge-based finite-element solver (tetrahedra, fractional step) against the exact
    /// unsteady Ethier–Steinman solution on [−1, 1]³: L2 errors at the end time on each
    /// grid and the observed orders, CG iterations per step, the discrete divergence and the
    /// stabilised continuity residual after the projection; then each grid again at every
    /// --cg-tolerances value. PASS when, on the finest pair, velocity's order is at least 1.8
    /// and pressure's at least 1.0, and on every grid the continuity residual falls as the
    /// CG tolerance is tightened, down to the working precision's round-off.
    #[command(after_help = "Examples:\n  ferroflow verify ethier-steinman\n  \
                            ferroflow verify ethier-steinman --cells 8,16,32,48\n  \
                            ferroflow verify ethier-steinman --precision f32\n\n\
                            Exit codes: 0 PASS, 1 FAIL or a runtime failure, 2 bad input.")]
    EthierSteinman {
        /// Cells per axis of each grid (hexahedra split into six tetrahedra), at least two,
        /// ascending.
        #[arg(long, value_delimiter = ',', default_values_t = [4, 8, 16, 32])]
        cells: Vec<usize>,
        /// Kinematic viscosity.
        #[arg(long, default_value_t = 1.0)]
        viscosity: f64,
        /// End time.
        #[arg(long, default_value_t = 0.1)]
        end: f64,
        /// Working precision of the solver (state, operators, sums, pressure solve); the
        /// errors are computed in f64 from the state widened.
        #[arg(long, value_enum, default_value = "f64")]
        precision: Precision,
        /// Relative tolerance of the pressure solve, at least 32 ε of the precision [default:
        /// f64 1e-10, f32 1e-5].
        #[arg(long)]
        cg_tolerance: Option<f64>,
        /// Looser tolerances of the pressure solve each grid is run with again, for the
        /// divergence and the continuity residual against the tolerance [default: f64
        /// 1e-4,1e-6,1e-8; f32 1e-2,1e-3,1e-4].
        #[arg(long, value_delimiter = ',')]
        cg_tolerances: Vec<f64>,
        /// Output directory for ethier-steinman.csv and ethier-steinman-cg.csv.
        #[arg(long, default_value = "ferroflow-out/ethier-steinman")]
        out: PathBuf,
    },
    /// The edge-based finite-element solver on the lid-driven cube (n³ hexahedra of six
    /// tetrahedra, lid y = 1 moving along x), marched to steady state; its centreline
    /// profiles written as CSV and, with --reference, compared with a structured run's
    /// (its centerline_u.csv and centerline_v.csv).
    #[command(
        after_help = "Examples:\n  ferroflow run cavity3d-re100 --set 'mesh.nodes=[129,129,129]' \
                            --set numerics.multigrid=20 --out ref100\n  \
                            ferroflow verify lid-cube --cells 16,32 --reynolds 100 --reference ref100"
    )]
    LidCube {
        /// Cells per axis of each grid (even).
        #[arg(long, value_delimiter = ',', default_values_t = [16, 32])]
        cells: Vec<usize>,
        /// Reynolds number (lid speed 1, side 1).
        #[arg(long, default_value_t = 100.0)]
        reynolds: f64,
        /// Steady when the largest |Δu| / Δt and |Δp| / Δt of a step fall below this.
        #[arg(long, default_value_t = 1e-4)]
        tolerance: f64,
        /// Stop at this time if not steady by then.
        #[arg(long, default_value_t = 100.0)]
        end: f64,
        /// A structured run's output directory to compare the profiles with.
        #[arg(long)]
        reference: Option<PathBuf>,
        /// Output directory for the profiles.
        #[arg(long, default_value = "ferroflow-out/lid-cube")]
        out: PathBuf,
    },
    /// The edge-based finite-element solver on the DFG 3D-1Z benchmark (steady flow around a
    /// cylinder in a channel at Re = 20) on meshes of crates/ferroflow-mesh/geo/
    /// dfg-channel-blocks.geo (structured, mirror-symmetric about the cylinder) or
    /// dfg-channel.geo (unstructured), marched with local time steps: drag and lift
    /// coefficients (from the cylinder nodes' momentum residuals) against the reference
    /// intervals of Schäfer & Turek (1996).
    #[command(after_help = "Examples:\n  \
                      gmsh crates/ferroflow-mesh/geo/dfg-channel-blocks.geo -3 -setnumber n 6 -o p.msh\n  \
                      ferroflow mesh convert p.msh dfg.su2 --tetrahedra --mirror 0.2,0.205\n  \
                      ferroflow verify dfg dfg.su2\n  \
                      ferroflow verify dfg coarse.su2 fine.su2 --tolerance 1e-4")]
    Dfg {
        /// Meshes of the channel (`.msh` or `.su2`; patches inlet, outlet, walls, cylinder),
        /// coarse to fine.
        #[arg(required = true)]
        meshes: Vec<PathBuf>,
        /// Steady when the largest |Δu| / Δt (m/s²) and |Δp| / (ρ Δt) (m²/s³) of a step, Δt
        /// each node's own, fall below this.
        #[arg(long, default_value_t = 1e-4)]
        tolerance: f64,
        /// Stop at this time (s, by the smallest local step) if not steady by then.
        #[arg(long, default_value_t = 60.0)]
        end: f64,
    },
    /// The finite-volume solver on Sod's shock tube (n × 2 × 2 slabs of hexahedra, prisms and
    /// tetrahedra, t = 0.2): the L1 error in density against the exact solution and the
    /// conservation of mass, momentum and energy; PASS when every error is within its bound
    /// (n = 100: 0.0062 on hexahedra, 0.0089 on prisms and tetrahedra; n = 200: 0.0034 and
    /// 0.0048; other n: none) and every total is conserved to 1e-12 relative.
    #[command(after_help = "Examples:\n  ferroflow verify sod\n  \
                            ferroflow verify sod --cells 100,200,400\n\n\
                            Exit codes: 0 PASS, 1 FAIL or a runtime failure, 2 bad input.")]
    Sod {
        /// Cells along the tube of each slab.
        #[arg(long, value_delimiter = ',', default_values_t = [100, 200])]
        cells: Vec<usize>,
        /// Output directory for sod.csv.
        #[arg(long, default_value = "ferroflow-out/sod")]
        out: PathBuf,
    },
    /// The finite-volume solver on the isentropic vortex (β = 5, carried to t = 2 across one
    /// layer of n × n hexahedra, prisms or tetrahedra): the density's L2 error unlimited and
    /// with van Albada's limiter, and the observed orders; PASS when, on the finest pair,
    /// the unlimited order is at least 1.9 on hexahedra and 1.8 on prisms and tetrahedra (the
    /// limited errors are reported only).
    #[command(after_help = "Examples:\n  ferroflow verify vortex\n  \
                            ferroflow verify vortex --cells 20,40,80,160\n\n\
                            Exit codes: 0 PASS, 1 FAIL or a runtime failure, 2 bad input.")]
    Vortex {
        /// Cells per side of each mesh, at least two, ascending.
        #[arg(long, value_delimiter = ',', default_values_t = [20, 40, 80])]
        cells: Vec<usize>,
        /// Output directory for vortex.csv.
        #[arg(long, default_value = "ferroflow-out/vortex")]
        out: PathBuf,
    },
    /// The finite-volume solver on the laminar flat plate (Mach 0.2, Re = 10⁵ per unit
    /// length, adiabatic wall, one layer of graded hexahedra), converged by the implicit
    /// iteration: Cf √Re_x along the plate against Blasius' 0.664; PASS when it is within 5 %
    /// at every wall face with 0.1 ≤ x ≤ 1. Writes the surface (x, Cp, Cf) to
    /// flat-plate.csv.
    #[command(after_help = "Examples:\n  ferroflow verify flat-plate\n  \
                            ferroflow verify flat-plate --coarse\n\n\
                            Exit codes: 0 PASS, 1 FAIL or a runtime failure, 2 bad input.")]
    FlatPlate {
        /// The tests' coarse mesh (1,280 cells) instead of the fine one (7,168).
        #[arg(long)]
        coarse: bool,
        /// Output directory for flat-plate.csv.
        #[arg(long, default_value = "ferroflow-out/flat-plate")]
        out: PathBuf,
    },
    /// The finite-volume solver on the subsonic bump in a channel (Mach 0.5, one layer of
    /// n × n/3 hexahedra, unlimited), each mesh converged to a 1e-10 drop of the density
    /// residual by the implicit iteration and, on the coarser ones, by the explicit
    /// four-stage scheme: the entropy error, its observed order and both iteration counts;
    /// PASS when the order from the coarsest to the finest mesh is at least 1.8 and the
    /// implicit iteration takes a tenth of the explicit scheme's iterations or fewer.
    #[command(after_help = "Examples:\n  ferroflow verify bump\n  \
                            ferroflow verify bump --cells 24,48,96 --explicit-up-to 24\n\n\
                            Exit codes: 0 PASS, 1 FAIL or a runtime failure, 2 bad input.")]
    Bump {
        /// Cells along the channel of each mesh (n/3 across), at least two meshes, ascending.
        #[arg(long, value_delimiter = ',', default_values_t = [48, 96, 192])]
        cells: Vec<usize>,
        /// Run the explicit scheme too on the meshes of at most this many cells along the
        /// channel (tens of thousands of iterations from 48 on).
        #[arg(long, default_value_t = 48)]
        explicit_up_to: usize,
        /// Output directory for bump.csv.
        #[arg(long, default_value = "ferroflow-out/bump")]
        out: PathBuf,
    },
    /// Run the cavity cases and print the deviation from the published profiles (or, for the
    /// buoyancy-driven cavities, the published mean Nusselt number).
    #[command(after_help = "Examples:\n  ferroflow verify cavity\n  \
                            ferroflow verify cavity cavity3d-re1000 --out verification\n  \
                            ferroflow verify cavity bdc2d bdc3d --set backend.kind=cuda\n  \
                            ferroflow verify cavity cavity2d-re1000 --set 'mesh.nodes=[257,257]' --set backend.kind=cuda")]
    Cavity {
        /// Cases to run [default: cavity2d-re100, cavity2d-re1000].
        cases: Vec<String>,
        /// Directory for the runs' results, one subdirectory per case.
        #[arg(long, default_value = "ferroflow-out/verify")]
        out: PathBuf,
        /// Set a key of every case (dotted path, TOML value), e.g. --set backend.kind=cuda.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<Override>,
    },
}

pub fn verify(cmd: VerifyCommand) -> Result<(), Failure> {
    match cmd {
        VerifyCommand::Mms {
            dim,
            energy,
            sizes,
            out,
            backend,
            convection,
            differences,
            multigrid,
        } => mms(MmsStudy {
            dim: dim as usize,
            energy,
            sizes,
            out: &out,
            backend,
            convection,
            differences,
            multigrid,
        }),
        VerifyCommand::Cavity { cases, out, set } => cavity(cases, &out, &set),
        VerifyCommand::EthierSteinman {
            cells,
            viscosity,
            end,
            precision,
            cg_tolerance,
            cg_tolerances,
            out,
        } => {
            let (tolerance, sweep) = match precision {
                Precision::F64 => (1e-10, vec![1e-4, 1e-6, 1e-8]),
                Precision::F32 => (1e-5, vec![1e-2, 1e-3, 1e-4]),
            };
            let controls = Controls {
                cg_tolerance: cg_tolerance.unwrap_or(tolerance),
                ..Controls::default()
            };
            let sweep = if cg_tolerances.is_empty() {
                sweep
            } else {
                cg_tolerances
            };
            let study = EthierStudy {
                nu: viscosity,
                end,
                precision,
                controls,
            };
            ethier_steinman(&cells, study, &sweep, &out)
        }
        VerifyCommand::LidCube {
            cells,
            reynolds,
            tolerance,
            end,
            reference,
            out,
        } => lid_cube(
            &cells,
            reynolds,
            (tolerance, end),
            reference.as_deref(),
            &out,
        ),
        VerifyCommand::Dfg {
            meshes,
            tolerance,
            end,
        } => dfg(&meshes, tolerance, end),
        VerifyCommand::Sod { cells, out } => sod(&cells, &out),
        VerifyCommand::Vortex { cells, out } => vortex(&cells, &out),
        VerifyCommand::FlatPlate { coarse, out } => flat_plate(coarse, &out),
        VerifyCommand::Bump {
            cells,
            explicit_up_to,
            out,
        } => bump(&cells, explicit_up_to, &out),
    }
}

/// The finite-volume solver's meshes: (name, how a box's hexahedra are filled).
const FV_CELLS: [(&str, BoxCells); 3] = [
    ("hex", BoxCells::Hex),
    ("prism", BoxCells::Prism),
    ("tet", BoxCells::Tet6),
];

/// The output file `name` in `out`, its directory created.
fn output_file(out: &Path, name: &str) -> Result<PathBuf, Failure> {
    let path = out.join(name);
    fs::create_dir_all(out)
        .map_err(|e| Failure::input(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// Sod's shock tube (see [`VerifyCommand::Sod`]), its table printed and written to
/// `out/sod.csv`.
fn sod(cells: &[usize], out: &Path) -> Result<(), Failure> {
    if cells.is_empty() || cells.iter().any(|&n| n < 2 || n % 2 == 1) {
        return Err(Failure::input(format!(
            "--cells {cells:?}: even numbers of cells, at least 2"
        )));
    }
    let path = output_file(out, "sod.csv")?;
    let mut csv = String::from("cells,n,mesh_cells,steps,l1_density,bound,conservation,seconds\n");
    println!(
        "{:>6} {:>6} {:>8} {:>6} {:>11} {:>7} {:>12} {:>7}",
        "cells", "n", "mesh", "steps", "L1 rho", "bound", "conserv.", "s"
    );
    let mut failed = Vec::new();
    for (name, fill) in FV_CELLS {
        for &n in cells {
            let start = Instant::now();
            let r = ferroflow_fv::sod::run(fill, n).map_err(Failure::runtime)?;
            let seconds = start.elapsed().as_secs_f64();
            let bound = match (n, fill) {
                (100, BoxCells::Hex) => Some(0.0062),
                (200, BoxCells::Hex) => Some(0.0034),
                (100, _) => Some(0.0089),
                (200, _) => Some(0.0048),
                _ => None,
            };
            let conservation = r.conservation.iter().copied().fold(0.0, f64::max);
            let shown = bound.map(|b| b.to_string()).unwrap_or_default();
            println!(
                "{name:>6} {n:>6} {:>8} {:>6} {:>11.5e} {shown:>7} {conservation:>12.3e} {seconds:>7.2}",
                r.cells, r.steps, r.l1
            );
            csv += &format!(
                "{name},{n},{},{},{:e},{shown},{conservation:e},{seconds:.3}\n",
                r.cells, r.steps, r.l1
            );
            if bound.is_some_and(|b| r.l1.is_nan() || r.l1 > b) {
                failed.push(format!("{name} n = {n}: L1 {:.5} above {shown}", r.l1));
            }
            if r.conservation.iter().any(|&e| e.is_nan() || e > 1e-12) {
                failed.push(format!(
                    "{name} n = {n}: conserved to {:?} only",
                    r.conservation
                ));
            }
        }
    }
    ferroflow_io::file::write(&path, csv).map_err(Failure::runtime)?;
    if failed.is_empty() {
        println!("PASS: every L1 density error within its bound, totals conserved to 1e-12");
        Ok(())
    } else {
        Err(Failure::runtime(format!("FAIL: {}", failed.join("; "))))
    }
}

/// The isentropic vortex (see [`VerifyCommand::Vortex`]), its table printed and written to
/// `out/vortex.csv`.
fn vortex(cells: &[usize], out: &Path) -> Result<(), Failure> {
    use ferroflow_fv::vortex::{order, run};
    use ferroflow_fv::Limiter;
    if cells.len() < 2 || cells.windows(2).any(|w| w[0] >= w[1]) || cells[0] < 2 {
        return Err(Failure::input(format!(
            "--cells {cells:?}: at least two meshes, ascending, of at least 2 cells per side"
        )));
    }
    let path = output_file(out, "vortex.csv")?;
    let mut csv = String::from("cells,limiter,n,mesh_cells,steps,l2_density,order,seconds\n");
    println!(
        "{:>6} {:>10} {:>5} {:>8} {:>6} {:>11} {:>6} {:>7}",
        "cells", "limiter", "n", "mesh", "steps", "L2 rho", "order", "s"
    );
    let mut failed = Vec::new();
    let mut finest = Vec::new();
    for (name, fill) in FV_CELLS {
        for (limiter, label) in [(Limiter::None, "none"), (Limiter::VanAlbada, "van-albada")] {
            let mut previous = None;
            let mut last = f64::NAN;
            for &n in cells {
                let start = Instant::now();
                let r = run(fill, n, limiter).map_err(Failure::runtime)?;
                let seconds = start.elapsed().as_secs_f64();
                let p = previous.as_ref().map(|c| order(c, &r));
                let shown = p.map(|p| format!("{p:.3}")).unwrap_or_default();
                println!(
                    "{name:>6} {label:>10} {n:>5} {:>8} {:>6} {:>11.5e} {shown:>6} {seconds:>7.2}",
                    r.cells, r.steps, r.l2
                );
                csv += &format!(
                    "{name},{label},{n},{},{},{:e},{shown},{seconds:.3}\n",
                    r.cells, r.steps, r.l2
                );
                last = p.unwrap_or(f64::NAN);
                previous = Some(r);
            }
            if limiter == Limiter::None {
                let needed = if fill == BoxCells::Hex { 1.9 } else { 1.8 };
                finest.push(format!("{name} {last:.3} (>= {needed})"));
                if last.is_nan() || last < needed {
                    failed.push(format!("{name}: order {last:.3} below {needed}"));
                }
            }
        }
    }
    ferroflow_io::file::write(&path, csv).map_err(Failure::runtime)?;
    if failed.is_empty() {
        println!(
            "PASS: unlimited orders on the finest pair: {}",
            finest.join(", ")
        );
        Ok(())
    } else {
        Err(Failure::runtime(format!("FAIL: {}", failed.join("; "))))
    }
}

/// The laminar flat plate (see [`VerifyCommand::FlatPlate`]): every eighth station's
/// coefficients printed, all of them written to `out/flat-plate.csv`.
fn flat_plate(coarse: bool, out: &Path) -> Result<(), Failure> {
    use ferroflow_fv::flat_plate::{deviation, run, COARSE, FINE, MAX_ITERATIONS, RANGE};
    let path = output_file(out, "flat-plate.csv")?;
    let grading = if coarse { COARSE } else { FINE };
    let r = run(grading).map_err(Failure::runtime)?;
    let iterations = match r.iterations {
        Some(n) => format!("{n} implicit iterations"),
        None => format!("not converged in {MAX_ITERATIONS} implicit iterations"),
    };
    println!("{} cells, {iterations}, {:.1} s", r.cells, r.seconds);
    let mut csv = String::from("x,cp,cf,cf_sqrt_re_x_over_blasius\n");
    println!("{:>8} {:>9} {:>10} {:>14}", "x", "Cp", "Cf", "Cf√Rex/0.664");
    for (k, st) in r.surface.iter().enumerate() {
        let ratio = st.blasius_ratio();
        if k % 8 == 0 || k + 1 == r.surface.len() {
            println!(
                "{:>8.4} {:>9.5} {:>10.4e} {ratio:>14.4}",
                st.x, st.cp, st.cf
            );
        }
        csv += &format!("{:e},{:e},{:e},{ratio:e}\n", st.x, st.cp, st.cf);
    }
    ferroflow_io::file::write(&path, csv).map_err(Failure::runtime)?;
    let (worst, at) = deviation(&r.surface, RANGE);
    let verdict = format!(
        "largest |Cf√Rex/0.664 − 1| over {} ≤ x ≤ {}: {:.2} % at x = {at:.4}",
        RANGE.0,
        RANGE.1,
        100.0 * worst
    );
    match (r.iterations, worst <= 0.05) {
        (Some(_), true) => {
            println!("PASS: {verdict}");
            Ok(())
        }
        (None, _) => Err(Failure::runtime(format!("FAIL: not converged; {verdict}"))),
        (Some(_), false) => Err(Failure::runtime(format!("FAIL: {verdict} (above 5 %)"))),
    }
}

/// The subsonic bump (see [`VerifyCommand::Bump`]), its table printed and written to
/// `out/bump.csv`.
fn bump(cells: &[usize], explicit_up_to: usize, out: &Path) -> Result<(), Failure> {
    use ferroflow_fv::bump::{order, run, MAX_ITERATIONS};
    use ferroflow_fv::Limiter;
    if cells.len() < 2 || cells.windows(2).any(|w| w[0] >= w[1]) || cells[0] < 3 {
        return Err(Failure::input(format!(
            "--cells {cells:?}: at least two meshes, ascending, of at least 3 cells along"
        )));
    }
    let path = output_file(out, "bump.csv")?;
    let mut csv = String::from(
        "n,mesh_cells,entropy_error,order,implicit_iterations,implicit_seconds,\
         explicit_iterations,explicit_seconds\n",
    );
    println!(
        "{:>5} {:>7} {:>11} {:>6} {:>9} {:>8} {:>9} {:>8}",
        "n", "cells", "entropy", "order", "implicit", "s", "explicit", "s"
    );
    let mut runs = Vec::new();
    let mut failed = Vec::new();
    for &n in cells {
        let b =
            run(n, Limiter::None, n <= explicit_up_to, MAX_ITERATIONS).map_err(Failure::runtime)?;
        let p = runs.last().map(|a| order(a, &b));
        let shown = p.map(|p| format!("{p:.3}")).unwrap_or_default();
        let (ei, es) = match b.explicit {
            Some((i, s)) => (i.to_string(), format!("{s:.2}")),
            None => (String::new(), String::new()),
        };
        println!(
            "{n:>5} {:>7} {:>11.4e} {shown:>6} {:>9} {:>8.2} {ei:>9} {es:>8}",
            b.cells, b.entropy, b.implicit.0, b.implicit.1
        );
        csv += &format!(
            "{n},{},{:e},{shown},{},{:.3},{ei},{es}\n",
            b.cells, b.entropy, b.implicit.0, b.implicit.1
        );
        if b.implicit.0 >= MAX_ITERATIONS {
            failed.push(format!("n = {n}: implicit not converged"));
        }
        match b.explicit {
            Some((e, _)) if e >= MAX_ITERATIONS => {
                failed.push(format!("n = {n}: explicit not converged"));
            }
            Some((e, _)) if 10 * b.implicit.0 > e => failed.push(format!(
                "n = {n}: implicit {} against explicit {e} iterations",
                b.implicit.0
            )),
            _ => {}
        }
        runs.push(b);
    }
    ferroflow_io::file::write(&path, csv).map_err(Failure::runtime)?;
    let (first, last) = (&runs[0], &runs[runs.len() - 1]);
    let p = order(first, last);
    if p.is_nan() || p < 1.8 {
        failed.push(format!("order {p:.3} from n = {} to {}", first.n, last.n));
    }
    if failed.is_empty() {
        println!(
            "PASS: entropy order {p:.3} from n = {} to {}; implicit iterations a tenth of the \
             explicit ones or fewer",
            first.n, last.n
        );
        Ok(())
    } else {
        Err(Failure::runtime(format!("FAIL: {}", failed.join("; "))))
    }
}

/// The DFG 3D-1Z study (see [`VerifyCommand::Dfg`]).
fn dfg(meshes: &[PathBuf], tolerance: f64, end: f64) -> Result<(), Failure> {
    use ferroflow_fem::dfg::{run, DRAG_RANGE, LIFT_RANGE};
    println!(
        "{:>9} {:>9} {:>6} {:>7} {:>9} {:>9} {:>9} {:>7}",
        "nodes", "cells", "steps", "t (s)", "c_D", "c_L", "CG/step", "s"
    );
    for path in meshes {
        let (mesh, _) = crate::mesh::read(path)?;
        let start = Instant::now();
        let f = run(&mesh, tolerance, end)
            .map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
        println!(
            "{:>9} {:>9} {:>6} {:>7.2} {:>9.4} {:>9.5} {:>9.1} {:>7.1}{}",
            f.size[0],
            f.size[1],
            f.march.steps,
            f.march.time,
            f.drag,
            f.lift,
            f.march.cg_iterations,
            start.elapsed().as_secs_f64(),
            if f.march.steady { "" } else { "  NOT steady" }
        );
    }
    println!(
        "reference (Schäfer & Turek 1996): c_D {} to {}, c_L {} to {}",
        DRAG_RANGE[0], DRAG_RANGE[1], LIFT_RANGE[0], LIFT_RANGE[1]
    );
    Ok(())
}

/// A two-column profile of a structured run's output (`x,v` or `y,u`), or an error naming
/// the file and line.
fn read_profile(path: &Path) -> Result<Vec<(f64, f64)>, Failure> {
    let text = fs::read_to_string(path)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))?;
    (text.lines().enumerate().skip(1))
        .map(|(l, line)| {
            let values: Vec<Option<f64>> = line.split(',').map(|v| v.trim().parse().ok()).collect();
            match values[..] {
                [Some(a), Some(b)] => Ok((a, b)),
                _ => Err(Failure::input(format!(
                    "{}, line {}: expected two numbers, found \"{line}\"",
                    path.display(),
                    l + 1
                ))),
            }
        })
        .collect()
}

/// `profile` at `x` by linear interpolation (`profile` sorted by its first column).
fn interpolate(profile: &[(f64, f64)], x: f64) -> f64 {
    let i = profile
        .partition_point(|p| p.0 < x)
        .clamp(1, profile.len() - 1);
    let ((x0, y0), (x1, y1)) = (profile[i - 1], profile[i]);
    y0 + (y1 - y0) * (x - x0) / (x1 - x0)
}

/// The lid-driven cube study (see [`VerifyCommand::LidCube`]).
fn lid_cube(
    cells: &[usize],
    re: f64,
    (tolerance, end): (f64, f64),
    reference: Option<&Path>,
    out: &Path,
) -> Result<(), Failure> {
    let reference = match reference {
        Some(dir) => Some([
            read_profile(&dir.join("centerline_u.csv"))?,
            read_profile(&dir.join("centerline_v.csv"))?,
        ]),
        None => None,
    };
    if cells.is_empty() || cells.iter().any(|c| !c.is_multiple_of(2) || *c == 0) {
        return Err(Failure::input(format!("--cells {cells:?}: even numbers")));
    }
    fs::create_dir_all(out)
        .map_err(|e| Failure::input(format!("cannot write {}: {e}", out.display())))?;
    for &n in cells {
        let start = Instant::now();
        let s = ferroflow_fem::lid_cube::run(n, re, Controls::default(), tolerance, end)
            .map_err(Failure::runtime)?;
        let seconds = start.elapsed().as_secs_f64();
        for (name, header, profile) in [
            ("u", ["y", "u"], &s.u_profile),
            ("v", ["x", "v"], &s.v_profile),
        ] {
            let path = out.join(format!("lid-cube-{n}-{name}.csv"));
            let rows = profile
                .iter()
                .map(|(a, b)| vec![a.to_string(), b.to_string()]);
            ferroflow_io::table::write_csv(&path, &header, rows).map_err(Failure::runtime)?;
        }
        let deviation = reference.as_ref().map(|[u, v]| {
            let worst = |fe: &[(f64, f64)], r: &[(f64, f64)]| {
                fe.iter()
                    .map(|(x, y)| (y - interpolate(r, *x)).abs())
                    .fold(0.0, f64::max)
            };
            (worst(&s.u_profile, u), worst(&s.v_profile, v))
        });
        println!(
            "{n:>4} cells: {} steps to t = {:.2} ({}; max |du|/dt {:.1e}, |dp|/dt {:.1e}), {:.1} CG \
             iterations / step, {seconds:.1} s{}",
            s.march.steps,
            s.march.time,
            if s.march.steady {
                "steady"
            } else {
                "NOT steady"
            },
            s.march.rate,
            s.march.pressure_rate,
            s.march.cg_iterations,
            deviation.map_or(String::new(), |(u, v)| format!(
                "; max deviation from the reference: u {u:.4}, v {v:.4}"
            ))
        );
    }
    Ok(())
}

/// What `verify ethier-steinman` runs every grid with.
#[derive(Clone, Copy)]
struct EthierStudy {
    nu: f64,
    end: f64,
    precision: Precision,
    controls: Controls,
}

impl EthierStudy {
    /// The grid of `cells` cells per axis solved with CG tolerance `cg_tolerance`.
    fn level(&self, cells: usize, cg_tolerance: f64) -> Result<LevelResult, Failure> {
        use ferroflow_fem::ethier_steinman::run;
        let c = Controls {
            cg_tolerance,
            ..self.controls
        };
        let r = match self.precision {
            Precision::F64 => run::<f64>(cells, self.nu, self.end, c),
            Precision::F32 => run::<f32>(cells, self.nu, self.end, c),
        };
        r.map_err(Failure::runtime)
    }
}

/// The Ethier–Steinman study (see [`VerifyCommand::EthierSteinman`]), its tables printed and
/// written to `out/ethier-steinman.csv` and `out/ethier-steinman-cg.csv`.
fn ethier_steinman(
    cells: &[usize],
    study: EthierStudy,
    sweep: &[f64],
    out: &Path,
) -> Result<(), Failure> {
    use ferroflow_fem::ethier_steinman::order;
    let (nu, end, controls) = (study.nu, study.end, study.controls);
    if cells.len() < 2 || cells.windows(2).any(|w| w[0] >= w[1]) || cells[0] < 1 {
        return Err(Failure::input(format!(
            "--cells {cells:?}: at least two grids, ascending"
        )));
    }
    let tolerance = controls.cg_tolerance;
    if !(tolerance > 0.0 && tolerance < 1.0) {
        return Err(Failure::input(format!(
            "--cg-tolerance {tolerance}: between 0 and 1"
        )));
    }
    let finest = finest_cg_tolerance(study.precision);
    if tolerance < finest {
        return Err(Failure::input(format!(
            "--cg-tolerance {tolerance:e}: below what --precision {} can reach; at least \
             {finest:.1e} (32 ε)",
            study.precision.name()
        )));
    }
    if let Some(t) = sweep.iter().find(|&&t| !(t > tolerance && t < 1.0)) {
        return Err(Failure::input(format!(
            "--cg-tolerances: {t} is not between --cg-tolerance ({tolerance}) and 1"
        )));
    }
    if !(nu > 0.0 && nu.is_finite() && end > 0.0 && end.is_finite()) {
        return Err(Failure::input(format!(
            "--viscosity {nu}, --end {end}: both positive and finite"
        )));
    }
    let path = output_file(out, "ethier-steinman.csv")?;
    if study.precision != Precision::F64 {
        println!(
            "working precision {}: CG tolerance {tolerance:e} (no tighter than {finest:.1e}); \
             errors computed in f64 from the state widened\n",
            study.precision.name()
        );
    }
    let mut csv = String::from(
        "cells,nodes,steps,velocity_l2,pressure_l2,velocity_order,pressure_order,\
         cg_iterations_per_step,max_rms_divergence,max_rms_continuity,seconds\n",
    );
    println!(
        "{:>6} {:>8} {:>6} {:>12} {:>12} {:>7} {:>7} {:>8} {:>10} {:>10} {:>8}",
        "cells",
        "nodes",
        "steps",
        "u L2",
        "p L2",
        "u ord",
        "p ord",
        "CG/step",
        "max div",
        "max cont",
        "s"
    );
    let mut previous = None;
    let mut last = (f64::NAN, f64::NAN);
    let mut levels: Vec<LevelResult> = Vec::new();
    for &c in cells {
        let start = Instant::now();
        let r = study.level(c, tolerance)?;
        let seconds = start.elapsed().as_secs_f64();
        let orders = previous.map(|(pc, pu, pp)| {
            (
                order((pc, pu), (c, r.velocity)),
                order((pc, pp), (c, r.pressure)),
            )
        });
        let fmt = |o: Option<f64>| o.map(|o| format!("{o:.3}")).unwrap_or_default();
        let (ou, op) = (orders.map(|o| o.0), orders.map(|o| o.1));
        println!(
            "{:>6} {:>8} {:>6} {:>12.4e} {:>12.4e} {:>7} {:>7} {:>8.1} {:>10.3e} {:>10.3e} {:>8.2}",
            c,
            r.nodes,
            r.steps,
            r.velocity,
            r.pressure,
            fmt(ou),
            fmt(op),
            r.cg_iterations,
            r.divergence,
            r.continuity,
            seconds
        );
        csv += &format!(
            "{c},{},{},{:e},{:e},{},{},{:.2},{:e},{:e},{seconds:.3}\n",
            r.nodes,
            r.steps,
            r.velocity,
            r.pressure,
            fmt(ou),
            fmt(op),
            r.cg_iterations,
            r.divergence,
            r.continuity
        );
        previous = Some((c, r.velocity, r.pressure));
        if let Some(o) = orders {
            last = o;
        }
        levels.push(r);
    }
    ferroflow_io::file::write(&path, csv).map_err(Failure::runtime)?;
    let Tracking {
        falls: tracks,
        round_off,
    } = cg_sweep(&levels, study, sweep, out)?;
    let (ou, op) = last;
    if ou >= 1.8 && op >= 1.0 && tracks {
        let floor = match round_off.is_empty() {
            true => String::new(),
            false => format!(
                " down to {}'s round-off ({}: f64 falls there)",
                study.precision.name(),
                round_off.join(", ")
            ),
        };
        println!(
            "PASS: orders on the finest pair: velocity {ou:.3} (>= 1.8), pressure {op:.3} (>= 1.0); \
             the continuity residual falls with the CG tolerance on every grid{floor}"
        );
        Ok(())
    } else {
        Err(Failure::runtime(format!(
            "FAIL: orders on the finest pair: velocity {ou:.3} (needs 1.8), pressure {op:.3} \
             (needs 1.0); the continuity residual falls with the CG tolerance on every grid: \
             {tracks}"
        )))
    }
}

/// How the continuity residual followed the CG tolerance in [`cg_sweep`].
struct Tracking {
    /// On every grid it fell as the tolerance was tightened, or where it did not, f64 on the
    /// same grid and tolerance fell: the working precision's round-off stopped it.
    falls: bool,
    /// The grids and tolerances where round-off stopped it, e.g. `32³ at 1e-5`.
    round_off: Vec<String>,
}

/// Each of `levels` (run at `controls.cg_tolerance`) again at every tolerance of `sweep`:
/// CG iterations per step, the largest RMS divergence and continuity residual after the
/// projection, printed and written to `out/ethier-steinman-cg.csv`; whether on every grid the
/// continuity residual falls as the tolerance is tightened. Below f64, where it does not fall,
/// the grid is run in f64 at that tolerance: if f64's falls below the looser tolerance's, the
/// row is marked as the working precision's round-off, else the study fails.
fn cg_sweep(
    levels: &[LevelResult],
    study: EthierStudy,
    sweep: &[f64],
    out: &Path,
) -> Result<Tracking, Failure> {
    let controls = study.controls;
    let mut tolerances: Vec<f64> = sweep.to_vec();
    tolerances.sort_by(|a, b| b.total_cmp(a));
    println!(
        "\n{:>6} {:>8} {:>10} {:>8} {:>10} {:>10}",
        "cells", "nodes", "CG tol", "CG/step", "max div", "max cont"
    );
    let mut csv = String::from(
        "cells,nodes,cg_tolerance,cg_iterations_per_step,max_rms_divergence,max_rms_continuity\n",
    );
    let double = EthierStudy {
        precision: Precision::F64,
        ..study
    };
    let mut tracking = Tracking {
        falls: true,
        round_off: Vec::new(),
    };
    for level in levels {
        let mut rows = Vec::new();
        for &t in &tolerances {
            rows.push((t, study.level(level.cells, t)?));
        }
        rows.push((controls.cg_tolerance, *level));
        let mut looser = f64::INFINITY;
        for (t, r) in rows {
            let mut note = String::new();
            // False for NaN too.
            let fell = r.continuity < looser;
            if !fell {
                let in_f64 = match study.precision {
                    Precision::F64 => None,
                    Precision::F32 => Some(double.level(r.cells, t)?.continuity),
                };
                let falls = in_f64.is_some_and(|c| c < looser);
                if let Some(c) = in_f64 {
                    let cause = if falls { " f32 round-off" } else { "" };
                    note = format!("  not falling:{cause} (f64: {c:.3e})");
                }
                if falls {
                    tracking.round_off.push(format!("{}³ at {t:.0e}", r.cells));
                }
                tracking.falls &= falls;
            }
            looser = r.continuity;
            println!(
                "{:>6} {:>8} {:>10.0e} {:>8.1} {:>10.3e} {:>10.3e}{note}",
                r.cells, r.nodes, t, r.cg_iterations, r.divergence, r.continuity
            );
            csv += &format!(
                "{},{},{t:e},{:.2},{:e},{:e}\n",
                r.cells, r.nodes, r.cg_iterations, r.divergence, r.continuity
            );
        }
    }
    let path = output_file(out, "ethier-steinman-cg.csv")?;
    ferroflow_io::file::write(&path, csv).map_err(Failure::runtime)?;
    Ok(tracking)
}

/// What `verify mms` was asked for.
struct MmsStudy<'a> {
    dim: usize,
    energy: bool,
    sizes: Vec<usize>,
    out: &'a Path,
    backend: BackendKind,
    convection: ConvectionKind,
    differences: DifferencesKind,
    multigrid: bool,
}

/// The manufactured-solution study on `sizes` (defaults by dimension), written to `out`.
fn mms(asked: MmsStudy) -> Result<(), Failure> {
    let (dim, sizes, out, multigrid) = (asked.dim, asked.sizes, asked.out, asked.multigrid);
    let world = World::alone();
    let spec = BackendSpec {
        kind: asked.backend,
        ..BackendSpec::default()
    };
    let sizes = if !sizes.is_empty() {
        sizes
    } else if dim == 2 {
        vec![17, 33, 65, 129]
    } else {
        vec![9, 17, 33, 65]
    };
    if sizes.len() < 2 || !sizes.is_sorted_by(|a, b| a < b) {
        return Err(Failure::input(format!(
            "--sizes {sizes:?}: at least two grids, ascending (an order compares two grids)"
        )));
    }
    let staging = staging_file(out)?;
    let mms = if asked.energy {
        Manufactured::with_energy(dim)
    } else {
        Manufactured::new(dim)
    };
    // A cycle does the work of a few iterations: checked after each.
    let stop = StopCriteria {
        tolerance: 1e-12,
        max_iterations: 2_000_000,
        check_interval: if multigrid { 1 } else { 100 },
        stall_checks: ferroflow_solver::STALL_CHECKS,
    };
    let mut numerics = Numerics {
        convection: asked.convection.form(),
        differences: asked.differences.order(),
        c4: asked.differences.c4(),
        ..Numerics::default()
    };
    if multigrid {
        numerics.method = Method::Implicit(Implicit::default());
        numerics.multigrid.levels = 20;
    }
    let rows = study::<f64>(&mms, &sizes, numerics, |problem| {
        let one = Decomposition::new(problem.layout.dim, problem.layout.n, [1; 3])
            .map_err(|e| e.to_string())?;
        let (mut backend, _) = make_backend(problem, &spec, &ParallelSpec::default(), one, &world)
            .map_err(|f| f.message)?;
        let mut sim = Simulation::new(stop);
        let outcome = sim
            .run_plain(backend.as_mut(), problem.variable_names())
            .map_err(|e| e.to_string())?;
        eprintln!(
            "n = {:>4}: {} iterations, {:.1} s{}",
            problem.layout.n[0],
            sim.iteration,
            outcome.wall_seconds,
            if outcome.converged {
                ""
            } else {
                " (NOT converged)"
            }
        );
        backend.download().map_err(|e| e.to_string())
    });
    let rows = rows.map_err(|e| {
        // The earlier mms.csv, if any, stays as it was.
        let _ = fs::remove_file(&staging);
        Failure::runtime(e)
    })?;
    let path = out.join(MMS_FILE);
    summary::write_mms(&staging, &rows)
        .and_then(|()| fs::rename(&staging, &path))
        .map_err(|e| Failure::runtime(format!("{}: {e}", path.display())))?;
    print_order_table(&rows);
    order_verdict(&rows, asked.differences == DifferencesKind::Fourth)
}

/// Observed orders of accuracy per grid and variable.
fn print_order_table(rows: &[MmsRow]) {
    println!(
        "{:>5} {:>3} {:>12} {:>12} {:>7} {:>7}",
        "n", "var", "L2 error", "Linf error", "L2 ord", "Li ord"
    );
    let fmt = |o: Option<f64>| o.map(|o| format!("{o:.3}")).unwrap_or_default();
    for r in rows {
        println!(
            "{:>5} {:>3} {:>12.4e} {:>12.4e} {:>7} {:>7}",
            r.n,
            r.variable,
            r.l2_error,
            r.linf_error,
            fmt(r.l2_order),
            fmt(r.linf_order)
        );
    }
}

/// The study's table in the output directory.
const MMS_FILE: &str = "mms.csv";

/// Observed orders pass within 2 ± this.
const ORDER_TOLERANCE: f64 = 0.1;

/// Creates `out` and the file the table is written to before it replaces `out/mms.csv`: a
/// directory that cannot be written fails here, before the study's minutes of computing.
fn staging_file(out: &Path) -> Result<PathBuf, Failure> {
    let staging = out.join(format!("{MMS_FILE}.tmp"));
    fs::create_dir_all(out)
        .and_then(|()| fs::File::create(&staging))
        .map_err(|e| {
            Failure::input(format!(
                "cannot write {}: {e}",
                out.join(MMS_FILE).display()
            ))
        })?;
    Ok(staging)
}

/// PASS when every order on the finest pair of grids is within 2 ± [`ORDER_TOLERANCE`] (with
/// `at_least`, for schemes of higher order inside than at the walls: at least 2 −
/// [`ORDER_TOLERANCE`]), else FAIL (exit code 1) naming those that are not.
fn order_verdict(rows: &[MmsRow], at_least: bool) -> Result<(), Failure> {
    let orders = finest_orders(rows);
    let finest = rows.iter().map(|r| r.n).max().unwrap_or(0);
    let wanted = match at_least {
        true => format!(">= {}", 2.0 - ORDER_TOLERANCE),
        false => format!("within 2 ± {ORDER_TOLERANCE}"),
    };
    // False for a NaN order (an error of zero or NaN), which fails too.
    let within = |order: f64| match at_least {
        true => order >= 2.0 - ORDER_TOLERANCE,
        false => (order - 2.0).abs() <= ORDER_TOLERANCE,
    };
    let outside: Vec<String> = orders
        .iter()
        .filter(|(_, _, order)| !within(*order))
        .map(|(variable, norm, order)| format!("{variable} {norm} {order:.3}"))
        .collect();
    let range = orders
        .iter()
        .map(|o| o.2)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), o| {
            (lo.min(o), hi.max(o))
        });
    if outside.is_empty() {
        println!(
            "PASS: observed orders on n = {finest} are {:.3} to {:.3}, {wanted}",
            range.0, range.1
        );
        return Ok(());
    }
    let detail = format!(
        "observed orders on n = {finest} not {wanted}: {}",
        outside.join(", ")
    );
    println!("FAIL: {detail}");
    Err(Failure::runtime(detail))
}

/// Runs the cavity `cases` (defaults: the 2D ones) into `out`, then tabulates the deviations.
fn cavity(cases: Vec<String>, out: &Path, set: &[Override]) -> Result<(), Failure> {
    let world = World::alone();
    let cases = if cases.is_empty() {
        vec!["cavity2d-re100".to_string(), "cavity2d-re1000".to_string()]
    } else {
        cases
    };
    let interrupt = Interrupt::install(true).map_err(Failure::runtime)?;
    // Each run reports as it ends; the table at the end gathers them.
    let mut summaries = Vec::new();
    for name in cases {
        let loaded = LoadedCase::load(&name, set)?;
        let dir = out.join(loaded.dir_name());
        summaries.extend(execute(Job {
            loaded,
            out: dir,
            overwrite: false,
            restart: None,
            mode: Mode::detect(false),
            interrupt: interrupt.clone(),
            world: &world,
            started: Instant::now(),
        })?);
    }
    print_cavity_table(&summaries);
    Ok(())
}

/// Deviation of each run from its reference data.
fn print_cavity_table(summaries: &[Summary]) {
    println!(
        "{:<18} {:>10} {:<9} {:<16} {:>9} {:>7}  source",
        "case", "iterations", "converged", "profile", "max |dev|", "at"
    );
    for s in summaries {
        if let Some(r) = s.heat_transfer.as_ref().and_then(|h| h.reference.as_ref()) {
            let nu = s.heat_transfer.as_ref().map_or(0.0, |h| h.hot_wall.mean);
            println!(
                "{:<18} {:>10} {:<9} {:<16} {:>9.4} {:>+6.2}%  {} ({})",
                s.case,
                s.iterations,
                s.converged,
                "Nu hot wall",
                nu,
                100.0 * r.relative_deviation,
                r.source,
                r.nusselt
            );
        } else if s.reference.is_empty() {
            println!(
                "{:<18} {:>10} {:<9} no reference data",
                s.case, s.iterations, s.converged
            );
        }
        for d in &s.reference {
            println!(
                "{:<18} {:>10} {:<9} {:<16} {:>9.4} {:>7.4}  {}",
                s.case, s.iterations, s.converged, d.profile, d.max_abs_deviation, d.at, d.source
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A study of one variable on n = 17 and 33 with the given L2 and Linf orders on 33.
    fn rows(l2: f64, linf: f64) -> Vec<MmsRow> {
        let row = |n, l2_order, linf_order| MmsRow {
            n,
            variable: "u",
            l2_error: 1e-3,
            linf_error: 1e-3,
            l2_order,
            linf_order,
        };
        vec![row(17, None, None), row(33, Some(l2), Some(linf))]
    }

    #[test]
    fn orders_pass_within_2_plus_or_minus_0_1_only() {
        assert!(order_verdict(&rows(1.91, 2.09), false).is_ok());
        assert!(order_verdict(&rows(1.91, 3.6), true).is_ok());
        assert!(order_verdict(&rows(1.89, 3.6), true).is_err());
        for (l2, linf) in [
            (2.0, 2.11),
            (1.89, 2.0),
            (f64::NAN, 2.0),
            (2.0, f64::INFINITY),
        ] {
            let failure = order_verdict(&rows(l2, linf), false).unwrap_err();
            assert_eq!(failure.code, 1);
            assert!(
                failure.message.contains("n = 33 not within 2 ± 0.1: u "),
                "{}",
                failure.message
            );
        }
    }
}
