/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The one map from the -errno of the providers' inner layers (and of
 * viad's replies, via_ctl.h) to the VIP_RETURN of the VIPL API: each
 * provider (lib/viad, lib/tcp) converts once, at the API boundary, with
 * via_vip_return(), so that the same failure reads the same in both.
 */
#ifndef VIA_RETURN_H
#define VIA_RETURN_H

#include <vipl.h>

/**
 * The VIP_RETURN code of @p err.
 *
 * @param err 0 or -errno:
 *  - 0: VIP_SUCCESS; -EAGAIN: VIP_NOT_DONE;
 *  - -ENOENT, -EINVAL, -ENODEV, -EFAULT: VIP_INVALID_PARAMETER;
 *  - -EPROTONOSUPPORT: VIP_INVALID_RELIABILITY_LEVEL; -EMSGSIZE:
 *    VIP_INVALID_MTU; -EDOM: VIP_INVALID_QOS; -ESRCH: VIP_INVALID_PTAG;
 *    -EOPNOTSUPP: VIP_INVALID_RDMAREAD; -EPERM: VIP_INVALID_STATE;
 *  - -ETIMEDOUT: VIP_TIMEOUT; -ECONNREFUSED: VIP_REJECT;
 *  - -ENXIO (viad: nobody waits for the request), -EHOSTUNREACH (tcp:
 *    nothing listens at the address): VIP_NO_MATCH;
 *  - anything else (-ENOSPC, -ENOMEM, -EBUSY, viad gone, a failed socket
 *    call): VIP_ERROR_RESOURCE.
 */
VIP_RETURN via_vip_return(int err);

#endif /* VIA_RETURN_H */
