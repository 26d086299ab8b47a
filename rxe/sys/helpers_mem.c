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
#include <linux/memremap.h>
#include <linux/scatterlist.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched.h>
#include <linux/net.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <linux/hmm.h>
#include <rdma/ib_verbs.h>
#include <uapi/linux/magic.h>

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

/* Takes resource_lock, which is not softirq-safe: process context only,
 * and never under a lock that softirq takes. */
bool rxe_rs_page_is_pmem(struct page *page)
{
	might_sleep();
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

/*
 * Whether page is reachable through the kernel's direct map, where
 * kmap_local_page() finds a page that is not highmem. kernel_page_present()
 * says it but is not exported; this is its x86 test, on the exported
 * lookup_address(). A cleared entry may keep _PAGE_GLOBAL, which
 * pte_present() takes for PROT_NONE, so the present bit is read itself.
 */
static bool rxe_rs_in_direct_map(struct page *page)
{
#ifdef CONFIG_X86
	unsigned int level;
	pte_t *pte;

	if (PageHighMem(page))
		return true;
	pte = lookup_address((unsigned long)page_address(page), &level);
	return pte && (pte_flags(*pte) & _PAGE_PRESENT);
#else
	/* The secret memory test below covers the user pages known to leave
	 * the direct map on the other architectures. */
	return true;
#endif
}

/*
 * Whether the datapath may copy to and from a page of a user mapping that
 * hmm_range_fault() returned. It has already left out PFN maps (VM_PFNMAP,
 * VM_IO) and special PTEs other than the zero page, but it hands out:
 * - memfd_secret(2) pages, which are taken out of the direct map and which
 *   the kernel must not read whatever the mapping (GUP refuses them too);
 *   their inode lives on the secretmem pseudo file system;
 * - ZONE_DEVICE pages: device-private ones have no CPU mapping at all (hmm
 *   returns them only to their owner, but refusing costs nothing), P2PDMA
 *   ones are a PCI BAR; persistent memory (fsdax, devdax) and coherent
 *   device memory are ordinary CPU memory and stay usable.
 * Runs under umem_mutex with the page mapped by the user: the mapping
 * cannot be truncated away (the invalidation waits for the mutex).
 */
static bool rxe_rs_odp_page_usable(struct page *page)
{
	struct address_space *mapping;

	if (is_device_private_page(page) || is_pci_p2pdma_page(page))
		return false;
	mapping = folio_mapping(page_folio(page));
	if (mapping && mapping->host && mapping->host->i_sb &&
	    mapping->host->i_sb->s_magic == SECRETMEM_MAGIC)
		return false;
	return rxe_rs_in_direct_map(page);
}

/*
 * The page at index idx while umem_mutex is held: 0 with *page NULL when
 * the range there is not mapped, 0 with *page set and *writable telling
 * whether it may be written when it is, -EFAULT when it is mapped to
 * memory the datapath must not touch (rxe_rs_odp_page_usable()).
 */
int rxe_rs_odp_page(struct ib_umem_odp *odp, size_t idx, struct page **page,
		    bool *writable)
{
	unsigned long pfn;
	struct page *p;

	lockdep_assert_held(&odp->umem_mutex);
	*page = NULL;
	*writable = false;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	pfn = rxe_rs_odp_pfn(odp, idx);
	if (!(pfn & HMM_PFN_VALID))
		return 0;
	*writable = !!(pfn & HMM_PFN_WRITE);
#else
	if (!(odp->dma_list[idx] & ODP_READ_ALLOWED_BIT))
		return 0;
	pfn = rxe_rs_odp_pfn(odp, idx);
	*writable = !!(odp->dma_list[idx] & ODP_WRITE_ALLOWED_BIT);
#endif
	p = hmm_pfn_to_page(pfn);
	if (!rxe_rs_odp_page_usable(p)) {
		*writable = false;
		return -EFAULT;
	}
	*page = p;
	return 0;
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
