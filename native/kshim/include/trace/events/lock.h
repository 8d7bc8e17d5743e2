/* SPDX-License-Identifier: MIT */
/* trace/events/lock.h: part of the kernel environment in kshim/kernel.h. */
#include <kshim/kernel.h>
