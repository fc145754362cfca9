/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who may use viad (issue 14 part 1; docs/design.md section 10): the
 * control socket is mode 0660, owned by root and viad.socket_group, and
 * viad checks viad.allowed_uids / allowed_gids itself at connect.
 *
 *  - The socket file has the group and the mode.
 *  - A user in the group (uid 5001, supplementary group 4242) opens the NIC
 *    and moves data over its own registered heap memory.
 *  - A user out of the group (uid 5002) cannot connect: VipOpenNic says
 *    VIP_ERROR_RESOURCE.
 *  - With viad.allowed_uids = 5001, a member of the group with another uid
 *    (5003) is refused by viad, which logs its uid; 5001 still gets in.
 *
 * The users need no passwd entry: the child processes take their ids with
 * setresuid/setgroups. Usage: it_access PATH/TO/viad (as root)
 */
#define _GNU_SOURCE
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define VIPL_GID 4242u
#define MEMBER 5001u
#define STRANGER 5002u
#define OTHER_MEMBER 5003u

/* Exit statuses of a client */
enum { CLIENT_OK = 0, CLIENT_NO_NIC = 10, CLIENT_NO_DATA = 11, CLIENT_IDS = 12 };

/* As uid @p uid (in group VIPL_GID if @p member): open the NIC and, if it
 * opened, send one message between two VIs over registered heap memory. */
static int
client(uid_t uid, bool member)
{
	gid_t groups[1] = { VIPL_GID };
	VIP_PROTECTION_HANDLE pt = NULL;
	VIP_VI_ATTRIBUTES va;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_DESCRIPTOR *sd, *rd, *got;
	VIP_VI_HANDLE a, b;
	VIP_MEM_HANDLE mh;
	VIP_NIC_HANDLE nic;
	uint8_t *m;
	bool ok;

	if (setgroups(member ? 1 : 0, groups) != 0 || setresgid(uid, uid, uid) != 0 ||
	    setresuid(uid, uid, uid) != 0)
		return CLIENT_IDS;
	if (VipOpenNic("via0", &nic) != VIP_SUCCESS)
		return CLIENT_NO_NIC;
	m = aligned_alloc(4096, 16384);
	h_vi_attrs(&va, NULL);
	ok = m != NULL && VipCreatePtag(nic, &pt) == VIP_SUCCESS;
	va.Ptag = pt;
	ma.Ptag = pt;
	ok = ok && VipRegisterMem(nic, m, 16384, &ma, &mh) == VIP_SUCCESS &&
	     VipCreateVi(nic, &va, NULL, NULL, &a) == VIP_SUCCESS &&
	     VipCreateVi(nic, &va, NULL, NULL, &b) == VIP_SUCCESS &&
	     h_connect_rc(nic, a, nic, b, "access", 5000, NULL) == VIP_SUCCESS;
	if (ok) {
		memset(m + 1024, 0x5a, 1000);
		sd = h_desc1(m, m + 1024, mh, 1000, true);
		rd = h_desc1(m + 512, m + 8192, mh, 1000, false);
		ok = VipPostRecv(b, rd, mh) == VIP_SUCCESS && VipPostSend(a, sd, mh) == VIP_SUCCESS &&
		     VipRecvWait(b, 5000, &got) == VIP_SUCCESS && got == rd &&
		     rd->CS.Length == 1000 && m[8192] == 0x5a && m[8192 + 999] == 0x5a;
	}
	VipCloseNic(nic);
	return ok ? CLIENT_OK : CLIENT_NO_DATA;
}

/* Run client() in a child. @return its exit status, -1 if it died */
static int
run_client(uid_t uid, bool member)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		h_set_child("client");
		_exit(client(uid, member));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

int
main(int argc, char **argv)
{
	struct viad_proc open_vd, listed_vd;
	struct stat st;

	h_init(argc, argv, 120);
	if (geteuid() != 0) {
		h_note("SKIP: needs root (it takes other users' ids)");
		return 77;
	}
	/* the users must reach the socket in the test's directory */
	CHECK(chmod(h_tmpdir(), 0755) == 0, "the test directory is 0755");

	h_note("viad.socket_group = %u: the kernel admits root and the group", VIPL_GID);
	if (viad_start(&open_vd, "group", (const char *const[]){ "viad.socket_group=4242", NULL }) ==
	    0) {
		memset(&st, 0, sizeof(st));
		stat(open_vd.sock, &st);
		CHECK(st.st_gid == VIPL_GID && st.st_uid == 0 && (st.st_mode & 0777) == 0660,
		      "socket root:%u mode %o", (unsigned)st.st_gid, (unsigned)(st.st_mode & 0777));
		CHECK(run_client(MEMBER, true) == CLIENT_OK,
		      "uid %u in the group opens the NIC and moves data over its heap memory",
		      MEMBER);
		CHECK(run_client(STRANGER, false) == CLIENT_NO_NIC,
		      "uid %u out of the group cannot connect", STRANGER);
		viad_stop(&open_vd);
	}

	h_note("viad.allowed_uids = %u: viad refuses other members, with their uid", MEMBER);
	if (viad_start(&listed_vd, "listed", (const char *const[]){
			       "viad.socket_group=4242", "viad.allowed_uids=5001", NULL }) == 0) {
		CHECK(run_client(OTHER_MEMBER, true) == CLIENT_NO_NIC,
		      "uid %u, a member of the group but not listed, is refused", OTHER_MEMBER);
		CHECK(viad_log_contains(&listed_vd, "uid 5003 gid 5003 refused"),
		      "viad logs the refused uid");
		CHECK(run_client(MEMBER, true) == CLIENT_OK, "uid %u, listed, gets in", MEMBER);
		viad_stop(&listed_vd);
	}
	return h_finish();
}
