// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * C glue of rxe_rs, network: netdev state, the packet layer's skb set-up
 * and fields, sockets, routes, GID-table netdevs, VLANs and network
 * namespaces, and the UDP tunnel socket. Nothing here holds driver logic.
 */
#include <linux/version.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>
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
 * bytes of data, for ndev, carrying protocol proto (network order); NULL
 * without memory. Atomic. The data is zeroed but for the hole_len bytes
 * from hole_off on, which the caller writes before the skb leaves its
 * hands (a payload it copies in); a hole that does not fit is zeroed too.
 */
struct sk_buff *rxe_rs_alloc_tx_skb(struct net_device *ndev,
				    unsigned int headroom, unsigned int len,
				    __be16 proto, unsigned int hole_off,
				    unsigned int hole_len)
{
	struct sk_buff *skb = alloc_skb(headroom + len, GFP_ATOMIC);
	u8 *data;

	if (!skb)
		return NULL;
	skb_reserve(skb, headroom);
	data = skb_put(skb, len);
	if (hole_len && hole_off <= len && hole_len <= len - hole_off) {
		memset(data, 0, hole_off);
		memset(data + hole_off + hole_len, 0,
		       len - hole_off - hole_len);
	} else {
		memset(data, 0, len);
	}
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
 * rxe_rs_skb_reserve_ipv4_ids: reserves n consecutive ids of the stack's
 * generator for the addresses of the IPv4 header at the network header, in
 * the namespace of the skb's route; writes the first in the header and
 * returns it (host order).
 */
u16 rxe_rs_skb_reserve_ipv4_ids(struct sk_buff *skb, unsigned int n)
{
	__ip_select_ident(rxe_rs_skb_dst_net(skb), ip_hdr(skb), n);
	return ntohs(ip_hdr(skb)->id);
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

/* Drops the skb's route (a reference, or a pointer valid under RCU only). */
void rxe_rs_skb_dst_drop(struct sk_buff *skb)
{
	skb_dst_drop(skb);
}

/*
 * Calls whose C signature differs between the kernels rxe_rs builds for
 * (6.12 and 7.x); Rust sees one signature.
 */
unsigned int rxe_rs_dev_get_flags(const struct net_device *ndev)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
	return netif_get_flags(ndev);
#else
	return dev_get_flags(ndev);
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
