// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * C glue of rxe_rs, memory: vmalloc'd user queues and their mmap, pinned
 * umems and their pages, page mapping and references, persistent memory,
 * and the umems of on-demand paging. Nothing here holds driver logic.
 */
#include <linux/version.h>
#include <linux/highmem.h>
#include <linux/ioport.h>
#include <linux/libnvdimm.h>
#include <linux/scatterlist.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/net.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <linux/hmm.h>
#include <rdma/ib_verbs.h>

#include "helpers.h"

void *rxe_rs_vmalloc_user(size_t size)
{
	/*
	 * Queue sizes come from user requests (up to 2^20 WQEs of up to a few
	 * KiB): one larger than all RAM fails here, without the allocator's
	 * warning.
	 */
	if ((size >> PAGE_SHIFT) > totalram_pages())
		return NULL;
	return vmalloc_user(size);
}

unsigned long rxe_rs_vma_len(const struct vm_area_struct *vma)
{
	return vma->vm_end - vma->vm_start;
}

unsigned long rxe_rs_vma_offset(const struct vm_area_struct *vma)
{
	return vma->vm_pgoff << PAGE_SHIFT;
}

size_t rxe_rs_umem_num_pages(struct ib_umem *umem)
{
	return ib_umem_num_pages(umem);
}

/* Fills pages[] with the umem's pages in order, one reference taken on each. */
size_t rxe_rs_umem_get_pages(struct ib_umem *umem, struct page **pages, size_t max)
{
	struct sg_table *sgt = &umem->sgt_append.sgt;
	struct sg_page_iter it;
	size_t n = 0;

	for_each_sgtable_page(sgt, &it, 0) {
		struct page *page = sg_page_iter_page(&it);

		if (n == max)
			break;
		get_page(page);
		pages[n++] = page;
	}
	return n;
}

void rxe_rs_put_page(struct page *page)
{
	put_page(page);
}

bool rxe_rs_page_is_pmem(struct page *page)
{
	return region_intersects(page_to_phys(page), PAGE_SIZE, IORESOURCE_MEM,
				 IORES_DESC_PERSISTENT_MEMORY) == REGION_INTERSECTS;
}

u64 rxe_rs_totalram_bytes(void)
{
	return (u64)totalram_pages() << PAGE_SHIFT;
}

/* Whether every pinned page of the umem is persistent memory. Sleeps. */
bool rxe_rs_umem_all_pmem(struct ib_umem *umem)
{
	struct sg_page_iter it;

	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (!rxe_rs_page_is_pmem(sg_page_iter_page(&it)))
			return false;
		cond_resched();
	}
	return true;
}

void *rxe_rs_kmap_local_page(struct page *page)
{
	return kmap_local_page(page);
}

void rxe_rs_kunmap_local(void *addr)
{
	kunmap_local(addr);
}

/* NULL unless addr is in the kernel's linear map. */
struct page *rxe_rs_virt_to_page(u64 addr)
{
	void *p = ib_virt_dma_to_ptr(addr);

	if (!virt_addr_valid(p))
		return NULL;
	return virt_to_page(p);
}

/*
 * Takes a reference on page for an skb fragment, if the page may be one:
 * not slab memory and already referenced (the sendpage_ok() rules).
 */
bool rxe_rs_get_frag_page(struct page *page)
{
	if (!sendpage_ok(page))
		return false;
	get_page(page);
	return true;
}

void rxe_rs_wb_cache_pmem(void *addr, size_t len)
{
	arch_wb_cache_pmem(addr, len);
}

/*
 * Calls whose C signature differs between the kernels rxe_rs builds for
 * (6.12 and 7.x); Rust sees one signature.
 */
struct ib_umem *rxe_rs_umem_get(struct ib_device *dev, unsigned long addr,
				size_t size, int access)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	return ib_umem_get_va(dev, addr, size, access);
#else
	return ib_umem_get(dev, addr, size, access);
#endif
}

/*
 * On-demand paging. The Rust side keeps its own table of present pages
 * under a spinlock; these wrappers hide where each kernel keeps the hmm
 * pfns of an ODP umem and which access bits its fault call takes.
 */
#ifdef CONFIG_INFINIBAND_ON_DEMAND_PAGING
static inline unsigned long rxe_rs_odp_pfn(struct ib_umem_odp *odp, size_t idx)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	return odp->map.pfn_list[idx];
#else
	return odp->pfn_list[idx];
#endif
}

struct ib_umem_odp *rxe_rs_odp_get(struct ib_device *dev, unsigned long addr,
				   size_t size, int access,
				   const struct mmu_interval_notifier_ops *ops,
				   void *priv)
{
	struct ib_umem_odp *odp = ib_umem_odp_get(dev, addr, size, access, ops);

	if (!IS_ERR(odp)) {
		mutex_lock(&odp->umem_mutex);
		odp->private = priv;
		mutex_unlock(&odp->umem_mutex);
	}
	return odp;
}

unsigned long rxe_rs_odp_start(struct ib_umem_odp *odp)
{
	return ib_umem_start(odp);
}

size_t rxe_rs_odp_num_pages(struct ib_umem_odp *odp)
{
	return ib_umem_odp_num_pages(odp);
}

unsigned int rxe_rs_odp_page_shift(struct ib_umem_odp *odp)
{
	return odp->page_shift;
}

/* Faults [va, va + len) in (or only snapshots it) and returns with
 * umem_mutex held on success. */
int rxe_rs_odp_map_and_lock(struct ib_umem_odp *odp, u64 va, u64 len,
			    bool write, bool fault)
{
	u64 mask;
	int np;

#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	mask = HMM_PFN_VALID;
	if (write && odp->umem.writable)
		mask |= HMM_PFN_WRITE;
#else
	mask = ODP_READ_ALLOWED_BIT;
	if (write && odp->umem.writable)
		mask |= ODP_WRITE_ALLOWED_BIT;
#endif
	np = ib_umem_odp_map_dma_and_lock(odp, va, len, mask, fault);
	return np < 0 ? np : 0;
}

/* The page at index idx while umem_mutex is held, or NULL when the range
 * there is not mapped; *writable tells whether it may be written. */
struct page *rxe_rs_odp_page(struct ib_umem_odp *odp, size_t idx, bool *writable)
{
	unsigned long pfn;

	lockdep_assert_held(&odp->umem_mutex);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	pfn = rxe_rs_odp_pfn(odp, idx);
	if (!(pfn & HMM_PFN_VALID))
		return NULL;
	*writable = !!(pfn & HMM_PFN_WRITE);
#else
	if (!(odp->dma_list[idx] & ODP_READ_ALLOWED_BIT))
		return NULL;
	pfn = rxe_rs_odp_pfn(odp, idx);
	*writable = !!(odp->dma_list[idx] & ODP_WRITE_ALLOWED_BIT);
#endif
	return hmm_pfn_to_page(pfn);
}

void rxe_rs_odp_unlock(struct ib_umem_odp *odp)
{
	mutex_unlock(&odp->umem_mutex);
}

/* First half of an invalidation: false when the range may not block;
 * otherwise returns with umem_mutex held, the sequence advanced and the
 * clamped [*start, *end) and the driver's private pointer filled in. */
bool rxe_rs_odp_invalidate_begin(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq, void **priv,
				 u64 *start, u64 *end)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp, notifier);

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	*start = max_t(u64, ib_umem_start(odp), range->start);
	*end = min_t(u64, ib_umem_end(odp), range->end);
	*priv = odp->private;
	return true;
}

/* Second half: unmaps the range in the core's tables and drops the mutex. */
void rxe_rs_odp_invalidate_end(struct mmu_interval_notifier *mni, u64 start, u64 end)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp, notifier);

	ib_umem_odp_unmap_dma_pages(odp, start, end);
	mutex_unlock(&odp->umem_mutex);
}
#endif
