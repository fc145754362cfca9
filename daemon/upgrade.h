/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Upgrading viad under running clients (docs/design.md section 18): the
 * handover across exec (upgrade.c), the image it writes and reads
 * (image.h, image_save.c, image_adopt.c, the connection manager's part in
 * cm.c), and the admin socket that asks for it (via_upgrade_proto.h).
 */
#ifndef VIA_UPGRADE_H
#define VIA_UPGRADE_H

#include <stdbool.h>
#include <stdint.h>

#include "image.h"

struct viad;
struct via_idtab;

/* ---- image_save.c ------------------------------------------------------------ */

/**
 * Write viad's state into @p ib (begun and ended here but for the header's
 * own fields, via_image_finish()), the poll lcores parked: @p listen_fd is
 * the clients' socket, @p reap_fds the fds the reapers had not closed yet.
 * Changes nothing. @return 0, -ENOMEM, -EMSGSIZE (a frame too large),
 *         -EFAULT (a client took away the pages of a zero-copy frame in flight)
 */
int via_image_save(struct viad *d, struct via_image_buf *ib, int listen_fd, const int *reap_fds,
		   uint32_t nb_reap);

/* ---- image_adopt.c ----------------------------------------------------------- */

/**
 * Rebuild viad's objects from @p img (parsed), the NICs open and checked
 * against its NIC records: tables, users, sessions with their fds judged
 * again, segments, memory and views mapped again, regions, CQs, VIs with
 * their transport's frames, the connection manager's state. Closes no fd
 * of the image, on success or failure: a failed adoption rolls back by
 * exec, with every fd as it came.
 * @return 0; -EINVAL, -ENOMEM, -errno of a mapping; *@p why says what
 */
int via_image_adopt(struct viad *d, const struct via_image *img, const char **why);

/* ---- cm.c -------------------------------------------------------------------- */

/** The connection manager's table of incoming requests (its ids are in the image). */
const struct via_idtab *via_cm_reqs(const struct viad *d);
/** Its key and timers' part of the daemon record. */
void via_cm_save_daemon(const struct viad *d, struct via_img_daemon *dm);
/** Its requests and VipConnectWait calls in progress. */
void via_cm_save(struct viad *d, struct via_image_buf *ib);
/**
 * Take them back, the sessions and VIs adopted: what measures the other
 * end's silence moves past the blackout of @p blackout_ms, consumers'
 * Timeouts stand. @return 0, -ENOMEM, -EINVAL (*@p why)
 */
int via_cm_adopt(struct viad *d, const struct via_image *img, uint64_t blackout_ms,
		 const char **why);

/* ---- upgrade.c: the handover ---------------------------------------------------- */

/**
 * At start, before anything else: keep viad's arguments (less --adopt's)
 * and an O_PATH fd of its running binary, the rollback's. *@p adopt_fd is
 * the image to adopt (-1: none), *@p refused the reason a new binary
 * handed it back for (NULL: not a rollback). @return 0, -errno
 */
int via_upgrade_init(int argc, char **argv, int *adopt_fd, const char **refused);
/**
 * Open the admin socket (via_upgrade_proto.h) in the EAL runtime directory and
 * add it to epoll set @p ep with key @p key; with !@p allowed
 * (viad.upgrades = no) every request is refused. @return 0, -errno
 */
int via_upgrade_listen(int ep, uint64_t key, bool allowed);
/** Close and remove the admin socket. */
void via_upgrade_unlisten(void);
/**
 * The admin socket (@p listener) or the connection whose request is awaited
 * (its epoll key: @p conn_key) is readable. Refused requests are answered
 * at once; an accepted one makes via_upgrade_asked() true.
 */
void via_upgrade_admin_event(int ep, bool listener, uint64_t conn_key);
/** SIGUSR2: an upgrade to the binary at viad's own path. */
void via_upgrade_signal(void);
/** Handovers of this pid so far, and the last one's blackout (*@p blackout_us). */
uint32_t via_upgrade_count(uint64_t *blackout_us);
/** Whether an upgrade is asked for: via_upgrade_run() it between two batches of events. */
bool via_upgrade_asked(void);
/**
 * Hand over to the new binary (control thread, no data-path lock held):
 * never returns, unless the image could not be written: then viad goes on
 * (logged, the asker told).
 */
void via_upgrade_run(struct viad *d, int listen_fd);
/**
 * The new viad, before EAL: map and check the image of @p fd. An image it
 * cannot adopt goes back to the old binary (never returns).
 */
int via_upgrade_open(int fd, struct via_image *img);
/**
 * The new viad could not start (@p why), EAL released: the old binary
 * takes the image back. Never returns.
 */
void via_upgrade_failed(const struct via_image *img, const char *why) __attribute__((noreturn));
/**
 * The new viad, its NICs open and the control thread set up (guard,
 * reapers): adopt @p img; *@p listen_fd is the clients' socket, d->wake_fd
 * the pollers' eventfd. A failure goes back to the old binary (never
 * returns).
 */
void via_upgrade_adopt(struct viad *d, const struct via_image *img, int *listen_fd);
/**
 * The new viad, just before its poll lcores start: the transport told its
 * peers, every VI given a turn, the reapers' fds queued, the asker
 * answered with the blackout.
 */
void via_upgrade_resumed(struct viad *d, const struct via_image *img);

#endif /* VIA_UPGRADE_H */
