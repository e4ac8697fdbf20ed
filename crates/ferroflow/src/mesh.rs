//! `ferroflow mesh`: unstructured meshes read (Gmsh `.msh`, SU2 `.su2`), generated, checked,
//! measured and converted (`.vtu` for ParaView, `.su2`).
use crate::Failure;
use clap::{Args, Subcommand, ValueEnum};
use ferroflow_mesh::generate::{self, BoxCells};
use ferroflow_mesh::tetrahedra::{split_prisms, Mirror};
use ferroflow_mesh::{check, gmsh, renumber, su2, topology, vtu, Mesh, MeshError};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `ferroflow mesh`.
#[derive(Args)]
#[command(after_help = "\
Examples:
  ferroflow mesh info channel.msh                  # counts, patches, quality, bandwidth
  ferroflow mesh convert channel.msh channel.vtu   # for ParaView
  ferroflow mesh generate box --cells tet6 --n 20,10,10 --out box.vtu
  ferroflow mesh generate cube --level 2 --out cube.su2   # 185,193 nodes
  ferroflow mesh generate slab --n 400 --out tube.su2

Exit codes: 0 done, 1 a file could not be written, 2 bad input (a file that cannot be read, a
mesh that fails the checks, named with the cell, face or node).")]
pub struct MeshArgs {
    #[command(subcommand)]
    action: MeshAction,
}

#[derive(Subcommand)]
enum MeshAction {
    /// Read a mesh, check it, and print its counts by cell type, patches, volume, quality
    /// (smallest volume, largest aspect ratio), bandwidth (and after reverse Cuthill–McKee),
    /// memory per cell and the reading rate.
    #[command(after_help = "Example:\n  ferroflow mesh info channel.msh")]
    Info {
        /// The mesh: `.msh` (Gmsh 2.2 or 4.1, ASCII or binary) or `.su2`.
        file: PathBuf,
    },
    /// Read a mesh, check it, write it as `.vtu` (cells, with the cell type and, for each
    /// node, nothing else) or `.su2`.
    #[command(
        after_help = "Examples:\n  ferroflow mesh convert channel.msh channel.vtu\n  \
                            ferroflow mesh convert wing.su2 wing.vtu --renumber\n  \
                            ferroflow mesh convert prisms.msh tets.su2 --tetrahedra \
                            --mirror 0.2,0.205"
    )]
    Convert {
        /// The mesh to read (`.msh`, `.su2`).
        input: PathBuf,
        /// The file to write (`.vtu`, `.su2`).
        output: PathBuf,
        /// Renumber nodes and cells by reverse Cuthill–McKee first.
        #[arg(long)]
        renumber: bool,
        /// Split each prism into three tetrahedra (the finite elements take tetrahedra only),
        /// its quadrilateral boundary faces into triangles.
        #[arg(long)]
        tetrahedra: bool,
        /// `Y,Z`: with `--tetrahedra`, cut the prisms so that the split keeps the mesh's
        /// mirror symmetry about the planes y = Y and z = Z (else by node numbers, which
        /// breaks it).
        #[arg(
            long,
            value_delimiter = ',',
            num_args = 1,
            requires = "tetrahedra",
            value_name = "Y,Z"
        )]
        mirror: Option<Vec<f64>>,
    },
    /// Generate a mesh and write it (`.vtu`, `.su2`).
    #[command(
        after_help = "Examples:\n  ferroflow mesh generate box --cells tet6 --n 20,10,10 \
                            --out box.vtu\n  ferroflow mesh generate cube --level 1 --out cube.su2"
    )]
    Generate {
        #[command(subcommand)]
        shape: Shape,
    },
}

#[derive(Subcommand)]
enum Shape {
    /// A box of hexahedral cells, each one hexahedron, two prisms, or five or six
    /// tetrahedra; patches xmin, xmax, ymin, ymax, zmin, zmax.
    #[command(
        after_help = "Example:\n  ferroflow mesh generate box --cells prism --n 8,8,2 \
                            --lengths 2,2,0.5 --jitter 0.1 --out plate.vtu"
    )]
    Box {
        /// How each hexahedral cell is filled.
        #[arg(long, value_enum, default_value = "hex")]
        cells: Fill,
        /// Hexahedral cells per axis, `NX,NY,NZ`.
        #[arg(long, value_delimiter = ',', required = true)]
        n: Vec<usize>,
        /// Lengths per axis, `LX,LY,LZ`.
        #[arg(long, value_delimiter = ',', default_values_t = [1.0, 1.0, 1.0])]
        lengths: Vec<f64>,
        /// Move the inner nodes by up to this fraction of their shortest edge.
        #[arg(long, default_value_t = 0.0)]
        jitter: f64,
        /// Number nodes and cells at random from this seed.
        #[arg(long)]
        shuffle: Option<u64>,
        /// The file to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// The unit cube of tetrahedra, `base · 2^level` cells per axis (each level refines 1:8).
    #[command(after_help = "Example:\n  ferroflow mesh generate cube --level 2 --out cube.su2")]
    Cube {
        /// Refinement level.
        #[arg(long)]
        level: u32,
        /// Cells per axis at level 0 (14: 3,375 / 24,389 / 185,193 nodes at levels 0–2).
        #[arg(long, default_value_t = 14)]
        base: usize,
        /// The file to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// A slab of N × 2 × 2 cubic hexahedra along x, length 1 (shock tubes).
    #[command(after_help = "Example:\n  ferroflow mesh generate slab --n 400 --out tube.su2")]
    Slab {
        /// Cells along x.
        #[arg(long)]
        n: usize,
        /// The file to write.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Fill {
    Hex,
    Prism,
    Tet5,
    Tet6,
}

pub fn mesh(args: MeshArgs) -> Result<(), Failure> {
    match args.action {
        MeshAction::Info { file } => info(&file),
        MeshAction::Convert {
            input,
            output,
            renumber,
            tetrahedra,
            mirror,
        } => {
            let (mut mesh, _) = read(&input)?;
            check::check(&mesh).map_err(|e| bad(&input, e))?;
            if tetrahedra {
                let mirror = match mirror.as_deref() {
                    None => None,
                    Some(&[y, z]) if y.is_finite() && z.is_finite() => Some(Mirror { y, z }),
                    Some(other) => {
                        return Err(Failure::input(format!(
                            "--mirror {other:?}: two finite numbers, Y,Z"
                        )))
                    }
                };
                mesh = split_prisms(&mesh, mirror).map_err(|e| bad(&input, e))?;
                check::check(&mesh).map_err(|e| bad(&input, e))?;
            }
            if renumber {
                renumber::renumber_nodes(&mut mesh);
                renumber::renumber_cells(&mut mesh).map_err(|e| bad(&input, e))?;
            }
            write(&mesh, &output)
        }
        MeshAction::Generate { shape } => generate(shape),
    }
}

fn bad(file: &Path, e: MeshError) -> Failure {
    match e {
        MeshError::Invalid(what) => Failure::input(format!("{}: {what}", file.display())),
        e => Failure::input(e),
    }
}

/// Reads `file` by its extension; the mesh and the seconds it took.
pub fn read(file: &Path) -> Result<(Mesh, f64), Failure> {
    let start = Instant::now();
    let mesh = match extension(file).as_str() {
        "msh" => gmsh::read(file),
        "su2" => su2::read(file),
        other => {
            return Err(Failure::input(format!(
                "{}: cannot read meshes of type \"{other}\" (.msh or .su2)",
                file.display()
            )))
        }
    };
    Ok((
        mesh.map_err(|e| bad(file, e))?,
        start.elapsed().as_secs_f64(),
    ))
}

fn extension(file: &Path) -> String {
    file.extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default()
}

/// Writes `mesh` to `file` by its extension.
fn write(mesh: &Mesh, file: &Path) -> Result<(), Failure> {
    let written = match extension(file).as_str() {
        "vtu" => vtu::write(file, mesh, &[], &[], true),
        "su2" => su2::write(mesh, file),
        other => {
            return Err(Failure::input(format!(
                "{}: cannot write meshes of type \"{other}\" (.vtu or .su2)",
                file.display()
            )))
        }
    };
    written.map_err(Failure::runtime)?;
    println!(
        "wrote {} ({} nodes, {} cells)",
        file.display(),
        mesh.nodes.len(),
        mesh.cells.len()
    );
    Ok(())
}

fn info(file: &Path) -> Result<(), Failure> {
    let (mut mesh, seconds) = read(file)?;
    let cells = mesh.cells.len();
    println!(
        "{}: {}D, {} nodes, {} cells, read in {seconds:.3} s ({:.2} M cells/s)",
        file.display(),
        mesh.dim,
        mesh.nodes.len(),
        cells,
        cells as f64 / seconds / 1e6
    );
    for (kind, count) in mesh.cells.counts() {
        println!("  {count:>10} {}", kind.name());
    }
    let report = check::check(&mesh).map_err(|e| bad(file, e))?;
    println!("checks: passed");
    println!(
        "faces: {} internal, {} boundary",
        report.faces[0], report.faces[1]
    );
    for (name, count) in mesh.patches.iter().zip(&report.patch_faces) {
        println!("  patch {name}: {count} faces");
    }
    println!(
        "volume {:.12e}, smallest cell {:.3e}, largest aspect ratio (longest / shortest edge) {:.2}",
        report.volume, report.min_volume, report.max_aspect
    );
    let faces = topology::faces(&mesh).map_err(|e| bad(file, e))?;
    let derived = faces.nodes.bytes() + faces.cells.len() * 9;
    println!(
        "memory: {:.1} bytes per cell for the mesh, {:.1} more for its faces",
        mesh.bytes() as f64 / cells as f64,
        derived as f64 / cells as f64
    );
    let cell_graph = topology::cell_graph(cells, &faces).bandwidth(None);
    let [nodes_before, nodes_after] = renumber::renumber_nodes(&mut mesh);
    let [_, cells_after] = renumber::renumber_cells(&mut mesh).map_err(|e| bad(file, e))?;
    println!(
        "bandwidth: nodes {nodes_before} (reverse Cuthill–McKee: {nodes_after}), cells \
         {cell_graph} ({cells_after})"
    );
    Ok(())
}

fn generate(shape: Shape) -> Result<(), Failure> {
    let invalid = |e: MeshError| Failure::input(e);
    let (mesh, out) = match shape {
        Shape::Box {
            cells,
            n,
            lengths,
            jitter,
            shuffle,
            out,
        } => {
            let fill = match cells {
                Fill::Hex => BoxCells::Hex,
                Fill::Prism => BoxCells::Prism,
                Fill::Tet5 => BoxCells::Tet5,
                Fill::Tet6 => BoxCells::Tet6,
            };
            let mut mesh = generate::box_mesh(
                fill,
                [n[0], n[1], n[2]],
                [lengths[0], lengths[1], lengths[2]],
            )
            .map_err(invalid)?;
            if !(0.0..=0.25).contains(&jitter) {
                return Err(Failure::input(format!(
                    "--jitter {jitter}: a fraction of the shortest edge, from 0 to 0.25"
                )));
            }
            if jitter > 0.0 {
                generate::jitter(&mut mesh, jitter, 1).map_err(invalid)?;
            }
            if let Some(seed) = shuffle {
                generate::shuffle(&mut mesh, seed);
            }
            (mesh, out)
        }
        Shape::Cube { level, base, out } => {
            (generate::cube_family(base, level).map_err(invalid)?, out)
        }
        Shape::Slab { n, out } => (generate::slab(n).map_err(invalid)?, out),
    };
    check::check(&mesh).map_err(invalid)?;
    write(&mesh, &out)
}
