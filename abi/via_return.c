/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>

#include "via_return.h"

VIP_RETURN
via_vip_return(int err)
{
	switch (err) {
	case 0:
		return VIP_SUCCESS;
	case -EAGAIN:
		return VIP_NOT_DONE;
	case -ENOENT:
	case -EINVAL:
	case -ENODEV:
	case -EFAULT:
		return VIP_INVALID_PARAMETER;
	case -EPROTONOSUPPORT:
		return VIP_INVALID_RELIABILITY_LEVEL;
	case -EMSGSIZE:
		return VIP_INVALID_MTU;
	case -EDOM:
		return VIP_INVALID_QOS;
	case -ESRCH:
		return VIP_INVALID_PTAG;
	case -EOPNOTSUPP:
		return VIP_INVALID_RDMAREAD;
	case -EPERM:
		return VIP_INVALID_STATE;
	case -ETIMEDOUT:
		return VIP_TIMEOUT;
	case -ECONNREFUSED:
		return VIP_REJECT;
	case -ENXIO:
	case -EHOSTUNREACH:
		return VIP_NO_MATCH;
	default:
		return VIP_ERROR_RESOURCE;
	}
}
