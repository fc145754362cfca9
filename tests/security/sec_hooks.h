/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The attacker's hooks into libvipl-dpdk (tests/security only): the library
 * is compiled into the red-team program from its own sources, and these
 * functions reach its internals, so that a test can send viad any control
 * message, with any fds and any placement, on a session the library opened.
 * Nothing here is part of the shipped library.
 */
#ifndef SEC_HOOKS_H
#define SEC_HOOKS_H

#include <stdint.h>

#include <vipl.h>

/**
 * One control call of @p op on @p nic's session, its request body @p req
 * (NULL: zeros), with @p fd_in passed along (-1: none); the reply body into
 * @p rep (may be NULL) and a passed fd into *@p fd_out (may be NULL: closed).
 * @return viad's status (0 or -errno), or -ECONNRESET when the session is gone
 */
int sec_call(VIP_NIC_HANDLE nic, unsigned op, const void *req, int fd_in, void *rep,
	     int *fd_out);

/** The control socket of @p nic's session (for raw messages). */
int sec_sock(VIP_NIC_HANDLE nic);

/**
 * Send the request header and body of @p op on @p sock with the @p n fds of
 * @p fds in one SCM_RIGHTS message (n may be 0), the first @p cut bytes
 * only if @p cut is not 0. @return 0, -errno
 */
int sec_send_fds(int sock, unsigned op, uint32_t seq, const void *body, const int *fds,
		 unsigned n, unsigned cut);

/** Read one reply from @p sock within @p ms. @return its status, or -ETIMEDOUT, -ECONNRESET */
int sec_recv(int sock, unsigned ms);

#endif /* SEC_HOOKS_H */
