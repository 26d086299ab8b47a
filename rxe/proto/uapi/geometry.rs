// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Queue geometry: slot size and count for each kind of ring.

use core::ops::Range;

#[cfg(test)]
use super::layout::{put, ShortBuffer};
use super::layout::{
    queue_buf, small, to_usize, CQE_LEN, HEADER_LEN, RECV_WQE_LEN, SEND_WQE_LEN, SGE_LEN,
};
use super::limits;

/// A queue size request the driver refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SizeError {
    /// Outside the device limits (`EINVAL` in C).
    Invalid,
    /// The buffer would not be addressable (`ENOMEM` in C).
    TooLarge,
}

/// The shape of a shared queue, as `rxe_queue_init()` computes it.
///
/// The kernel keeps this copy; user space gets one in the queue header but may
/// overwrite it, so every index taken from user memory goes through [`Self::mask`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueGeometry {
    log2_elem_size: u32,
    index_mask: u32,
}

impl QueueGeometry {
    /// A queue for `num_elem` elements of `elem_size` bytes. Elements are
    /// padded to a power of two of at least a cache line; one slot always
    /// stays empty so that full and empty differ, hence `num_elem + 1` slots
    /// rounded up to a power of two.
    pub(crate) fn new(
        num_elem: u32,
        elem_size: u32,
        cache_line: u32,
    ) -> Result<QueueGeometry, SizeError> {
        let elem = elem_size
            .max(cache_line)
            .checked_next_power_of_two()
            .ok_or(SizeError::TooLarge)?;
        let slots = num_elem
            .checked_add(1)
            .and_then(u32::checked_next_power_of_two)
            .ok_or(SizeError::TooLarge)?;
        let g = QueueGeometry {
            log2_elem_size: elem.trailing_zeros(),
            index_mask: slots - 1,
        };
        g.buf_size_checked().ok_or(SizeError::TooLarge)?;
        Ok(g)
    }

    fn buf_size_checked(&self) -> Option<usize> {
        let slots = u64::from(self.index_mask) + 1;
        let bytes = slots
            .checked_shl(self.log2_elem_size)?
            .checked_add(HEADER_LEN)?;
        usize::try_from(bytes).ok()
    }

    pub(crate) const fn log2_elem_size(&self) -> u32 {
        self.log2_elem_size
    }

    pub(crate) const fn index_mask(&self) -> u32 {
        self.index_mask
    }

    /// The padded element size, the stride between slots.
    pub(crate) const fn elem_size(&self) -> usize {
        1usize << self.log2_elem_size
    }

    #[cfg(test)] // Only the host tests use it.
    pub(crate) const fn num_slots(&self) -> u32 {
        self.index_mask + 1
    }

    /// How many elements fit: what create returns as the actual `max_wr`/`cqe`.
    pub(crate) const fn capacity(&self) -> u32 {
        self.index_mask
    }

    /// Header plus slots: the size of the `vmalloc_user` buffer and its mmap.
    pub(crate) fn buf_size(&self) -> usize {
        // `new()` checked that this fits.
        self.buf_size_checked().unwrap_or(usize::MAX)
    }

    /// An index from user memory (or anywhere) reduced to a slot number.
    pub(crate) const fn mask(&self, index: u32) -> u32 {
        index & self.index_mask
    }

    /// `queue_next_index()`.
    pub(crate) const fn next(&self, index: u32) -> u32 {
        index.wrapping_add(1) & self.index_mask
    }

    /// `queue_count()`: elements between consumer and producer.
    pub(crate) const fn count(&self, producer: u32, consumer: u32) -> u32 {
        producer.wrapping_sub(consumer) & self.index_mask
    }

    /// `queue_empty()`.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) const fn is_empty(&self, producer: u32, consumer: u32) -> bool {
        self.count(producer, consumer) == 0
    }

    /// `queue_full()`.
    pub(crate) const fn is_full(&self, producer: u32, consumer: u32) -> bool {
        producer.wrapping_add(1).wrapping_sub(consumer) & self.index_mask == 0
    }

    /// Byte range of slot `index` (masked first) within the whole buffer.
    pub(crate) fn slot_range(&self, index: u32) -> Range<usize> {
        let start = queue_buf::DATA + (to_usize(self.mask(index)) << self.log2_elem_size);
        start..start + self.elem_size()
    }

    /// Writes `log2_elem_size` and `index_mask` into a fresh queue header.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn write_header(&self, header: &mut [u8]) -> Result<(), ShortBuffer> {
        put(
            header,
            queue_buf::LOG2_ELEM_SIZE,
            &self.log2_elem_size.to_ne_bytes(),
        )?;
        put(
            header,
            queue_buf::INDEX_MASK,
            &self.index_mask.to_ne_bytes(),
        )
    }
}

/// The SQ of a new QP (`rxe_init_sq()`). Inline data shares the SGE area, so
/// the area is the larger of the two requests and both limits grow to fill it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SqGeometry {
    pub(crate) queue: QueueGeometry,
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) max_inline: u32,
}

/// The RQ of a QP or an SRQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RqGeometry {
    pub(crate) queue: QueueGeometry,
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
}

/// Send queue caps after `rxe_qp_chk_cap()`.
pub(crate) fn sq_geometry(
    max_send_wr: u32,
    max_send_sge: u32,
    max_inline: u32,
    cache_line: u32,
) -> Result<SqGeometry, SizeError> {
    if max_send_wr > limits::MAX_QP_WR
        || max_send_sge > limits::MAX_SGE
        || max_inline > limits::MAX_INLINE_DATA
    {
        return Err(SizeError::Invalid);
    }
    // Bounded by the checks above: at most 512 bytes.
    let area = (max_send_sge * SGE_LEN).max(max_inline);
    let queue = QueueGeometry::new(max_send_wr, area + SEND_WQE_LEN, cache_line)?;
    Ok(SqGeometry {
        queue,
        max_wr: queue.capacity(),
        max_sge: area / SGE_LEN,
        max_inline: area,
    })
}

/// Receive queue caps of a QP without SRQ after `rxe_qp_chk_cap()`.
pub(crate) fn rq_geometry(
    max_recv_wr: u32,
    max_recv_sge: u32,
    cache_line: u32,
) -> Result<RqGeometry, SizeError> {
    if max_recv_wr > limits::MAX_QP_WR || max_recv_sge > limits::MAX_SGE {
        return Err(SizeError::Invalid);
    }
    recv_queue(max_recv_wr, max_recv_sge, cache_line)
}

/// An SRQ after `rxe_srq_chk_init()`: at least one WR and one SGE.
pub(crate) fn srq_geometry(
    max_wr: u32,
    max_sge: u32,
    cache_line: u32,
) -> Result<RqGeometry, SizeError> {
    if max_wr == 0 || max_wr > limits::MAX_SRQ_WR || max_sge > limits::MAX_SRQ_SGE {
        return Err(SizeError::Invalid);
    }
    recv_queue(
        max_wr.max(limits::MIN_SRQ_WR),
        max_sge.max(limits::MIN_SRQ_SGE),
        cache_line,
    )
}

fn recv_queue(max_wr: u32, max_sge: u32, cache_line: u32) -> Result<RqGeometry, SizeError> {
    // max_sge <= 32 here, so the element is at most 552 bytes.
    let elem = RECV_WQE_LEN + max_sge * SGE_LEN;
    let queue = QueueGeometry::new(max_wr, elem, cache_line)?;
    Ok(RqGeometry {
        queue,
        max_wr: queue.capacity(),
        max_sge,
    })
}

/// A CQ of `cqe` entries after `rxe_cq_chk_attr()`.
pub(crate) fn cq_geometry(cqe: u32, cache_line: u32) -> Result<QueueGeometry, SizeError> {
    if cqe == 0 || cqe > limits::MAX_CQE {
        return Err(SizeError::Invalid);
    }
    QueueGeometry::new(cqe, small(CQE_LEN), cache_line)
}
