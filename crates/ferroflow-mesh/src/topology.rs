//! Derived topology and geometry.
