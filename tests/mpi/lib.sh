# SPDX-License-Identifier: BSD-3-Clause
#
# tests/mpi/lib.sh: what tests/mpi's scripts share (bash; source it).
#
#   memif_confs DIR    DIR/A.conf and DIR/B.conf: the two ends of a
#                      net_memif link on DIR/memif.sock, A the server
#                      (MEMIF_MAC_A), B the client (MEMIF_MAC_B)

MEMIF_MAC_A=02:00:00:00:0f:01
MEMIF_MAC_B=02:00:00:00:0f:02

memif_confs() {
	local dir=$1 side role mac
	for side in A B; do
		if [ $side = A ]; then role=server mac=$MEMIF_MAC_A; else role=client mac=$MEMIF_MAC_B; fi
		cat >"$dir/$side.conf" <<CONF
[port via0]
glue = ethdev
devargs = net_memif0,role=$role,socket=$dir/memif.sock,socket-abstract=no,mac=$mac
CONF
	done
}
