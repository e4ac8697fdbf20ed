//! A global allocator that starts each large array at its own place within a page.
//!
//! The system allocator maps every large array to fresh pages and starts it at the same
//! offset within a page, so the state's arrays, laid out alike, put node `o` of every array at
//! the same address modulo 4 KiB: the pass's stores to the new state and its loads of the old
//! one then look alike to the core's store-to-load check (4K aliasing), and the same rows of
//! all arrays compete for the same L1 sets. Here large arrays start on a cache line at
//! rotating offsets within the page; no index, value or arithmetic changes.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Allocations of at least this many bytes are staggered; smaller ones come straight from
/// the system allocator.
const LARGE: usize = 1 << 20;
const PAGE: usize = 4096;
/// Cache lines between the starts of consecutive large allocations, and how many distinct
/// starts there are before they repeat: 12 starts 5 lines (320 bytes) apart cover 3.75 KiB.
const LINES_APART: usize = 5;
const STARTS: usize = 12;

/// The allocator; install it with `#[global_allocator]` in a program.
pub struct Staggered {
    count: AtomicUsize,
}

impl Staggered {
    /// An allocator whose first large allocation starts one cache line into a page.
    pub const fn new() -> Staggered {
        Staggered {
            count: AtomicUsize::new(0),
        }
    }
}

impl Default for Staggered {
    fn default() -> Staggered {
        Staggered::new()
    }
}

/// Whether an allocation of `layout` is staggered (and so must be freed as one).
fn staggered(layout: Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= 64
}

/// The system allocation that holds a staggered one of `layout`: a page more, so that any
/// start within a page fits, and one more for the word before the start.
fn outer(layout: Layout) -> Layout {
    // SAFETY: the size was a valid layout's (so below isize::MAX) plus two pages, and the
    // alignment of a usize is a power of two.
    unsafe { Layout::from_size_align_unchecked(layout.size() + 2 * PAGE, align_of::<usize>()) }
}

impl Staggered {
    /// Places a staggered allocation in the system allocation at `base`, and records `base`
    /// in the word before the start, where `dealloc` finds it.
    unsafe fn place(&self, base: *mut u8) -> *mut u8 {
        if base.is_null() {
            return base;
        }
        let n = self.count.fetch_add(1, Ordering::Relaxed) % STARTS;
        let within = 64 * (1 + n * LINES_APART);
        let mut skip = (within + PAGE - base as usize % PAGE) % PAGE;
        if skip < size_of::<usize>() {
            skip += PAGE;
        }
        // SAFETY: `skip` is below two pages, which `outer` added, and at least a word.
        unsafe {
            let start = base.add(skip);
            start.cast::<usize>().sub(1).write_unaligned(base as usize);
            start
        }
    }
}

// SAFETY: staggered allocations are freed with the base `place` recorded and the outer layout
// they were made with; all others go to and come from the system allocator unchanged.
unsafe impl GlobalAlloc for Staggered {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if staggered(layout) {
            unsafe { self.place(System.alloc(outer(layout))) }
        } else {
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // Zeroed by the system (fresh pages), so that no page is touched here.
        if staggered(layout) {
            unsafe { self.place(System.alloc_zeroed(outer(layout))) }
        } else {
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if staggered(layout) {
            unsafe {
                let base = ptr.cast::<usize>().sub(1).read_unaligned() as *mut u8;
                System.dealloc(base, outer(layout));
            }
        } else {
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `new_size` with `layout`'s alignment is a valid layout (the caller's promise).
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if !staggered(layout) && !staggered(new) {
            // Small arrays keep the system's growth in place.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        unsafe {
            let moved = self.alloc(new);
            if !moved.is_null() {
                std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            moved
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_arrays_start_on_distinct_lines_of_a_page_and_keep_their_bytes() {
        let a = Staggered::new();
        let layout = Layout::from_size_align(LARGE, 8).unwrap();
        // SAFETY: each block is written and read within its size, then freed with its layout.
        unsafe {
            let blocks: Vec<*mut u8> = (0..STARTS)
                .map(|i| {
                    let p = if i % 2 == 0 {
                        a.alloc(layout)
                    } else {
                        a.alloc_zeroed(layout)
                    };
                    assert!(!p.is_null());
                    if i % 2 == 1 {
                        assert!((0..LARGE).all(|b| *p.add(b) == 0));
                    }
                    p.write_bytes(i as u8 + 1, LARGE);
                    p
                })
                .collect();
            let mut within: Vec<usize> = blocks.iter().map(|p| *p as usize % PAGE).collect();
            assert!(within.iter().all(|w| w % 64 == 0));
            within.sort();
            within.dedup();
            assert_eq!(within.len(), STARTS);
            for (i, p) in blocks.into_iter().enumerate() {
                assert!((0..LARGE).all(|b| *p.add(b) == i as u8 + 1));
                a.dealloc(p, layout);
            }
        }
    }

    #[test]
    fn small_arrays_are_the_system_allocators() {
        let a = Staggered::new();
        let layout = Layout::from_size_align(LARGE - 1, 8).unwrap();
        // SAFETY: allocated and freed with the same layout.
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null());
            a.dealloc(p, layout);
        }
        assert_eq!(a.count.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn growing_past_the_threshold_keeps_the_bytes_and_staggers() {
        let a = Staggered::new();
        let small = Layout::from_size_align(4096, 8).unwrap();
        // SAFETY: grown and freed with the layouts it had; reads stay within the sizes.
        unsafe {
            let p = a.alloc(small);
            p.write_bytes(7, small.size());
            let q = a.realloc(p, small, 2 * LARGE);
            assert!((0..small.size()).all(|b| *q.add(b) == 7));
            assert_eq!(q as usize % PAGE, 64);
            let r = a.realloc(q, Layout::from_size_align(2 * LARGE, 8).unwrap(), 100);
            assert!((0..100).all(|b| *r.add(b) == 7));
            a.dealloc(r, Layout::from_size_align(100, 8).unwrap());
        }
    }
}
