use crate::{BackendError, Layout, Real};
use rayon::prelude::*;

/// Host copy of a block's variables, one array per variable (structure of arrays).
/// Variable order: `p, u, v[, w][, T]`.
#[derive(Debug, PartialEq)]
pub struct Fields<R> {
    /// Memory layout shared by every variable.
    pub layout: Layout,
    /// One array of `layout.len` values per variable.
    pub vars: Vec<Vec<R>>,
}

/// Copies in parallel, so that the page faults of a large grid's fresh arrays are spread over
/// the cores.
impl<R: Copy + Send + Sync> Clone for Fields<R> {
    fn clone(&self) -> Fields<R> {
        let copy = |src: &Vec<R>| {
            let mut v = Vec::new();
            src.par_iter().copied().collect_into_vec(&mut v);
            v
        };
        Fields {
            layout: self.layout,
            vars: self.vars.iter().map(copy).collect(),
        }
    }
}

impl<R: Real> Fields<R> {
    /// `count` variables, all zero.
    pub fn zeros(layout: Layout, count: usize) -> Fields<R> {
        Fields {
            layout,
            // One zeroed allocation each (`vec![v; n]` would copy the first into the others,
            // touching every page of a large grid once more).
            vars: (0..count).map(|_| vec![R::zero(); layout.len]).collect(),
        }
    }

    /// Checks that these fields can be uploaded as the state of a grid of layout `layout` with
    /// `vars` variables; the error names `backend`.
    pub fn check_state(
        &self,
        layout: &Layout,
        vars: usize,
        backend: &'static str,
    ) -> Result<(), BackendError> {
        if self.layout == *layout && self.vars.len() == vars {
            Ok(())
        } else {
            Err(BackendError::Failed {
                backend,
                message: "uploaded state does not match the problem's grid".into(),
            })
        }
    }

    /// Converts to another precision (used to compare f32 and f64 runs, and to upload).
    pub fn cast<S: Real>(&self) -> Fields<S> {
        Fields {
            layout: self.layout,
            vars: self
                .vars
                .iter()
                .map(|v| v.iter().map(|x| S::of(x.f64())).collect())
                .collect(),
        }
    }

    /// Value of variable `var` at node `(i, j, k)`.
    pub fn at(&self, var: usize, i: usize, j: usize, k: usize) -> R {
        self.vars[var][self.layout.index(i as isize, j as isize, k as isize)]
    }

    /// First non-finite value among the nodes, as `(variable, node)`.
    pub fn first_non_finite(&self) -> Option<(usize, [usize; 3])> {
        let mut found = None;
        for (v, data) in self.vars.iter().enumerate() {
            self.layout.for_each_node(|i, j, k, o| {
                if found.is_none() && !data[o].is_finite() {
                    found = Some((v, [i, j, k]));
                }
            });
        }
        found
    }

    /// The node where variable `var` is farthest outside `[lo, hi]`, with its value; none if
    /// every node is inside.
    pub fn farthest_outside(&self, var: usize, lo: f64, hi: f64) -> Option<([usize; 3], f64)> {
        let mut farthest: Option<([usize; 3], f64, f64)> = None;
        self.layout.for_each_node(|i, j, k, o| {
            let x = self.vars[var][o].f64();
            let beyond = (lo - x).max(x - hi);
            if beyond > 0.0 && farthest.is_none_or(|f| beyond > f.2) {
                farthest = Some(([i, j, k], x, beyond));
            }
        });
        farthest.map(|(node, x, _)| (node, x))
    }
}
