/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * One-line wrappers of static inline functions and macros the Rust side
 * needs. Declared here so bindgen generates their Rust signatures; defined
 * in helpers_core.c, helpers_mem.c and helpers_net.c.
 */
#ifndef RXE_RS_HELPERS_H
#define RXE_RS_HELPERS_H

#include <linux/spinlock_types.h>
#include <linux/types.h>

struct attribute_group;
struct ib_umem;
struct page;
struct dst_entry;
struct in6_addr;
struct net;
struct sk_buff;
struct sock;
struct socket;
struct udp_tunnel_sock_cfg;
struct ib_device;
struct ib_ucontext;
struct ib_udata;
struct module;
struct net_device;
struct notifier_block;
struct vm_area_struct;
struct ib_udata;
struct ib_ucontext;
struct uverbs_attr_bundle;
struct timer_list;
struct lock_class_key;
struct workqueue_struct;
struct llist_node;


bool rxe_rs_netif_running(const struct net_device *ndev);
int rxe_rs_param_icrc_fold(void);
bool rxe_rs_crc32_is_arch(void);
bool rxe_rs_cpu_has_clmul(void);
bool rxe_rs_cpu_has_vpclmul(void);
bool rxe_rs_cpu_is_tcg(void);
bool rxe_rs_simd_begin(void);
void rxe_rs_simd_end(void);
bool rxe_rs_netif_carrier_ok(const struct net_device *ndev);
bool rxe_rs_is_vlan_dev(const struct net_device *ndev);
void rxe_rs_dev_hold(struct net_device *ndev);
void rxe_rs_dev_put(struct net_device *ndev);
struct net_device *rxe_rs_netdev_notifier_info_to_dev(void *info);
unsigned int rxe_rs_num_possible_cpus(void);
const struct attribute_group *rxe_rs_device_group(void);
void rxe_rs_spin_lock_bh(spinlock_t *lock);
void *rxe_rs_vmalloc_user(size_t size);
unsigned long rxe_rs_vma_len(const struct vm_area_struct *vma);
unsigned long rxe_rs_vma_offset(const struct vm_area_struct *vma);
void rxe_rs_spin_unlock_bh(spinlock_t *lock);
bool rxe_rs_spin_trylock_bh(spinlock_t *lock);
struct ib_udata *rxe_rs_attrs_udata(struct uverbs_attr_bundle *attrs);
struct ib_ucontext *rxe_rs_udata_to_ucontext(struct ib_udata *udata);
size_t rxe_rs_umem_num_pages(struct ib_umem *umem);
size_t rxe_rs_umem_get_pages(struct ib_umem *umem, struct page **pages, size_t max);
void rxe_rs_put_page(struct page *page);
bool rxe_rs_page_is_pmem(struct page *page);
bool rxe_rs_umem_all_pmem(struct ib_umem *umem);
u64 rxe_rs_totalram_bytes(void);
void *rxe_rs_kmap_local_page(struct page *page);
void rxe_rs_kunmap_local(void *addr);
struct page *rxe_rs_virt_to_page(u64 addr);
bool rxe_rs_get_frag_page(struct page *page);
void rxe_rs_wb_cache_pmem(void *addr, size_t len);
struct workqueue_struct *rxe_rs_alloc_wq(void);
struct workqueue_struct *rxe_rs_alloc_fault_wq(void);
void rxe_rs_bh_init(void (*fn)(struct llist_node *first));
void rxe_rs_bh_add(struct llist_node *node);
void rxe_rs_bh_exit(void);
void rxe_rs_cond_resched(void);
unsigned long rxe_rs_jiffies(void);
/* Driver details of a resource entry (rdma resource show -dd, -r). */
void *rxe_rs_res_driver_start(struct sk_buff *msg);
void rxe_rs_res_driver_end(struct sk_buff *msg, void *table);
void rxe_rs_res_driver_cancel(struct sk_buff *msg, void *table);
int rxe_rs_res_put_raw(struct sk_buff *msg, const void *data, u32 len);
unsigned long rxe_rs_usecs_to_jiffies(unsigned int usecs);
unsigned long rxe_rs_msecs_to_jiffies(unsigned int msecs);
bool rxe_rs_timer_pending(const struct timer_list *timer);

/* Packet layer: skb fields and inlines, routes, sockets, GID-table ndevs. */
unsigned int rxe_rs_ll_reserved_space(const struct net_device *ndev);
struct sk_buff *rxe_rs_alloc_tx_skb(struct net_device *ndev,
				    unsigned int headroom, unsigned int len,
				    __be16 proto, unsigned int hole_off,
				    unsigned int hole_len);
void *rxe_rs_skb_push_ip_udp(struct sk_buff *skb, unsigned int ip_len,
			     struct dst_entry *dst);
u16 rxe_rs_skb_reserve_ipv4_ids(struct sk_buff *skb, unsigned int n);
int rxe_rs_skb_linearize(struct sk_buff *skb);
bool rxe_rs_netdev_splits_gso_batch(const struct net_device *ndev);
void rxe_rs_skb_gso_chain(struct sk_buff *head, struct sk_buff **rest,
			  unsigned int n);
bool rxe_rs_skb_add_page_frag(struct sk_buff *skb, struct page *page,
			      unsigned int off, unsigned int len);
void *rxe_rs_skb_add_trailer(struct sk_buff *skb, unsigned int len);
struct page *rxe_rs_skb_frag(const struct sk_buff *skb, unsigned int i,
			     unsigned int *off, unsigned int *len);
unsigned char *rxe_rs_skb_network_header(const struct sk_buff *skb);
__be16 rxe_rs_skb_protocol(const struct sk_buff *skb);
struct net_device *rxe_rs_skb_dev(const struct sk_buff *skb);
void rxe_rs_skb_set_owner(struct sk_buff *skb, struct sock *sk,
			  void (*destructor)(struct sk_buff *skb));
void rxe_rs_sock_put(struct sock *sk);
struct sock *rxe_rs_socket_sk(const struct socket *sock);
void rxe_rs_sk_set_user_data(struct sock *sk, void *data);
void *rxe_rs_sk_user_data(const struct sock *sk);
struct dst_entry *rxe_rs_route4(struct net *net, int oif, __be32 saddr,
				__be32 daddr);
struct dst_entry *rxe_rs_route6(struct net *net, int oif,
				const struct in6_addr *saddr,
				const struct in6_addr *daddr);
bool rxe_rs_dst_is_local(const struct dst_entry *dst);
struct dst_entry *rxe_rs_dst_clone(struct dst_entry *dst);
u32 rxe_rs_dst_cookie(struct dst_entry *dst, bool ipv6);
bool rxe_rs_dst_valid(struct dst_entry *dst, u32 cookie);
struct net_device *rxe_rs_gid_ndev(struct ib_device *ibdev, u32 port,
				   u32 index);
bool rxe_rs_ib_device_try_get(struct ib_device *ibdev);
void rxe_rs_devices_lock(void);
void rxe_rs_devices_unlock(void);
struct net_device *rxe_rs_vlan_real_dev(struct net_device *ndev);
u16 rxe_rs_vlan_id(const struct net_device *ndev);
void rxe_rs_consume_skb(struct sk_buff *skb);
struct net *rxe_rs_dev_net(const struct net_device *ndev);
void rxe_rs_skb_dst_drop(struct sk_buff *skb);
struct net *rxe_rs_dev_net_get(const struct net_device *ndev);
void rxe_rs_put_net(struct net *net);
void *rxe_rs_net_generic(const struct net *net, unsigned int id);
struct net *rxe_rs_skb_dst_net(const struct sk_buff *skb);
bool rxe_rs_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags);
unsigned long rxe_rs_spin_lock_irqsave(spinlock_t *lock);
void rxe_rs_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);

struct ib_device *rxe_rs_alloc_ib_device(size_t size, struct net *net);
unsigned int rxe_rs_dev_get_flags(const struct net_device *ndev);
struct ib_umem *rxe_rs_umem_get(struct ib_device *dev, unsigned long addr,
				size_t size, int access);
void rxe_rs_setup_udp_tunnel_sock(struct net *net, struct socket *sock,
				  struct udp_tunnel_sock_cfg *cfg);
void rxe_rs_udp_tunnel_sock_release(struct socket *sock);

void rxe_rs_timer_init_key(struct timer_list *timer,
			   void (*func)(struct timer_list *), unsigned int flags,
			   const char *name, struct lock_class_key *key);

struct ib_umem_odp;
struct mmu_interval_notifier;
struct mmu_interval_notifier_ops;
struct mmu_notifier_range;
struct ib_umem_odp *rxe_rs_odp_get(struct ib_device *dev, unsigned long addr,
				   size_t size, int access,
				   const struct mmu_interval_notifier_ops *ops,
				   void *priv);
unsigned long rxe_rs_odp_start(struct ib_umem_odp *odp);
size_t rxe_rs_odp_num_pages(struct ib_umem_odp *odp);
unsigned int rxe_rs_odp_page_shift(struct ib_umem_odp *odp);
int rxe_rs_odp_map_and_lock(struct ib_umem_odp *odp, u64 va, u64 len,
			    bool write, bool fault);
int rxe_rs_odp_page(struct ib_umem_odp *odp, size_t idx, struct page **page,
		    bool *writable);
void rxe_rs_odp_unlock(struct ib_umem_odp *odp);
bool rxe_rs_odp_invalidate_begin(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq, void **priv,
				 u64 *start, u64 *end);
void rxe_rs_odp_invalidate_end(struct mmu_interval_notifier *mni, u64 start, u64 end);


/*
 * The trace event emitters (helpers_trace.c); bindings.h brings the
 * events' tracepoints, whose static keys rxe/kapi/trace.rs tests inline.
 */
#ifdef CONFIG_TRACEPOINTS
void rxe_rs_trace_qp_state(u32 qpn, u8 old_state, u8 new_state, u8 cause,
			   u8 status);
void rxe_rs_trace_pkt_send(u32 qpn, u8 opcode, u32 psn, u32 len);
void rxe_rs_trace_pkt_recv(u32 qpn, u8 opcode, u32 psn, u32 len);
void rxe_rs_trace_retransmit(u32 qpn, u8 cause, u32 psn);
void rxe_rs_trace_nak_send(u32 qpn, u32 psn, u8 syndrome);
void rxe_rs_trace_nak_recv(u32 qpn, u32 psn, u8 syndrome);
void rxe_rs_trace_cqe_error(u32 qpn, u64 wr_id, u8 status, u32 vendor_err,
			    bool recv);
void rxe_rs_trace_pkt_drop(u8 reason, u32 qpn, u8 opcode, u32 psn);
#endif

#endif
