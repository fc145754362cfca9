/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The EtherType of VIA frames (docs/wire-format.md): IEEE 802 "local
 * experimental EtherType 1", no registration, never routed. One definition
 * for viad's wire format (daemon/wire.h) and for what splits a port's
 * frames by it: the exception path (glue_exception.c) and the XDP program
 * (bpf/via_xdp.c). It includes nothing, so the BPF program can include it.
 */
#ifndef VIA_ETHERTYPE_H
#define VIA_ETHERTYPE_H

#define VIA_ETHERTYPE 0x88B5

#endif /* VIA_ETHERTYPE_H */
