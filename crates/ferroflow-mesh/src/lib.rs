//! Unstructured meshes for the finite-element and finite-volume solvers, independent of the
//! structured grid crates.
//!
//! - [`element`]: the element kinds (tetrahedra, pyramids, prisms, hexahedra, and the
//!   triangles, quadrilaterals and lines that bound them or make 2D meshes), their node
//!   orders (VTK's, which every reader converts to) and local faces.
//! - [`mesh`]: [`Mesh`], node coordinates and elements in compact (CSR) storage, boundary
//!   faces grouped in named patches.
//! - [`topology`]: what is derived on demand: faces with their cells, area vectors, volumes,
//!   centroids, the node graph, median-dual volumes.
//! - [`check`]: the checks a mesh must pass before a solver uses it, with errors that name the
//!   cell or face.
//! - [`generate`]: box meshes of hexahedra, prisms and tetrahedra, the unit-cube family, slabs.
//! - [`renumber`]: reverse Cuthill–McKee for nodes or cells.
//! - [`colour`]: greedy colourings of faces (by cell) and edges (by node).
//! - [`partition`]: recursive coordinate bisection and the ghost cells of each part.
//! - [`gmsh`]: the Gmsh reader, MSH 2.2 and 4.1, ASCII and binary.
//! - [`su2`]: SU2's native mesh format, read and written.
//! - [`extrude`]: a 2D mesh extruded one cell thick into a 3D mesh of prisms and hexahedra.
//! - [`tetrahedra`]: prisms split into tetrahedra, keeping an extruded mesh's mirror symmetries.
//! - [`vtu`]: `.vtu` files (VTK XML unstructured grids) of the cells or the boundary.
pub mod check;
pub mod colour;
pub mod element;
pub mod extrude;
pub mod generate;
pub mod gmsh;
pub mod mesh;
pub mod partition;
pub mod renumber;
pub mod su2;
pub mod tetrahedra;
pub mod topology;
pub mod vtu;

pub use element::Kind;
pub use mesh::{Elements, Mesh, MeshError};
