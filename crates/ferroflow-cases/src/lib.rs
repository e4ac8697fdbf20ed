//! ferroflow-cases: what a user runs. The case-file schema and its validation ([`case`]), the
//! built-in problems (lid-driven [`cavity`], buoyancy-driven [`convection`], manufactured
//! solutions [`mms`]), finite-element cases ([`fem`], the lid cube's centrelines
//! [`fem_centrelines`]), finite-volume cases ([`fv`]), published reference data
//! ([`reference`]), what a run's fields show ([`post`]), the summary of a run ([`summary`]),
//! whether the scheme resolves a case ([`resolvable`]) and the key tables of `docs/cases.md`
//! ([`docs`]).
#![deny(missing_docs)]

pub mod case;
pub mod cavity;
pub mod convection;
pub mod docs;
pub mod fem;
pub mod fem_centrelines;
pub mod fv;
pub mod mms;
pub mod post;
pub mod reference;
pub mod resolvable;
pub mod summary;
pub mod walls;

pub use case::{Case, CaseError};
