/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The kernel headers rxe_rs generates its private bindings from. Only
 * rxe/sys/mod.rs includes the result; the rest of the driver goes through
 * the wrappers in rxe/kapi/.
 */
#include <linux/crc32.h>
#include <linux/delay.h>
#include <linux/errname.h>
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <linux/llist.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/vmalloc.h>
#include <linux/mm.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/net_namespace.h>
#include <net/ipv6.h>
#include <net/ip6_route.h>
#include <net/route.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <linux/hmm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/rdma_user_rxe.h>
#include <uapi/rdma/ib_user_verbs.h>

#include "helpers.h"
#include "rxe_rs_trace.h"
