// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Test client (not shipped): a kernel consumer whose CQ completion handlers
 * call back into the QP whose completion they handle. Loaded by
 * qemu-test/tests/verbs/cq_reentry.sh; the verdict is the return value of insmod
 * and a "cq_reentry:" line in the kernel log.
 *
 * Two QPs per transport (RC connected over the port's own GID index 0, UD
 * through an address handle to the same GID), one CQ per QP for both its
 * send and receive completions, a deep receive queue on each. A message
 * from A starts a chain: every run of X's handler
 *   - with poll=1: drains X's CQ with ib_poll_cq and re-arms it with
 *     ib_req_notify_cq (IB_CQ_REPORT_MISSED_EVENTS, looping while it says
 *     completions were missed);
 *   - posts one receive on X (ib_post_recv) and, while X's budget lasts,
 *     one signaled SEND from X to its peer (ib_post_send);
 *   - once X's budget is spent, moves X to ERR (ib_modify_qp), which
 *     flushes X's remaining receives through the same handler.
 * With poll=0 (rdma_rxe, whose handlers run under its CQ lock, so a
 * handler there must not poll or re-arm its own CQ) this thread drains and
 * re-arms the CQs every millisecond; the handler still makes the QP calls.
 * A chain stalled by a missed arm is restarted from here (counted).
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *devname = "rxe0";
module_param(devname, charp, 0444);
MODULE_PARM_DESC(devname, "the RDMA device");
static bool poll_in_handler = true;
module_param_named(poll, poll_in_handler, bool, 0444);
MODULE_PARM_DESC(poll, "handlers poll and re-arm their own CQ");
static int budget = 200;
module_param(budget, int, 0444);
MODULE_PARM_DESC(budget, "SENDs each QP's handler posts before it moves its QP to ERR");

#define RQ_DEPTH 1024
#define SQ_DEPTH 512
#define CQ_DEPTH (RQ_DEPTH + SQ_DEPTH + 16)
#define BUF_LEN 256
#define MSG_LEN 64

struct side {
	struct ib_qp *qp;
	struct ib_cq *cq;
	struct side *peer;
	struct ib_ah *ah; /* UD: to the peer */
	void *buf;
	u64 dma;
	u32 lkey;
	atomic_t handler_runs;
	atomic_t sends_left;
	atomic_t recv_ok;
	atomic_t send_ok;
	atomic_t flushed;
	atomic_t other_err;
	atomic_t post_err;
	atomic_t to_err; /* moved to ERR: 1 by the handler, 2 from here */
	atomic_t modify_err;
	atomic_t in_handler; /* re-entered while running: must stay 0 */
	atomic_t nested;
};

static void drain(struct side *s)
{
	struct ib_wc wc[4];
	int n, i;

	while ((n = ib_poll_cq(s->cq, ARRAY_SIZE(wc), wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].status == IB_WC_SUCCESS) {
				if (wc[i].opcode & IB_WC_RECV)
					atomic_inc(&s->recv_ok);
				else
					atomic_inc(&s->send_ok);
			} else if (wc[i].status == IB_WC_WR_FLUSH_ERR) {
				atomic_inc(&s->flushed);
			} else {
				pr_err("cq_reentry: qp %u: wc status %d opcode %d\n",
				       s->qp->qp_num, wc[i].status, wc[i].opcode);
				atomic_inc(&s->other_err);
			}
		}
	}
}

static int post_recv(struct side *s)
{
	struct ib_sge sge = { .addr = s->dma, .length = BUF_LEN, .lkey = s->lkey };
	struct ib_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	const struct ib_recv_wr *bad;

	return ib_post_recv(s->qp, &wr, &bad);
}

static int post_send(struct side *s)
{
	struct ib_sge sge = { .addr = s->dma, .length = MSG_LEN, .lkey = s->lkey };
	struct ib_ud_wr wr = {
		.wr = {
			.wr_id = 2,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IB_WR_SEND,
			.send_flags = IB_SEND_SIGNALED,
		},
	};
	const struct ib_send_wr *bad;

	if (s->ah) {
		wr.ah = s->ah;
		wr.remote_qpn = s->peer->qp->qp_num;
		wr.remote_qkey = 0x11111111;
	}
	return ib_post_send(s->qp, &wr.wr, &bad);
}

/* The calls into X's own QP. */
static void act(struct side *s)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	int err;

	if (s->qp->qp_type == IB_QPT_UD || !atomic_read(&s->to_err)) {
		if (post_recv(s))
			atomic_inc(&s->post_err);
	}
	if (atomic_dec_if_positive(&s->sends_left) >= 0) {
		if (post_send(s))
			atomic_inc(&s->post_err);
	} else if (atomic_read(&s->send_ok) >= budget && atomic_read(&s->recv_ok) >= budget &&
		   atomic_cmpxchg(&s->to_err, 0, 1) == 0) {
		err = ib_modify_qp(s->qp, &attr, IB_QP_STATE);
		if (err) {
			pr_err("cq_reentry: qp %u: modify to ERR from the handler: %d\n",
			       s->qp->qp_num, err);
			atomic_inc(&s->modify_err);
		}
	}
}

static void handler(struct ib_cq *cq, void *ctx)
{
	struct side *s = ctx;

	if (atomic_inc_return(&s->in_handler) > 1)
		atomic_inc(&s->nested);
	atomic_inc(&s->handler_runs);
	if (poll_in_handler) {
		do {
			drain(s);
		} while (ib_req_notify_cq(cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS) > 0);
	}
	act(s);
	atomic_dec(&s->in_handler);
}

static void cq_event(struct ib_event *ev, void *ctx)
{
	pr_err("cq_reentry: CQ event %d\n", ev->event);
}

static int to_rts(struct side *s, union ib_gid *gid, const u8 *mac)
{
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	if (s->qp->qp_type == IB_QPT_UD) {
		a.qkey = 0x11111111;
		err = ib_modify_qp(s->qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY);
	} else {
		a.qp_access_flags = 0;
		err = ib_modify_qp(s->qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
				   IB_QP_ACCESS_FLAGS);
	}
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	if (s->qp->qp_type == IB_QPT_UD) {
		err = ib_modify_qp(s->qp, &a, IB_QP_STATE);
	} else {
		a.path_mtu = IB_MTU_1024;
		a.dest_qp_num = s->peer->qp->qp_num;
		a.rq_psn = 0x1000;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(&a.ah_attr, 1);
		rdma_ah_set_grh(&a.ah_attr, gid, 0, 0, 64, 0);
		memcpy(a.ah_attr.roce.dmac, mac, ETH_ALEN);
		err = ib_modify_qp(s->qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
				   IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
				   IB_QP_MIN_RNR_TIMER);
	}
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 0x1000;
	if (s->qp->qp_type == IB_QPT_UD)
		return ib_modify_qp(s->qp, &a, IB_QP_STATE | IB_QP_SQ_PSN);
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ib_modify_qp(s->qp, &a, IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
}

static int setup(struct ib_device *dev, struct ib_pd *pd, struct side *s,
		 enum ib_qp_type type)
{
	struct ib_cq_init_attr ca = { .cqe = CQ_DEPTH };
	struct ib_qp_init_attr qa = {};

	s->buf = kzalloc(BUF_LEN, GFP_KERNEL);
	if (!s->buf)
		return -ENOMEM;
	s->dma = ib_dma_map_single(dev, s->buf, BUF_LEN, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, s->dma)) {
		kfree(s->buf);
		s->buf = NULL;
		return -ENOMEM;
	}
	s->lkey = pd->local_dma_lkey;
	s->cq = ib_create_cq(dev, handler, cq_event, s, &ca);
	if (IS_ERR(s->cq)) {
		int err = PTR_ERR(s->cq);

		s->cq = NULL;
		return err;
	}
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.qp_type = type;
	qa.sq_sig_type = IB_SIGNAL_ALL_WR;
	qa.cap.max_send_wr = SQ_DEPTH;
	qa.cap.max_recv_wr = RQ_DEPTH;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	s->qp = ib_create_qp(pd, &qa);
	if (IS_ERR(s->qp)) {
		int err = PTR_ERR(s->qp);

		s->qp = NULL;
		return err;
	}
	return 0;
}

static void teardown(struct ib_device *dev, struct side *s)
{
	if (s->ah)
		rdma_destroy_ah(s->ah, 0);
	if (s->qp)
		ib_destroy_qp(s->qp);
	if (s->cq)
		ib_destroy_cq(s->cq);
	if (s->buf) {
		ib_dma_unmap_single(dev, s->dma, BUF_LEN, DMA_BIDIRECTIONAL);
		kfree(s->buf);
	}
}

static bool finished(struct side *s)
{
	struct ib_qp_attr a;
	struct ib_qp_init_attr ia;

	if (!atomic_read(&s->to_err))
		return false;
	if (ib_query_qp(s->qp, &a, IB_QP_STATE, &ia) || a.qp_state != IB_QPS_ERR)
		return false;
	return atomic_read(&s->flushed) > 0;
}

static int run(struct ib_device *dev, struct ib_pd *pd, enum ib_qp_type type,
	       const char *name)
{
	struct side *sd;
	struct side *a, *b;
	union ib_gid gid;
	const struct ib_gid_attr *ga;
	u8 mac[ETH_ALEN];
	unsigned long deadline, last_progress;
	int err, i, progress, last = -1, restarts = 0, ok;

	sd = kcalloc(2, sizeof(*sd), GFP_KERNEL);
	if (!sd)
		return -ENOMEM;
	a = &sd[0];
	b = &sd[1];
	a->peer = b;
	b->peer = a;

	ga = rdma_get_gid_attr(dev, 1, 0);
	if (IS_ERR(ga)) {
		err = PTR_ERR(ga);
		goto out;
	}
	gid = ga->gid;
	err = rdma_read_gid_l2_fields(ga, NULL, mac);
	rdma_put_gid_attr(ga);
	if (err)
		goto out;

	for (i = 0; i < 2; i++) {
		err = setup(dev, pd, &sd[i], type);
		if (err)
			goto out;
		atomic_set(&sd[i].sends_left, budget);
	}
	for (i = 0; i < 2; i++) {
		err = to_rts(&sd[i], &gid, mac);
		if (err)
			goto out;
		if (type == IB_QPT_UD) {
			struct rdma_ah_attr ah = { .type = RDMA_AH_ATTR_TYPE_ROCE };

			rdma_ah_set_port_num(&ah, 1);
			rdma_ah_set_grh(&ah, &gid, 0, 0, 64, 0);
			memcpy(ah.roce.dmac, mac, ETH_ALEN);
			sd[i].ah = rdma_create_ah(pd, &ah, 0);
			if (IS_ERR(sd[i].ah)) {
				err = PTR_ERR(sd[i].ah);
				sd[i].ah = NULL;
				goto out;
			}
		}
		for (int r = 0; r < RQ_DEPTH / 2; r++) {
			err = post_recv(&sd[i]);
			if (err)
				goto out;
		}
		ib_req_notify_cq(sd[i].cq, IB_CQ_NEXT_COMP);
	}

	atomic_dec(&a->sends_left);
	err = post_send(a);
	if (err)
		goto out;

	deadline = jiffies + 60 * HZ;
	last_progress = jiffies;
	while (!(finished(a) && finished(b))) {
		if (time_after(jiffies, deadline)) {
			pr_err("cq_reentry: %s: not finished after 60 s\n", name);
			err = -ETIMEDOUT;
			break;
		}
		if (!poll_in_handler) {
			for (i = 0; i < 2; i++) {
				drain(&sd[i]);
				ib_req_notify_cq(sd[i].cq, IB_CQ_NEXT_COMP);
				drain(&sd[i]);
			}
		}
		progress = atomic_read(&a->handler_runs) + atomic_read(&b->handler_runs);
		if (progress != last) {
			last = progress;
			last_progress = jiffies;
		} else if (time_after(jiffies, last_progress + HZ / 10)) {
			/* A missed arm stopped the chain: restart it from here. */
			for (i = 0; i < 2; i++) {
				if (atomic_read(&sd[i].to_err))
					continue;
				if (atomic_dec_if_positive(&sd[i].sends_left) >= 0) {
					restarts++;
					if (post_send(&sd[i]))
						atomic_inc(&sd[i].post_err);
				} else if (!poll_in_handler && atomic_read(&sd[i].send_ok) >= budget &&
					   atomic_read(&sd[i].recv_ok) >= budget) {
					/* poll=0: the handler may not run again. */
					struct ib_qp_attr e = { .qp_state = IB_QPS_ERR };

					restarts++;
					atomic_set(&sd[i].to_err, 2);
					if (ib_modify_qp(sd[i].qp, &e, IB_QP_STATE))
						atomic_inc(&sd[i].modify_err);
				}
			}
			last_progress = jiffies;
		}
		usleep_range(1000, 2000);
	}
	if (!poll_in_handler) {
		drain(a);
		drain(b);
	}

	ok = !err;
	for (i = 0; i < 2; i++) {
		struct side *s = &sd[i];

		pr_info("cq_reentry: %s qp %u: handler runs %d, recv ok %d, send ok %d, flushed %d, other errors %d, post errors %d, moved to ERR by the handler %d (errors %d), nested runs %d\n",
			name, s->qp ? s->qp->qp_num : 0, atomic_read(&s->handler_runs),
			atomic_read(&s->recv_ok), atomic_read(&s->send_ok),
			atomic_read(&s->flushed), atomic_read(&s->other_err),
			atomic_read(&s->post_err), atomic_read(&s->to_err),
			atomic_read(&s->modify_err), atomic_read(&s->nested));
		if (atomic_read(&s->handler_runs) < budget / 2 || atomic_read(&s->recv_ok) != budget ||
		    atomic_read(&s->send_ok) != budget || atomic_read(&s->other_err) ||
		    atomic_read(&s->modify_err) || atomic_read(&s->post_err) ||
		    atomic_read(&s->flushed) == 0 || atomic_read(&s->nested))
			ok = 0;
		/* With poll=1 every step is the handler's own. */
		if (poll_in_handler && (atomic_read(&s->to_err) != 1 || restarts))
			ok = 0;
	}
	pr_info("cq_reentry: %s: %s (poll in handler %d, restarts from process context %d)\n",
		name, ok ? "PASS" : "FAIL", poll_in_handler, restarts);
	if (!err && !ok)
		err = -EIO;
out:
	if (err)
		pr_err("cq_reentry: %s: error %d\n", name, err);
	for (i = 0; i < 2; i++)
		teardown(dev, &sd[i]);
	kfree(sd);
	return err;
}

#if LINUX_VERSION_CODE < KERNEL_VERSION(7, 0, 0)
static struct ib_device *lookup_device(void)
{
	return ib_device_get_by_name(devname, RDMA_DRIVER_UNKNOWN);
}
#else
/*
 * 7.x no longer exports ib_device_get_by_name: a client that is shown
 * every registered device takes a reference on the one named devname and
 * declines them all, so it never gets a remove call.
 */
static struct ib_device *found;

static int find_add(struct ib_device *dev)
{
	if (!found && !strcmp(dev_name(&dev->dev), devname) &&
	    ib_device_try_get(dev))
		found = dev;
	return -EOPNOTSUPP;
}

static struct ib_client find_client = {
	.name = "cq_reentry",
	.add = find_add,
};

static struct ib_device *lookup_device(void)
{
	if (ib_register_client(&find_client))
		return NULL;
	ib_unregister_client(&find_client);
	return found;
}
#endif

static int __init cq_reentry_init(void)
{
	struct ib_device *dev;
	struct ib_pd *pd;
	int err, err2;

	dev = lookup_device();
	if (!dev) {
		pr_err("cq_reentry: no device %s\n", devname);
		return -ENODEV;
	}
	pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(pd)) {
		ib_device_put(dev);
		return PTR_ERR(pd);
	}
	err = run(dev, pd, IB_QPT_RC, "RC");
	err2 = run(dev, pd, IB_QPT_UD, "UD");
	ib_dealloc_pd(pd);
	ib_device_put(dev);
	return err ? err : err2;
}

static void __exit cq_reentry_exit(void)
{
}

module_init(cq_reentry_init);
module_exit(cq_reentry_exit);
MODULE_DESCRIPTION("Test client: CQ handlers that call back into their QP");
MODULE_LICENSE("Dual BSD/GPL");
