/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * viad's place on the host (runtime.c): its runtime directory, the lock
 * that makes an instance name one viad's, the socket files it binds, and
 * the capabilities it keeps once started.
 *
 * The runtime directory is EAL's: BASE/dpdk/PREFIX, where BASE is
 * $RUNTIME_DIRECTORY (viad.service), /var/run for root, else
 * $XDG_RUNTIME_DIR or /tmp, and PREFIX the EAL file prefix, which is the
 * instance name (viad.instance) unless EAL arguments name another. It holds
 * DPDK's telemetry socket and viad's capture and telemetry sockets.
 */
#ifndef VIA_RUNTIME_H
#define VIA_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"

/**
 * Take the instance's runtime directory before EAL starts: check that BASE
 * exists (EAL would otherwise run on with none and its sockets land in
 * "/"), make BASE/dpdk/PREFIX (mode 0700, as EAL does) and hold an
 * exclusive flock on it for viad's life, so that a second viad of the same
 * instance stops here instead of taking the first one's sockets.
 * @param eal_argv EAL's arguments (argv[0] is the program): --file-prefix
 * @param err a one-line reason on failure
 * @return 0, -ENOENT/-ENOTDIR (BASE missing), -EADDRINUSE (the instance
 *         runs), -ENAMETOOLONG, -errno of mkdir/open/flock
 */
int via_runtime_lock(char *const *eal_argv, int eal_argc, char *err, size_t errlen);

/** The directory via_runtime_lock() holds ("" before). */
const char *via_runtime_dir(void);

/**
 * Make @p path free for bind(): nothing there, or a stale socket (no one
 * listens), which is removed. A live socket, or any file that is not a
 * socket (a typo like -s /etc/viad/viad.conf), is left alone.
 * @return 0, -EADDRINUSE (a live socket), -ENOTSOCK (not a socket),
 *         -errno of lstat/unlink
 */
int via_socket_claim(const char *path);

/**
 * Whether viad can run: as root, or with the capabilities it needs to
 * start (its ports, sockets, and those it keeps: runtime.c lists them).
 * @return true, or false after writing why to @p err
 */
bool via_privileged(char *err, size_t errlen);

/**
 * Drop, in every thread of viad, every capability it does not need once
 * its ports and sockets are open: the bounding, permitted, effective and
 * inheritable sets keep only those listed in runtime.c (each with the
 * reason; af_xdp ports in @p c keep what detaching their XDP program
 * needs), and no thread or program viad starts can gain more.
 * @return 0, -errno (viad stops: it will not run with more than it says)
 */
int via_drop_privileges(const struct via_conf *c);

/**
 * Tell systemd how viad is (sd_notify(3), "READY=1", "STOPPING=1") over
 * $NOTIFY_SOCKET when viad.service (Type=notify) set it; nothing without.
 * A failure is logged: systemd then times the start out, which says why.
 */
void via_notify(const char *state);

#endif /* VIA_RUNTIME_H */
