//! Checks a mesh must pass before a solver uses it.
