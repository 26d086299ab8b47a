// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * C glue of rxe_rs, kernel and RDMA core: CPU features and SIMD sections,
 * spinlocks, the task workqueue and the per-CPU softirq runs, jiffies and
 * timers, the IB device and udata, and the sysfs attribute group
 * (DEVICE_ATTR_RO builds static data only C can express). Nothing here
 * holds driver logic.
 */
#include <linux/cpumask.h>
#include <linux/version.h>
#ifdef CONFIG_X86
#include <asm/cpufeature.h>
#include <asm/fpu/api.h>
#if __has_include(<asm/cpuid/api.h>)
#include <asm/cpuid/api.h>
#else
#include <asm/cpuid.h>
#endif
#endif
#include <linux/device.h>
#include <linux/netdevice.h>
#include <linux/sysfs.h>
#include <net/net_namespace.h>
#include <net/netlink.h>
#include <rdma/rdma_netlink.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <linux/jiffies.h>
#include <linux/llist.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/timer.h>
#include <linux/workqueue.h>

#include "helpers.h"

/*
 * How the ICRC's CRC-32 is computed: -1 chooses at load (the PCLMULQDQ fold
 * where the CPU has it, but not under QEMU's TCG, which emulates the
 * instruction slowly), 0 forces the table CRC, 1 the fold where the CPU has
 * it. `make insns` sets 1 to count what a real CPU runs.
 */
static int icrc_fold = -1;
module_param(icrc_fold, int, 0444);
MODULE_PARM_DESC(icrc_fold, "ICRC CRC-32 by PCLMULQDQ folding: -1 auto (default), 0 never, 1 whenever the CPU has it");

int rxe_rs_param_icrc_fold(void)
{
	return READ_ONCE(icrc_fold);
}

/*
 * Whether the kernel's crc32_le is the architecture's folding code (7.x
 * with CONFIG_CRC32_ARCH): then it serves short buffers too.
 */
bool rxe_rs_crc32_is_arch(void)
{
#ifdef CONFIG_CRC32_ARCH
	return true;
#else
	return false;
#endif
}

bool rxe_rs_cpu_has_clmul(void)
{
#ifdef CONFIG_X86_64
	return boot_cpu_has(X86_FEATURE_PCLMULQDQ) && boot_cpu_has(X86_FEATURE_XMM2) &&
	       boot_cpu_has(X86_FEATURE_SSSE3);
#else
	return false;
#endif
}

/* 256-bit carry-less multiplies (VPCLMULQDQ with AVX2), usable by the kernel. */
bool rxe_rs_cpu_has_vpclmul(void)
{
#ifdef CONFIG_X86_64
	return boot_cpu_has(X86_FEATURE_VPCLMULQDQ) && boot_cpu_has(X86_FEATURE_AVX2) &&
	       cpu_has_xfeatures(XFEATURE_MASK_SSE | XFEATURE_MASK_YMM, NULL);
#else
	return false;
#endif
}

/*
 * Whether to make the choices for QEMU's TCG, which makes some work dear
 * that a real CPU does cheaply (a carry-less multiply, a copy): -1 detects
 * TCG (default), 0 chooses as on a real CPU, 1 as under TCG. `make insns`
 * and the tests' +hw boots set 0, to run what a real CPU runs.
 */
static int tcg = -1;
module_param(tcg, int, 0444);
MODULE_PARM_DESC(tcg, "Choose the ICRC method and zero-copy transmit as under QEMU's TCG: -1 detect (default), 0 no (as on a real CPU), 1 yes");

bool rxe_rs_cpu_is_tcg(void)
{
#ifdef CONFIG_X86_64
	unsigned int max, sig[3];

	if (READ_ONCE(tcg) >= 0)
		return READ_ONCE(tcg) > 0;

	/*
	 * QEMU's TCG answers the hypervisor leaf with this signature (its
	 * "tcg-cpuid" property, on by default). On hardware without a
	 * hypervisor the leaf is reserved and never reads like this.
	 */
	cpuid(0x40000000, &max, &sig[0], &sig[1], &sig[2]);
	return !memcmp(sig, "TCGTCGTCGTCG", sizeof(sig));
#else
	return false;
#endif
}

bool rxe_rs_simd_begin(void)
{
#ifdef CONFIG_X86_64
	if (!irq_fpu_usable())
		return false;
	/* Integer vector instructions only: neither MXCSR nor x87 state. */
	kernel_fpu_begin_mask(0);
	return true;
#else
	return false;
#endif
}

void rxe_rs_simd_end(void)
{
#ifdef CONFIG_X86_64
	kernel_fpu_end();
#endif
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

bool rxe_rs_spin_trylock_bh(spinlock_t *lock)
{
	return spin_trylock_bh(lock);
}

bool rxe_rs_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags)
{
	return spin_trylock_irqsave(lock, *flags);
}

unsigned long rxe_rs_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rxe_rs_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
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

/*
 * The task workqueue: unbound like rdma_rxe's, and a reclaim queue. Storage
 * ULPs (nvme-rdma, nvmet-rdma, iSER, SRP) destroy QPs from their own
 * WQ_MEM_RECLAIM workers, and QP destroy flushes the QP's tasks: flushing
 * work of a non-reclaim queue from there is a reclaim deadlock the
 * workqueue code warns about. (C rdma_rxe polls for its tasks instead of
 * flushing.) The rescuer also keeps block I/O completing under memory
 * pressure.
 */
struct workqueue_struct *rxe_rs_alloc_wq(void)
{
	return alloc_workqueue("rxe_rs_wq", WQ_UNBOUND | WQ_MEM_RECLAIM, WQ_MAX_ACTIVE);
}

/*
 * The ODP fault workqueue. A fault may sleep for as long as the page takes
 * to come in, which a FUSE daemon that never answers makes forever, so
 * faults never run on the task workqueue: each one is a work item of its
 * own here, and a stuck one holds a worker of this queue only. Unbound,
 * with the most concurrent workers a queue may have, so that stuck faults
 * leave the others room. Not a reclaim queue: faults serve user-space ODP
 * MRs only, never a storage ULP's memory, and nothing flushes them.
 */
struct workqueue_struct *rxe_rs_alloc_fault_wq(void)
{
	return alloc_workqueue("rxe_rs_fault", WQ_UNBOUND, WQ_UNBOUND_MAX_ACTIVE);
}

/*
 * Softirq runs of the receive path: per CPU, a lock-free list of waiting
 * task nodes and a work item that is only ever queued on system_bh_wq, so
 * it always runs in softirq context (a task's own work item runs on the
 * driver's workqueue; one work item on both queues is an inconsistent
 * lock state to lockdep). The node list goes to the Rust side oldest
 * first.
 */
struct rxe_rs_bh {
	struct llist_head list;
	struct work_struct work;
};

static DEFINE_PER_CPU(struct rxe_rs_bh, rxe_rs_bh);
static void (*rxe_rs_bh_fn)(struct llist_node *first);

static void rxe_rs_bh_work_fn(struct work_struct *work)
{
	struct rxe_rs_bh *bh = container_of(work, struct rxe_rs_bh, work);
	struct llist_node *first = llist_del_all(&bh->list);

	if (first)
		rxe_rs_bh_fn(llist_reverse_order(first));
}

void rxe_rs_bh_init(void (*fn)(struct llist_node *first))
{
	int cpu;

	rxe_rs_bh_fn = fn;
	for_each_possible_cpu(cpu) {
		struct rxe_rs_bh *bh = per_cpu_ptr(&rxe_rs_bh, cpu);

		init_llist_head(&bh->list);
		INIT_WORK(&bh->work, rxe_rs_bh_work_fn);
	}
}

void rxe_rs_bh_add(struct llist_node *node)
{
	struct rxe_rs_bh *bh = get_cpu_ptr(&rxe_rs_bh);

	/* A list that was not empty has its work item queued already. */
	if (llist_add(node, &bh->list))
		queue_work_on(smp_processor_id(), system_bh_wq, &bh->work);
	put_cpu_ptr(&rxe_rs_bh);
}

void rxe_rs_bh_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		flush_work(&per_cpu_ptr(&rxe_rs_bh, cpu)->work);
}

void rxe_rs_cond_resched(void)
{
	cond_resched();
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

bool rxe_rs_ib_device_try_get(struct ib_device *ibdev)
{
	return ib_device_try_get(ibdev);
}

/* The lock of the driver's list of its devices (kept in Rust). */
static DEFINE_MUTEX(rxe_rs_devices_mutex);

void rxe_rs_devices_lock(void)
{
	mutex_lock(&rxe_rs_devices_mutex);
}

void rxe_rs_devices_unlock(void)
{
	mutex_unlock(&rxe_rs_devices_mutex);
}

/*
 * Calls whose C signature differs between the kernels rxe_rs builds for
 * (6.12 and 7.x); Rust sees one signature.
 */
/*
 * 7.x places a new device in `net` when the core runs in exclusive netns
 * mode (init_net in shared mode). 6.12 always starts it in init_net: do what
 * 7.x does, before registration, so that a device made in a namespace is
 * that namespace's. In shared mode rdma_dev_access_netns() is true for any
 * namespace, and the device stays in init_net.
 */
struct ib_device *rxe_rs_alloc_ib_device(size_t size, struct net *net)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	return _ib_alloc_device(size, net);
#else
	struct ib_device *dev = _ib_alloc_device(size);

	if (dev && !rdma_dev_access_netns(dev, net))
		write_pnet(&dev->coredev.rdma_net, net);
	return dev;
#endif
}

void rxe_rs_timer_init_key(struct timer_list *timer,
			   void (*func)(struct timer_list *), unsigned int flags,
			   const char *name, struct lock_class_key *key)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	timer_init_key(timer, func, flags, name, key);
#else
	init_timer_key(timer, func, flags, name, key);
#endif
}

/*
 * The driver's own attributes of a resource entry go in one nested table,
 * which the core's dump prints with `-dd`; NULL when the message is full.
 */
void *rxe_rs_res_driver_start(struct sk_buff *msg)
{
	return nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
}

void rxe_rs_res_driver_end(struct sk_buff *msg, void *table)
{
	nla_nest_end(msg, table);
}

void rxe_rs_res_driver_cancel(struct sk_buff *msg, void *table)
{
	nla_nest_cancel(msg, table);
}

/* The raw form of an entry (`rdma resource show ... -r`): one opaque blob. */
int rxe_rs_res_put_raw(struct sk_buff *msg, const void *data, u32 len)
{
	return nla_put(msg, RDMA_NLDEV_ATTR_RES_RAW, len, data);
}
