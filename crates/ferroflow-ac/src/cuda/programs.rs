//! The scheme's kernel sources (`kernels/*.cu`, embedded) and their builds: the real type, the
//! dimension, the launch shape and the entry point as `-D` macros.
use super::launch::LaunchShape;
use super::tune;
use ferroflow_core::GHOST;
use ferroflow_cuda::compile::{Header, PRELUDE};
use ferroflow_cuda::{Build, KernelSource, Scalar};

/// The headers the scheme's `.cu` files include.
const HEADERS: &[Header] = &[
    PRELUDE,
    ("grid.cuh", include_str!("../../kernels/grid.cuh")),
    (
        "ac_formulas.cuh",
        include_str!("../../kernels/ac_formulas.cuh"),
    ),
    (
        "ac_residual.cuh",
        include_str!("../../kernels/ac_residual.cuh"),
    ),
];

/// The scheme's `.cu` files.
pub const SOURCES: [KernelSource; 4] = [
    KernelSource {
        name: "ac_step.cu",
        text: include_str!("../../kernels/ac_step.cu"),
        headers: HEADERS,
    },
    KernelSource {
        name: "ac_implicit.cu",
        text: include_str!("../../kernels/ac_implicit.cu"),
        headers: HEADERS,
    },
    KernelSource {
        name: "boundary.cu",
        text: include_str!("../../kernels/boundary.cu"),
        headers: HEADERS,
    },
    KernelSource {
        name: "multigrid.cu",
        text: include_str!("../../kernels/multigrid.cu"),
        headers: HEADERS,
    },
];

/// Which entry point of `ac_step.cu` a build holds (with or without source terms and the
/// energy equation), and the order of its differences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// Source terms (manufactured solutions).
    pub source: bool,
    /// The energy equation.
    pub energy: bool,
    /// Differences of fourth order (`numerics.differences`), not second.
    pub fourth: bool,
}

impl Variant {
    /// Every entry point, with differences of either order.
    pub const ALL: [Variant; 8] = [
        Variant::new(false, false),
        Variant::new(true, false),
        Variant::new(false, true),
        Variant::new(true, true),
        Variant::new(false, false).fourth(),
        Variant::new(true, false).fourth(),
        Variant::new(false, true).fourth(),
        Variant::new(true, true).fourth(),
    ];

    /// The entry point with or without source terms and the energy equation, second-order
    /// differences.
    pub const fn new(source: bool, energy: bool) -> Variant {
        Variant {
            source,
            energy,
            fourth: false,
        }
    }

    /// The same with fourth-order differences.
    pub const fn fourth(self) -> Variant {
        Variant {
            fourth: true,
            ..self
        }
    }

    /// The variant `problem` needs.
    pub fn of<R: ferroflow_core::Real>(problem: &crate::Problem<R>) -> Variant {
        Variant {
            source: problem.source.is_some(),
            energy: problem.energy.is_some(),
            fourth: problem.numerics.differences == crate::Differences::Fourth,
        }
    }

    /// The entry point's name.
    pub fn entry(self) -> &'static str {
        match (self.energy, self.source) {
            (false, false) => "ac_step",
            (false, true) => "ac_step_src",
            (true, false) => "ac_step_energy",
            (true, true) => "ac_step_energy_src",
        }
    }

    /// ", fourth order" in build labels where the differences are of fourth order.
    pub(super) fn order(self) -> &'static str {
        if self.fourth {
            ", fourth order"
        } else {
            ""
        }
    }
}

/// One of the scheme's programs with its specialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// `ac_step.cu`: the fused interior pass, one entry point for one dimension and launch
    /// shape.
    AcStep {
        /// 2 or 3.
        dim: usize,
        /// Launch shape.
        shape: LaunchShape,
        /// The entry point.
        variant: Variant,
    },
    /// `ac_implicit.cu`: the implicit relaxation's kernels for one dimension and entry point,
    /// with the operator in precision `implicit`.
    AcImplicit {
        /// 2 or 3.
        dim: usize,
        /// With source terms and the energy equation.
        variant: Variant,
        /// Precision of the operator and the increments.
        implicit: Scalar,
    },
    /// `boundary.cu`: wall pressure extrapolation (`fill_walls`) and the packing of block
    /// interfaces (`halo_box`).
    Boundary,
    /// `multigrid.cu`: the transfers between multigrid levels.
    Multigrid,
}

impl Program {
    /// The build of this program in `precision`, with or without fused multiply-adds.
    pub fn build(self, precision: Scalar, fmad: bool) -> Build {
        let [ac_step, ac_implicit, boundary, multigrid] = SOURCES;
        let source = match self {
            Program::AcStep { .. } => ac_step,
            Program::AcImplicit { .. } => ac_implicit,
            Program::Boundary => boundary,
            Program::Multigrid => multigrid,
        };
        let build = Build {
            fmad,
            ..Build::new(source, precision)
        }
        .define("GHOST", GHOST);
        match self {
            Program::AcStep {
                dim,
                shape,
                variant,
            } => {
                let [x, y, z] = shape.block;
                Build {
                    label: format!("{}, {dim}D, {shape}{}", variant.entry(), variant.order()),
                    ..build
                }
                .define("WITH_SOURCE", variant.source as u8)
                .define("WITH_ENERGY", variant.energy as u8)
                .define("FOURTH", variant.fourth as u8)
                .define("DIM", dim)
                .define("BLOCK_X", x)
                .define("BLOCK_Y", y)
                .define("BLOCK_Z", z)
                .define("MARCH", shape.march)
                .define("TILE", shape.tile as u8)
                .define("MIN_BLOCKS", shape.min_blocks)
            }
            // The implicit relaxation divides and takes roots once per node: IEEE there always.
            // The explicit pass's f32 builds trade them for the hardware approximations, which
            // made that kernel instruction-bound otherwise; they set the local time step and
            // the spectral radius, not the discrete equations' form.
            Program::AcImplicit {
                dim,
                variant,
                implicit,
            } => Build {
                label: format!("{dim}D, {variant:?}, operator {implicit:?}"),
                exact_f32: true,
                ..build
            }
            .define("WITH_SOURCE", variant.source as u8)
            .define("WITH_ENERGY", variant.energy as u8)
            .define("FOURTH", variant.fourth as u8)
            .define("DIM", dim)
            .define("IMPL", implicit.c_type()),
            Program::Boundary | Program::Multigrid => build,
        }
    }
}

/// Every distinct build the backend can ask for: `ac_step` for each precision, dimension,
/// candidate launch shape and entry point, the other programs for each precision, and the
/// runtime's reduction. CI compiles them all.
pub fn every_build(fmad: bool) -> Vec<Build> {
    let mut programs = Vec::new();
    for dim in [2, 3] {
        for shape in tune::candidates(dim) {
            for variant in Variant::ALL {
                programs.push(Program::AcStep {
                    dim,
                    shape,
                    variant,
                });
            }
        }
        for variant in Variant::ALL {
            for implicit in Scalar::ALL {
                programs.push(Program::AcImplicit {
                    dim,
                    variant,
                    implicit,
                });
            }
        }
    }
    programs.push(Program::Boundary);
    programs.push(Program::Multigrid);
    let mut builds: Vec<Build> = Scalar::ALL
        .iter()
        .flat_map(|&p| programs.iter().map(move |program| program.build(p, fmad)))
        .collect();
    builds.push(ferroflow_cuda::reduce_build());
    builds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_resolved_once_per_header() {
        let src = SOURCES[0].expanded();
        assert!(!src.contains("#include"));
        assert_eq!(src.matches("struct Grid {").count(), 1);
        assert!(src.contains("fourth_difference"));
    }

    #[test]
    fn every_kernel_file_has_a_source_and_every_source_a_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        if !dir.is_dir() {
            println!(
                "skipped: {} is not here (test executable moved)",
                dir.display()
            );
            return;
        }
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        let mut named: Vec<String> = HEADERS[1..].iter().map(|(n, _)| n.to_string()).collect();
        named.extend(SOURCES.iter().map(|s| s.name.to_string()));
        named.sort();
        assert_eq!(files, named);
    }

    #[test]
    fn step_options_carry_the_shape_and_others_do_not() {
        let shape = LaunchShape::new([16, 4, 4], 2);
        let step = Program::AcStep {
            dim: 3,
            shape,
            variant: Variant::new(true, false),
        }
        .build(Scalar::F64, false);
        let opts = step.options("sm_90");
        for o in [
            "--gpu-architecture=sm_90",
            "--fmad=false",
            "-DREAL=double",
            "-DGHOST=2",
            "-DDIM=3",
            "-DBLOCK_X=16",
            "-DBLOCK_Y=4",
            "-DBLOCK_Z=4",
            "-DMARCH=2",
            "-DTILE=0",
            "-DMIN_BLOCKS=0",
            "-DWITH_SOURCE=1",
            "-DWITH_ENERGY=0",
            "-DFOURTH=0",
        ] {
            assert!(opts.contains(&o.to_string()), "{o} missing from {opts:?}");
        }
        let boundary = Program::Boundary.build(Scalar::F64, false);
        assert!(!boundary
            .options("sm_90")
            .iter()
            .any(|o| o.contains("BLOCK")));
    }

    #[test]
    fn f32_rounding_is_exact_in_the_implicit_kernels_only() {
        let variant = Variant::new(false, false);
        let step = Program::AcStep {
            dim: 2,
            shape: tune::DEFAULT_SHAPE,
            variant,
        };
        let implicit = Program::AcImplicit {
            dim: 2,
            variant,
            implicit: Scalar::F32,
        };
        let div = |p: Program| p.build(Scalar::F32, false).options("sm_90")[3].clone();
        assert_eq!(div(step), "--prec-div=false");
        assert_eq!(div(implicit), "--prec-div=true");
    }
}
