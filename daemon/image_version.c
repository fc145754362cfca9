/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The image version this binary writes and adopts (image.h). The test
 * build viad_image_next (meson) compiles this file alone with
 * VIA_IMAGE_VERSION_NEXT: a viad whose image format moved on, which must
 * refuse every image of this one and hand it back (the rollback test).
 */
#include "image.h"

#ifdef VIA_IMAGE_VERSION_NEXT
const uint32_t via_image_version = VIA_IMAGE_VERSION + 1;
#else
const uint32_t via_image_version = VIA_IMAGE_VERSION;
#endif
