/* SPDX-License-Identifier: MIT */
/*
 * c11_ttas_orders - examples/plugin/c11_ttas.c with acquire and release orders on its accesses
 * in place of its fences: the form ThreadSanitizer follows, so under --build tsan it must run
 * clean, where the fenced form comes with locklab's note that TSAN does not model fences.
 */
#define C11_TTAS_ORDERS
#include "../../examples/plugin/c11_ttas.c"
