// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * C glue of rxe_rs: wrappers of static inlines and macros, and the sysfs
 * attribute group (DEVICE_ATTR_RO builds static data only C can express).
 * Nothing here holds driver logic.
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
#include <rdma/ib_umem_odp.h>
#include <linux/hmm.h>
#include <linux/skbuff.h>
#include <net/addrconf.h>
#include <net/ip6_route.h>
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
#include <net/ipv6.h>
#else
#include <net/ipv6_stubs.h>
#endif
#include <net/route.h>
#include <net/sock.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <linux/jiffies.h>
#include <linux/llist.h>
#include <linux/percpu.h>
#include <linux/timer.h>
#include <linux/workqueue.h>

#include "helpers.h"

bool rxe_rs_cpu_has_clmul(void)
{
#ifdef CONFIG_X86_64
	return boot_cpu_has(X86_FEATURE_PCLMULQDQ) && boot_cpu_has(X86_FEATURE_XMM2);
#else
	return false;
#endif
}

bool rxe_rs_cpu_is_tcg(void)
{
#ifdef CONFIG_X86_64
	unsigned int max, sig[3];

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
	kernel_fpu_begin();
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

bool rxe_rs_spin_trylock_bh(spinlock_t *lock)
{
	return spin_trylock_bh(lock);
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

/* Packet layer. */

unsigned int rxe_rs_ll_reserved_space(const struct net_device *ndev)
{
	return LL_RESERVED_SPACE(ndev);
}

/*
 * The transmit path's skb set-up in one call each (every C call costs the
 * datapath more than the work of these inline helpers):
 *
 * rxe_rs_alloc_tx_skb: a fresh skb with headroom bytes in front and len
 * zeroed bytes of data, for ndev, carrying protocol proto (network order);
 * NULL without memory. Atomic.
 */
struct sk_buff *rxe_rs_alloc_tx_skb(struct net_device *ndev,
				    unsigned int headroom, unsigned int len,
				    __be16 proto)
{
	struct sk_buff *skb = alloc_skb(headroom + len, GFP_ATOMIC);

	if (!skb)
		return NULL;
	skb_reserve(skb, headroom);
	skb_put_zero(skb, len);
	skb->dev = ndev;
	skb->protocol = proto;
	return skb;
}

/*
 * rxe_rs_skb_push_ip_udp: room for an IP header of ip_len bytes and a UDP
 * header in front of the data, both marked (network and transport header),
 * and the route dst attached with a reference of its own. Returns the new
 * data start (the IP header), or NULL when the headroom is too short.
 */
void *rxe_rs_skb_push_ip_udp(struct sk_buff *skb, unsigned int ip_len,
			     struct dst_entry *dst)
{
	if (skb_headroom(skb) < ip_len + sizeof(struct udphdr))
		return NULL;
	__skb_push(skb, sizeof(struct udphdr));
	skb_reset_transport_header(skb);
	__skb_push(skb, ip_len);
	skb_reset_network_header(skb);
	skb_clear_hash(skb);
	skb_dst_set(skb, dst_clone(dst));
	return skb->data;
}

/*
 * rxe_rs_skb_select_ipv4_id: lets the stack pick the id of the IPv4 header
 * at the network header, from the namespace of the skb's route.
 */
void rxe_rs_skb_select_ipv4_id(struct sk_buff *skb)
{
	__ip_select_ident(rxe_rs_skb_dst_net(skb), ip_hdr(skb), 1);
}

/*
 * rxe_rs_netdev_splits_gso_batch: whether a UDP fraglist GSO skb handed to
 * ndev is split back into its packets by the software GSO of ndev's own
 * transmit path (the device does not offer NETIF_F_GSO_FRAGLIST itself).
 * Only then does every packet leave with the IP header it was built with:
 * a device that passes such skbs on (veth, loopback, a bridge...) may
 * deliver one whole to a local UDP socket, where only the UDP layer splits
 * it, and the first packet keeps the batch's IP length.
 */
bool rxe_rs_netdev_splits_gso_batch(const struct net_device *ndev)
{
	return !(READ_ONCE(ndev->features) & NETIF_F_GSO_FRAGLIST);
}

/*
 * rxe_rs_skb_gso_chain: turns head, a complete packet ready for
 * ip_local_out() or ip6_local_out() (data at the IP header, network and
 * transport headers set, route attached), into a UDP fraglist GSO skb that
 * carries the n complete packets of rest after it, as UDP GRO lays out such
 * skbs: each chained skb's data starts after its UDP header, and head's
 * gso_size is its own UDP payload. The chained skbs become head's; they
 * must have no owner and go along head's route with head's addresses and
 * ports. Software GSO at the device splits the skb back into the same
 * packets, byte for byte: every packet keeps its own IP and UDP header,
 * the IPv4 ids included (SKB_GSO_TCP_FIXEDID; our headers have DF), and
 * only the length and checksum of the IP header are rewritten, to the
 * values they had. The driver then gets the packets in one go
 * (xmit_more) and notifies the device once.
 */
void rxe_rs_skb_gso_chain(struct sk_buff *head, struct sk_buff **rest,
			  unsigned int n)
{
	struct skb_shared_info *shinfo = skb_shinfo(head);
	struct sk_buff **link = &shinfo->frag_list;
	unsigned int i;

	shinfo->gso_size = head->len - skb_transport_offset(head) -
			   sizeof(struct udphdr);
	for (i = 0; i < n; i++) {
		struct sk_buff *skb = rest[i];

		__skb_pull(skb, skb_transport_offset(skb) +
				sizeof(struct udphdr));
		*link = skb;
		link = &skb->next;
		head->len += skb->len;
		head->data_len += skb->len;
		head->truesize += skb->truesize;
	}
	*link = NULL;
	shinfo->gso_segs = n + 1;
	shinfo->gso_type = SKB_GSO_UDP_L4 | SKB_GSO_FRAGLIST;
	if (head->protocol == htons(ETH_P_IP))
		shinfo->gso_type |= SKB_GSO_TCP_FIXEDID;
	/* The UDP checksum is 0 (none): nothing for the stack to fill in. */
	head->ip_summed = CHECKSUM_UNNECESSARY;
}

int rxe_rs_skb_linearize(struct sk_buff *skb)
{
	return skb_linearize(skb);
}

unsigned char *rxe_rs_skb_network_header(const struct sk_buff *skb)
{
	return skb_network_header(skb);
}

__be16 rxe_rs_skb_protocol(const struct sk_buff *skb)
{
	return skb->protocol;
}

struct net_device *rxe_rs_skb_dev(const struct sk_buff *skb)
{
	return skb->dev;
}

/*
 * Appends bytes [off, off + len) of page as the skb's next fragment; the
 * fragment takes over the caller's page reference. False when the skb has
 * no fragment slot left (the reference stays the caller's).
 */
bool rxe_rs_skb_add_page_frag(struct sk_buff *skb, struct page *page,
			      unsigned int off, unsigned int len)
{
	struct skb_shared_info *sh = skb_shinfo(skb);

	if (sh->nr_frags >= MAX_SKB_FRAGS)
		return false;
	skb_fill_page_desc_noacc(skb, sh->nr_frags, page, off, len);
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
	/* The memory is the user's, which may write it meanwhile. */
	sh->flags |= SKBFL_SHARED_FRAG;
	return true;
}

/*
 * Appends len zeroed bytes as a fragment of their own, from the per-CPU
 * page-fragment cache (freed with the skb). Returns their address, or NULL
 * when out of memory or fragment slots.
 */
void *rxe_rs_skb_add_trailer(struct sk_buff *skb, unsigned int len)
{
	struct skb_shared_info *sh = skb_shinfo(skb);
	struct page *page;
	void *p;

	if (sh->nr_frags >= MAX_SKB_FRAGS)
		return NULL;
	p = netdev_alloc_frag(len);
	if (!p)
		return NULL;
	memset(p, 0, len);
	page = virt_to_head_page(p);
	skb_add_rx_frag(skb, sh->nr_frags, page, p - page_address(page), len,
			SKB_DATA_ALIGN(len));
	return p;
}

/* Fragment i of skb: its page, offset and length; NULL if there is none. */
struct page *rxe_rs_skb_frag(const struct sk_buff *skb, unsigned int i,
			     unsigned int *off, unsigned int *len)
{
	const skb_frag_t *f;

	if (i >= skb_shinfo(skb)->nr_frags)
		return NULL;
	f = &skb_shinfo(skb)->frags[i];
	*off = skb_frag_off(f);
	*len = skb_frag_size(f);
	return skb_frag_page(f);
}

/* Takes a reference on sk for the skb; the destructor gives it back. */
void rxe_rs_skb_set_owner(struct sk_buff *skb, struct sock *sk,
			  void (*destructor)(struct sk_buff *skb))
{
	sock_hold(sk);
	skb->sk = sk;
	skb->destructor = destructor;
}

void rxe_rs_sock_put(struct sock *sk)
{
	sock_put(sk);
}

struct sock *rxe_rs_socket_sk(const struct socket *sock)
{
	return sock->sk;
}

void rxe_rs_sk_set_user_data(struct sock *sk, void *data)
{
	rcu_assign_sk_user_data(sk, data);
}

void *rxe_rs_sk_user_data(const struct sock *sk)
{
	return rcu_dereference_raw(sk->sk_user_data);
}

/* The IPv4 route for UDP from saddr to daddr out of oif, or an ERR_PTR. */
struct dst_entry *rxe_rs_route4(struct net *net, int oif, __be32 saddr,
				__be32 daddr)
{
	struct flowi4 fl = {
		.flowi4_oif = oif,
		.flowi4_proto = IPPROTO_UDP,
		.saddr = saddr,
		.daddr = daddr,
	};
	struct rtable *rt = ip_route_output_key(net, &fl);

	return IS_ERR(rt) ? ERR_CAST(rt) : &rt->dst;
}

/* The IPv6 route for UDP from saddr to daddr out of oif, or an ERR_PTR. */
struct dst_entry *rxe_rs_route6(struct net *net, int oif,
				const struct in6_addr *saddr,
				const struct in6_addr *daddr)
{
	struct flowi6 fl6 = {
		.flowi6_oif = oif,
		.flowi6_proto = IPPROTO_UDP,
		.saddr = *saddr,
		.daddr = *daddr,
	};
	struct dst_entry *dst;
	int err;

#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	dst = ip6_dst_lookup_flow(net, NULL, &fl6, NULL);
#else
	dst = ipv6_stub->ipv6_dst_lookup_flow(net, NULL, &fl6, NULL);
#endif
	if (IS_ERR(dst))
		return dst;
	err = dst->error;
	if (err) {
		dst_release(dst);
		return ERR_PTR(err);
	}
	return dst;
}

/* Another reference on a held route. */
struct dst_entry *rxe_rs_dst_clone(struct dst_entry *dst)
{
	return dst_clone(dst);
}

/* The cookie that dst_check() wants for a route: IPv6 routes carry the
 * serial number of their FIB node; IPv4 ones need none.
 */
u32 rxe_rs_dst_cookie(struct dst_entry *dst, bool ipv6)
{
	return ipv6 ? rt6_get_cookie(dst_rt6_info(dst)) : 0;
}

/* Whether a held route is still the one a new lookup would find. */
bool rxe_rs_dst_valid(struct dst_entry *dst, u32 cookie)
{
	return dst_check(dst, cookie) == dst;
}

/* Routes to our own addresses go through the loopback device. */
bool rxe_rs_dst_is_local(const struct dst_entry *dst)
{
	return dst->dev && (dst->dev->flags & IFF_LOOPBACK);
}

/* The netdev of a GID table entry, with a reference taken, or NULL. */
struct net_device *rxe_rs_gid_ndev(struct ib_device *ibdev, u32 port,
				   u32 index)
{
	const struct ib_gid_attr *attr;
	struct net_device *ndev;

	attr = rdma_get_gid_attr(ibdev, port, index);
	if (IS_ERR(attr))
		return NULL;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (IS_ERR(ndev))
		ndev = NULL;
	else
		dev_hold(ndev);
	rcu_read_unlock();
	rdma_put_gid_attr(attr);
	return ndev;
}

bool rxe_rs_ib_device_try_get(struct ib_device *ibdev)
{
	return ib_device_try_get(ibdev);
}

/* The device under a VLAN device, or NULL for any other. */
struct net_device *rxe_rs_vlan_real_dev(struct net_device *ndev)
{
	return is_vlan_dev(ndev) ? vlan_dev_real_dev(ndev) : NULL;
}

u16 rxe_rs_vlan_id(const struct net_device *ndev)
{
	return is_vlan_dev(ndev) ? vlan_dev_vlan_id(ndev) : 0;
}

/* An inline without tracepoints. */
void rxe_rs_consume_skb(struct sk_buff *skb)
{
	consume_skb(skb);
}

/* The namespace a netdev lives in; no reference is taken. */
struct net *rxe_rs_dev_net(const struct net_device *ndev)
{
	return dev_net(ndev);
}

/* The namespace of a netdev with a reference, or NULL once it is exiting. */
struct net *rxe_rs_dev_net_get(const struct net_device *ndev)
{
	return maybe_get_net(dev_net(ndev));
}

void rxe_rs_put_net(struct net *net)
{
	put_net(net);
}

/* The per-namespace memory of pernet id `id`. */
void *rxe_rs_net_generic(const struct net *net, unsigned int id)
{
	return net_generic(net, id);
}

/* The namespace an skb is routed in: its route's device's (init_net for an
 * skb without a route, which the IP layer then drops).
 */
struct net *rxe_rs_skb_dst_net(const struct sk_buff *skb)
{
	const struct dst_entry *dst = skb_dst(skb);

	return dst && dst->dev ? dev_net(dst->dev) : &init_net;
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

unsigned int rxe_rs_dev_get_flags(const struct net_device *ndev)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	return netif_get_flags(ndev);
#else
	return dev_get_flags(ndev);
#endif
}

struct ib_umem *rxe_rs_umem_get(struct ib_device *dev, unsigned long addr,
				size_t size, int access)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	return ib_umem_get_va(dev, addr, size, access);
#else
	return ib_umem_get(dev, addr, size, access);
#endif
}

void rxe_rs_setup_udp_tunnel_sock(struct net *net, struct socket *sock,
				  struct udp_tunnel_sock_cfg *cfg)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	setup_udp_tunnel_sock(net, sock->sk, cfg);
#else
	setup_udp_tunnel_sock(net, sock, cfg);
#endif
}

void rxe_rs_udp_tunnel_sock_release(struct socket *sock)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	udp_tunnel_sock_release(sock->sk);
#else
	udp_tunnel_sock_release(sock);
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
