//! Page-locked ("pinned") host staging memory for transfers.
//!
//! A buffer allocated with `CL_MEM_ALLOC_HOST_PTR` and mapped once is host
//! memory the driver can DMA from and to directly; reads and writes of device
//! buffers from it skip the driver's bounce copy through its own pinned pool
//! (on NVIDIA about twice the bandwidth of pageable memory). Methods fill a
//! [`PinnedHost`] where they would fill a `Vec` (e.g. while narrowing class
//! codes to bytes) and transfer from it.

use super::{Device, Queue, cl_error};
use mapfilter_base::error::Result;
use opencl3::memory::{
    Buffer, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE, ClMem,
};
use opencl3::types::{CL_BLOCKING, cl_mem};

/// `len` elements of mapped, page-locked host memory.
pub struct PinnedHost<T> {
    device: Device,
    buffer: Buffer<T>,
    ptr: *mut T,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; the pointer is only
// dereferenced through &self / &mut self borrows.
unsafe impl<T: Send> Send for PinnedHost<T> {}
unsafe impl<T: Sync> Sync for PinnedHost<T> {}

impl<T: Copy> PinnedHost<T> {
    /// Allocates and maps `len` elements (at least one).
    pub fn new(device: &Device, len: usize) -> Result<Self> {
        let len = len.max(1);
        let buffer = device.buffer::<T>(len, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE)?;
        let mut ptr: cl_mem = std::ptr::null_mut();
        // SAFETY: blocking map of the whole buffer; the pointer stays valid
        // until the unmap in Drop.
        unsafe {
            device.queue(Queue::Upload).enqueue_map_buffer(
                &buffer,
                CL_BLOCKING,
                CL_MAP_READ | CL_MAP_WRITE,
                0,
                len * std::mem::size_of::<T>(),
                &mut ptr,
                &[],
            )
        }
        .map_err(cl_error("mapping pinned host memory"))?;
        Ok(PinnedHost {
            device: device.clone(),
            buffer,
            ptr: ptr as *mut T,
            len,
        })
    }

    /// Grows `slot` to hold at least `len` elements (contents not kept).
    pub fn ensure<'a>(
        slot: &'a mut Option<Self>,
        device: &Device,
        len: usize,
    ) -> Result<&'a mut Self> {
        if slot.as_ref().is_none_or(|p| p.len < len) {
            *slot = None; // unmap the old one first
            *slot = Some(Self::new(device, len)?);
        }
        Ok(slot.as_mut().expect("set above"))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[T] {
        // SAFETY: mapped for len elements; T: Copy, any bit pattern the
        // device or we wrote is a valid T for the integer types used here.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T> Drop for PinnedHost<T> {
    fn drop(&mut self) {
        // SAFETY: unmapping the pointer mapped in `new`; nothing uses it after.
        unsafe {
            let q = self.device.queue(Queue::Upload);
            if q.enqueue_unmap_mem_object(self.buffer.get(), self.ptr as cl_mem, &[])
                .is_ok()
            {
                let _ = q.finish();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_device;
    use opencl3::memory::CL_MEM_READ_WRITE;

    #[test]
    fn pinned_round_trip() {
        let Some(dev) = test_device() else { return };
        let mut up = PinnedHost::<u8>::new(&dev, 1000).unwrap();
        up.as_mut_slice()
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = (i % 251) as u8);
        let mut buf = dev.buffer::<u8>(1000, CL_MEM_READ_WRITE).unwrap();
        dev.upload(&mut buf, up.as_slice()).unwrap();
        let mut slot = None;
        let down = PinnedHost::<u8>::ensure(&mut slot, &dev, 1000).unwrap();
        dev.download(&buf, down.as_mut_slice()).unwrap();
        assert_eq!(down.as_slice(), up.as_slice());
        assert!(PinnedHost::ensure(&mut slot, &dev, 10).unwrap().len() >= 1000);
    }
}
