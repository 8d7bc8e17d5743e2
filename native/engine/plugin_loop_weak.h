/* SPDX-License-Identifier: MIT */
/*
 * plugin_loop_weak.h - for a plugin with a writer loop of its own (native/kshim/plugin.c,
 * native/engine/source_plugin/loop.c), after worker_hot.h: the engine's functions that loop
 * calls, declared weak. The interposition library (locklab exec) loads the same plugin without
 * an engine, and never calls the loop.
 */
#ifndef LOCKLAB_PLUGIN_LOOP_WEAK_H
#define LOCKLAB_PLUGIN_LOOP_WEAK_H

#pragma weak busy_loop
#pragma weak worker_control_changed
#pragma weak worker_maybe_long_hold
#pragma weak worker_note_handoff
#pragma weak worker_note_owner
#pragma weak worker_note_violations
#pragma weak worker_record_sample
#pragma weak worker_stop_at_target
#pragma weak worker_torture_before_lock
#pragma weak worker_torture_hold

#endif
