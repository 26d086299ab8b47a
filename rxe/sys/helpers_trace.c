// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The rxe_rs trace events (rxe_rs_trace.h) and their emitters. The Rust
 * side calls an emitter only after it saw the event's static key on
 * (rxe/kapi/trace.rs), so these are out of the way of the datapath.
 * Without CONFIG_TRACEPOINTS this file defines nothing.
 */
#include <linux/types.h>

#ifdef CONFIG_TRACEPOINTS
#include "helpers.h"
#define CREATE_TRACE_POINTS
#include "rxe_rs_trace.h"

void rxe_rs_trace_qp_state(u32 qpn, u8 old_state, u8 new_state, u8 cause,
			   u8 status)
{
	trace_qp_state(qpn, old_state, new_state, cause, status);
}

void rxe_rs_trace_pkt_send(u32 qpn, u8 opcode, u32 psn, u32 len)
{
	trace_pkt_send(qpn, opcode, psn, len);
}

void rxe_rs_trace_pkt_recv(u32 qpn, u8 opcode, u32 psn, u32 len)
{
	trace_pkt_recv(qpn, opcode, psn, len);
}

void rxe_rs_trace_retransmit(u32 qpn, u8 cause, u32 psn)
{
	trace_retransmit(qpn, cause, psn);
}

void rxe_rs_trace_nak_send(u32 qpn, u32 psn, u8 syndrome)
{
	trace_nak_send(qpn, psn, syndrome);
}

void rxe_rs_trace_nak_recv(u32 qpn, u32 psn, u8 syndrome)
{
	trace_nak_recv(qpn, psn, syndrome);
}

void rxe_rs_trace_cqe_error(u32 qpn, u64 wr_id, u8 status, u32 vendor_err,
			    bool recv)
{
	trace_cqe_error(qpn, wr_id, status, vendor_err, recv);
}

void rxe_rs_trace_pkt_drop(u8 reason, u32 qpn, u8 opcode, u32 psn)
{
	trace_pkt_drop(reason, qpn, opcode, psn);
}
#endif
