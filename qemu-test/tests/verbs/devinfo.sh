#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma-core sees an rs device exactly as it sees a c one: the verbose
# ibv_devinfo, `rdma link show` and the device's sysfs attributes are equal
# once the per-node values (GUIDs, GIDs, names, firmware) are masked.
#
#   qemu-test/run --drivers rs,c qemu-test/tests/verbs/devinfo.sh
set -euo pipefail
. "$REPO/qemu-test/lib/lib.sh"

# Mask what legitimately differs between two nodes.
normalize() {
	sed -E \
		-e 's/(hca_id:|fw_ver:|node_guid:|sys_image_guid:)\s.*/\1 X/' \
		-e 's/(GID\[ *[0-9]+\]:)\s+[0-9a-f:.]+/\1 GID/' \
		-e "s/\b$RXE_DEV\b/DEV/g"
}

# rxe_rs has on-demand paging on every kernel, rdma_rxe only from 6.15 on:
# when an rdma_rxe of 6.12 takes part (on either node; the nodes may run
# different kernels) the capability lists under the *_odp_caps headers are
# left out of the comparison (the headers stay); against 7.x's rdma_rxe
# they must be equal.
old_c=0
[ "$RXE_DRIVER" = c ] && [ "${RXE_KERNEL:-6.12}" = 6.12 ] && old_c=1
publish "old_c.$NODE_INDEX" "$old_c"
peer_old_c=$(fetch "old_c.$((3 - NODE_INDEX))")
mask_odp() {
	if ((old_c || peer_old_c)); then
		awk '/_odp_caps:/ { print; skip = 1; next } skip && /^\t\t\t\t\t/ { next } { skip = 0; print }'
	else
		cat
	fi
}

snapshot() {
	local d=/sys/class/infiniband/$RXE_DEV f
	ibv_devinfo -v -d "$RXE_DEV" | normalize | mask_odp
	echo "--- rdma link"
	rdma link show "$RXE_DEV/1" | normalize
	echo "--- sysfs"
	for f in node_type node_desc parent ports/1/state ports/1/phys_state \
		ports/1/link_layer ports/1/lid ports/1/sm_lid ports/1/cap_mask \
		ports/1/gid_attrs/types/0 ports/1/gid_attrs/types/1 ports/1/pkeys/0; do
		printf '%s: %s\n' "$f" "$(cat "$d/$f" 2>&1)"
	done
}

# Give the GID table a moment to settle on the node's addresses.
sleep 1
snapshot >"$SHARED_DIR/devinfo.node$NODE_INDEX"
cp "$SHARED_DIR/devinfo.node$NODE_INDEX" "$OUT_DIR/devinfo.txt"
same_on_all_nodes devinfo "ibv_devinfo/sysfs"

if ((NODE_INDEX == 1)); then
	grep -q 'transport:.*InfiniBand' "$SHARED_DIR/devinfo.node1" || fail "no transport line"
	grep -q 'state:.*PORT_ACTIVE' "$SHARED_DIR/devinfo.node1" || fail "port not active"
	grep -q 'link_layer:.*Ethernet' "$SHARED_DIR/devinfo.node1" || fail "link layer not Ethernet"
	grep -q 'RoCE v2' "$SHARED_DIR/devinfo.node1" || fail "no RoCE v2 GID"
	note "devinfo identical"
fi
barrier finished
