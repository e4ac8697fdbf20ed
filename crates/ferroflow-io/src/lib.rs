//! ferroflow-io: the file formats results are written in, with no knowledge of schemes or
//! cases: VTK XML for ParaView and VisIt ([`vtk`]), CSV tables and JSON documents
//! ([`table`]), each file written whole or not at all ([`file`]).
#![deny(missing_docs)]

pub mod file;
pub mod table;
pub mod vtk;
