/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The rxe_rs trace events (/sys/kernel/tracing/events/rxe_rs/). Defined in
 * C because the 6.12 kernel crate has no tracepoint support; the Rust side
 * (rxe/kapi/trace.rs) tests each event's static key inline and calls the
 * emitters of helpers_trace.c only when the event is on.
 *
 * The enums below are outside the multi-read part: bindgen reads them, so
 * the numbers the Rust side passes are the ones the TP_printk tables name.
 */
#ifndef RXE_RS_TRACE_ENUMS_H
#define RXE_RS_TRACE_ENUMS_H

/* Why a QP changed state. */
enum rxe_rs_trace_cause {
	RXE_RS_CAUSE_MODIFY,		/* modify_qp by the user */
	RXE_RS_CAUSE_SEND_FAILED,	/* the requester could not build or send */
	RXE_RS_CAUSE_COMPLETION,	/* a send WQE completed in error */
	RXE_RS_CAUSE_RECEIVE,		/* a request failed at the responder */
};

/* What started a retransmission. */
enum rxe_rs_trace_retry {
	RXE_RS_RETRY_TIMEOUT,		/* the local ACK timer fired */
	RXE_RS_RETRY_NAK,		/* a PSN sequence error NAK */
	RXE_RS_RETRY_RNR,		/* an RNR NAK (resent when its timer ends) */
	RXE_RS_RETRY_IMPLICIT,		/* a response skipped a read or atomic */
};

/* Why a received packet was dropped: the rcvd_drop_* counters. */
enum rxe_rs_trace_drop {
	RXE_RS_DROP_BAD_HDR,
	RXE_RS_DROP_BAD_ICRC,
	RXE_RS_DROP_NO_QP,
	RXE_RS_DROP_QP_STATE,
	RXE_RS_DROP_BAD_KEY,
	RXE_RS_DROP_NOT_OURS,
	RXE_RS_DROP_NOMEM,
	RXE_RS_DROP_QUEUE_FULL,
};

#endif

#undef TRACE_SYSTEM
#define TRACE_SYSTEM rxe_rs

#if !defined(RXE_RS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RXE_RS_TRACE_H

#include <linux/tracepoint.h>

#define rxe_rs_show_qp_state(s)					\
	__print_symbolic(s, { 0, "RESET" }, { 1, "INIT" },	\
			 { 2, "RTR" }, { 3, "RTS" }, { 4, "SQD" },	\
			 { 5, "SQE" }, { 6, "ERR" })

#define rxe_rs_show_cause(c)						\
	__print_symbolic(c, { RXE_RS_CAUSE_MODIFY, "modify" },		\
			 { RXE_RS_CAUSE_SEND_FAILED, "send_failed" },	\
			 { RXE_RS_CAUSE_COMPLETION, "completion" },	\
			 { RXE_RS_CAUSE_RECEIVE, "receive" })

#define rxe_rs_show_retry(c)						\
	__print_symbolic(c, { RXE_RS_RETRY_TIMEOUT, "timeout" },	\
			 { RXE_RS_RETRY_NAK, "nak" },			\
			 { RXE_RS_RETRY_RNR, "rnr" },			\
			 { RXE_RS_RETRY_IMPLICIT, "implicit" })

#define rxe_rs_show_drop(r)						\
	__print_symbolic(r, { RXE_RS_DROP_BAD_HDR, "bad_hdr" },	\
			 { RXE_RS_DROP_BAD_ICRC, "bad_icrc" },		\
			 { RXE_RS_DROP_NO_QP, "no_qp" },		\
			 { RXE_RS_DROP_QP_STATE, "qp_state" },		\
			 { RXE_RS_DROP_BAD_KEY, "bad_key" },		\
			 { RXE_RS_DROP_NOT_OURS, "not_ours" },		\
			 { RXE_RS_DROP_NOMEM, "nomem" },		\
			 { RXE_RS_DROP_QUEUE_FULL, "queue_full" })

/* The IBA's names of the opcodes rxe_rs sends and takes (others: hex). */
#define rxe_rs_show_opcode(o)						\
	__print_symbolic(o,						\
		{ 0x00, "RC_SEND_FIRST" }, { 0x01, "RC_SEND_MIDDLE" },	\
		{ 0x02, "RC_SEND_LAST" }, { 0x03, "RC_SEND_LAST_IMM" },	\
		{ 0x04, "RC_SEND_ONLY" }, { 0x05, "RC_SEND_ONLY_IMM" },	\
		{ 0x06, "RC_WRITE_FIRST" }, { 0x07, "RC_WRITE_MIDDLE" },\
		{ 0x08, "RC_WRITE_LAST" }, { 0x09, "RC_WRITE_LAST_IMM" },\
		{ 0x0a, "RC_WRITE_ONLY" }, { 0x0b, "RC_WRITE_ONLY_IMM" },\
		{ 0x0c, "RC_READ_REQUEST" },				\
		{ 0x0d, "RC_READ_RESPONSE_FIRST" },			\
		{ 0x0e, "RC_READ_RESPONSE_MIDDLE" },			\
		{ 0x0f, "RC_READ_RESPONSE_LAST" },			\
		{ 0x10, "RC_READ_RESPONSE_ONLY" },			\
		{ 0x11, "RC_ACK" }, { 0x12, "RC_ATOMIC_ACK" },		\
		{ 0x13, "RC_CMP_SWAP" }, { 0x14, "RC_FETCH_ADD" },	\
		{ 0x16, "RC_SEND_LAST_INV" },				\
		{ 0x17, "RC_SEND_ONLY_INV" },				\
		{ 0x1c, "RC_FLUSH" }, { 0x1d, "RC_ATOMIC_WRITE" },	\
		{ 0x20, "UC_SEND_FIRST" }, { 0x21, "UC_SEND_MIDDLE" },	\
		{ 0x22, "UC_SEND_LAST" }, { 0x23, "UC_SEND_LAST_IMM" },	\
		{ 0x24, "UC_SEND_ONLY" }, { 0x25, "UC_SEND_ONLY_IMM" },	\
		{ 0x26, "UC_WRITE_FIRST" }, { 0x27, "UC_WRITE_MIDDLE" },\
		{ 0x28, "UC_WRITE_LAST" }, { 0x29, "UC_WRITE_LAST_IMM" },\
		{ 0x2a, "UC_WRITE_ONLY" }, { 0x2b, "UC_WRITE_ONLY_IMM" },\
		{ 0x64, "UD_SEND_ONLY" }, { 0x65, "UD_SEND_ONLY_IMM" })

/*
 * An AETH syndrome: ACK (0x00-0x1f, credits), RNR NAK (0x20-0x3f, timer
 * code), NAK (0x60-0x7f, NAK code).
 */
#define rxe_rs_show_syndrome(s)						\
	(((s) & 0xe0) == 0x20 ? "RNR" :					\
	 __print_symbolic(s, { 0x60, "PSN_SEQ_ERR" },			\
			  { 0x61, "INV_REQ" }, { 0x62, "REM_ACCESS_ERR" },\
			  { 0x63, "REM_OP_ERR" }, { 0x64, "INV_RD_REQ" }))

#define rxe_rs_show_wc_status(s)					\
	__print_symbolic(s, { 0, "SUCCESS" }, { 1, "LOC_LEN_ERR" },	\
		{ 2, "LOC_QP_OP_ERR" }, { 3, "LOC_EEC_OP_ERR" },	\
		{ 4, "LOC_PROT_ERR" }, { 5, "WR_FLUSH_ERR" },		\
		{ 6, "MW_BIND_ERR" }, { 7, "BAD_RESP_ERR" },		\
		{ 8, "LOC_ACCESS_ERR" }, { 9, "REM_INV_REQ_ERR" },	\
		{ 10, "REM_ACCESS_ERR" }, { 11, "REM_OP_ERR" },		\
		{ 12, "RETRY_EXC_ERR" }, { 13, "RNR_RETRY_EXC_ERR" },	\
		{ 14, "LOC_RDD_VIOL_ERR" }, { 15, "REM_INV_RD_REQ_ERR" },\
		{ 16, "REM_ABORT_ERR" }, { 17, "INV_EECN_ERR" },	\
		{ 18, "INV_EEC_STATE_ERR" }, { 19, "FATAL_ERR" },	\
		{ 20, "RESP_TIMEOUT_ERR" }, { 21, "GENERAL_ERR" })

TRACE_EVENT(qp_state,
	TP_PROTO(u32 qpn, u8 old_state, u8 new_state, u8 cause, u8 status),
	TP_ARGS(qpn, old_state, new_state, cause, status),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u8, old_state)
		__field(u8, new_state)
		__field(u8, cause)
		__field(u8, status)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->old_state = old_state;
		__entry->new_state = new_state;
		__entry->cause = cause;
		__entry->status = status;
	),
	TP_printk("qpn=%u old=%s new=%s cause=%s status=%s", __entry->qpn,
		  rxe_rs_show_qp_state(__entry->old_state),
		  rxe_rs_show_qp_state(__entry->new_state),
		  rxe_rs_show_cause(__entry->cause),
		  rxe_rs_show_wc_status(__entry->status))
);

/* A packet's BTH: destination QPN, opcode, PSN; len: its payload bytes. */
DECLARE_EVENT_CLASS(rxe_rs_pkt,
	TP_PROTO(u32 qpn, u8 opcode, u32 psn, u32 len),
	TP_ARGS(qpn, opcode, psn, len),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, len)
		__field(u8, opcode)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->len = len;
		__entry->opcode = opcode;
	),
	TP_printk("qpn=%u opcode=%s psn=%u len=%u", __entry->qpn,
		  rxe_rs_show_opcode(__entry->opcode), __entry->psn,
		  __entry->len)
);

DEFINE_EVENT(rxe_rs_pkt, pkt_send,
	TP_PROTO(u32 qpn, u8 opcode, u32 psn, u32 len),
	TP_ARGS(qpn, opcode, psn, len));

DEFINE_EVENT(rxe_rs_pkt, pkt_recv,
	TP_PROTO(u32 qpn, u8 opcode, u32 psn, u32 len),
	TP_ARGS(qpn, opcode, psn, len));

TRACE_EVENT(retransmit,
	TP_PROTO(u32 qpn, u8 cause, u32 psn),
	TP_ARGS(qpn, cause, psn),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, cause)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->cause = cause;
	),
	TP_printk("qpn=%u cause=%s psn=%u", __entry->qpn,
		  rxe_rs_show_retry(__entry->cause), __entry->psn)
);

/* qpn: the local QP that sent or received the NAK. */
DECLARE_EVENT_CLASS(rxe_rs_nak,
	TP_PROTO(u32 qpn, u32 psn, u8 syndrome),
	TP_ARGS(qpn, psn, syndrome),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, syndrome)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->syndrome = syndrome;
	),
	TP_printk("qpn=%u psn=%u syndrome=0x%02x nak=%s", __entry->qpn,
		  __entry->psn, __entry->syndrome,
		  rxe_rs_show_syndrome(__entry->syndrome))
);

DEFINE_EVENT(rxe_rs_nak, nak_send,
	TP_PROTO(u32 qpn, u32 psn, u8 syndrome),
	TP_ARGS(qpn, psn, syndrome));

DEFINE_EVENT(rxe_rs_nak, nak_recv,
	TP_PROTO(u32 qpn, u32 psn, u8 syndrome),
	TP_ARGS(qpn, psn, syndrome));

TRACE_EVENT(cqe_error,
	TP_PROTO(u32 qpn, u64 wr_id, u8 status, u32 vendor_err, bool recv),
	TP_ARGS(qpn, wr_id, status, vendor_err, recv),
	TP_STRUCT__entry(
		__field(u64, wr_id)
		__field(u32, qpn)
		__field(u32, vendor_err)
		__field(u8, status)
		__field(bool, recv)
	),
	TP_fast_assign(
		__entry->wr_id = wr_id;
		__entry->qpn = qpn;
		__entry->vendor_err = vendor_err;
		__entry->status = status;
		__entry->recv = recv;
	),
	TP_printk("qpn=%u queue=%s wr_id=0x%llx status=%s vendor_err=%u",
		  __entry->qpn, __entry->recv ? "recv" : "send",
		  (unsigned long long)__entry->wr_id,
		  rxe_rs_show_wc_status(__entry->status),
		  __entry->vendor_err)
);

/*
 * qpn, opcode, psn: the BTH's; 0, 0xff and 0 when the headers were not
 * parsed (bad_hdr, nomem).
 */
TRACE_EVENT(pkt_drop,
	TP_PROTO(u8 reason, u32 qpn, u8 opcode, u32 psn),
	TP_ARGS(reason, qpn, opcode, psn),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, reason)
		__field(u8, opcode)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->reason = reason;
		__entry->opcode = opcode;
	),
	TP_printk("reason=%s qpn=%u opcode=%s psn=%u",
		  rxe_rs_show_drop(__entry->reason), __entry->qpn,
		  rxe_rs_show_opcode(__entry->opcode), __entry->psn)
);

#endif /* RXE_RS_TRACE_H */

/* Out of the kernel tree: define_trace.h finds this file through -I. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rxe_rs_trace
#include <trace/define_trace.h>
