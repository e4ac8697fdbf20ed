//! Generated meshes.
