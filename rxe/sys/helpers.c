// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * C glue of rxe_rs: wrappers of static inlines and macros, and the sysfs
 * attribute group (DEVICE_ATTR_RO builds static data only C can express).
 * Nothing here holds driver logic.
 */
#include <linux/cpumask.h>
#include <linux/highmem.h>
#include <linux/ioport.h>
#include <linux/libnvdimm.h>
#include <linux/scatterlist.h>
#include <linux/device.h>
#include <linux/if_vlan.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <linux/jiffies.h>
#include <linux/timer.h>
#include <linux/workqueue.h>

#include "helpers.h"

bool rxe_rs_netif_running(const struct net_device *ndev)
{
	return netif_running(ndev);
}

bool rxe_rs_netif_carrier_ok(const struct net_device *ndev)
{
	return netif_carrier_ok(ndev);
}

bool rxe_rs_is_vlan_dev(const struct net_device *ndev)
{
	return is_vlan_dev(ndev);
}

void rxe_rs_dev_hold(struct net_device *ndev)
{
	dev_hold(ndev);
}

void rxe_rs_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

struct net_device *rxe_rs_netdev_notifier_info_to_dev(void *info)
{
	return netdev_notifier_info_to_dev(info);
}

unsigned int rxe_rs_num_possible_cpus(void)
{
	return num_possible_cpus();
}

void rxe_rs_spin_lock_bh(spinlock_t *lock)
{
	spin_lock_bh(lock);
}

void rxe_rs_spin_unlock_bh(spinlock_t *lock)
{
	spin_unlock_bh(lock);
}

void *rxe_rs_vmalloc_user(unsigned long size)
{
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

/* The driver udata of a create_cq call; kernel callers pass no bundle. */
struct ib_udata *rxe_rs_attrs_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

/* The user context a verb with udata runs in; NULL for kernel callers. */
struct ib_ucontext *rxe_rs_udata_to_ucontext(struct ib_udata *udata)
{
	return udata ? rdma_udata_to_uverbs_attr_bundle(udata)->context : NULL;
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

void rxe_rs_wb_cache_pmem(void *addr, size_t len)
{
	arch_wb_cache_pmem(addr, len);
}

/* The task workqueue: unbound and with C rdma_rxe's flags. */
struct workqueue_struct *rxe_rs_alloc_wq(void)
{
	return alloc_workqueue("rxe_rs_wq", WQ_UNBOUND, WQ_MAX_ACTIVE);
}

unsigned long rxe_rs_jiffies(void)
{
	return READ_ONCE(jiffies);
}

unsigned long rxe_rs_usecs_to_jiffies(unsigned int usecs)
{
	return usecs_to_jiffies(usecs);
}

unsigned long rxe_rs_msecs_to_jiffies(unsigned int msecs)
{
	return msecs_to_jiffies(msecs);
}

bool rxe_rs_timer_pending(const struct timer_list *timer)
{
	return timer_pending(timer);
}

/* rdma-core's rxe tooling matches devices to netdevs through "parent". */
static ssize_t parent_show(struct device *device,
			   struct device_attribute *attr, char *buf)
{
	struct ib_device *ibdev = rdma_device_to_ibdev(device);
	struct net_device *ndev = ib_device_get_netdev(ibdev, 1);
	ssize_t ret;

	if (!ndev)
		return -ENODEV;
	ret = sysfs_emit(buf, "%s\n", netdev_name(ndev));
	dev_put(ndev);
	return ret;
}
static DEVICE_ATTR_RO(parent);

static struct attribute *rxe_rs_dev_attrs[] = {
	&dev_attr_parent.attr,
	NULL
};

static const struct attribute_group rxe_rs_dev_group = {
	.attrs = rxe_rs_dev_attrs,
};

const struct attribute_group *rxe_rs_device_group(void)
{
	return &rxe_rs_dev_group;
}
