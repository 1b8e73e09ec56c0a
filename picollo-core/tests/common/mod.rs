//! What several of picollo-core's test files share.

/// Heap cells for tests (picollo-alloc has the real heap storage).
pub struct Cells(pub Vec<u64>);

impl picollo_core::Storage for Cells {
    type Item = u64;
    fn as_slice(&self) -> &[u64] {
        &self.0
    }
}

impl picollo_core::StorageMut for Cells {
    fn as_mut_slice(&mut self) -> &mut [u64] {
        &mut self.0
    }
}
