/* SPDX-License-Identifier: MIT */
/* registry.c - the built-in locks (native/locks/registry.def), plugins loaded at run time, and
 * their listing (--list). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <locklab/tunable.h>

#include "engine.h"

#define LOCK(ops) extern const struct lock_ops ops;
#include "../locks/registry.def"
#undef LOCK

#define MAX_PLUGINS 8

static const struct lock_ops *const builtin_locks[] = {
#define LOCK(ops) &ops,
#include "../locks/registry.def"
#undef LOCK
};

#define BUILTIN_COUNT (sizeof(builtin_locks) / sizeof(builtin_locks[0]))

static const struct lock_ops *plugin_locks[MAX_PLUGINS];
/* A plugin's own writer loop (worker_loop.h compiled with its lock inlined), or NULL. */
static plugin_writer_loop_fn *plugin_loops[MAX_PLUGINS];
static plugin_events_fn *plugin_events[MAX_PLUGINS];
static size_t plugin_count;

size_t registry_count(void) { return BUILTIN_COUNT + plugin_count; }

const struct lock_ops *registry_at(size_t i)
{
	return i < BUILTIN_COUNT ? builtin_locks[i] : plugin_locks[i - BUILTIN_COUNT];
}

/*
 * One naming rule: lower-case words joined by '_'. Locks named before the rule keep their old
 * name as an alias, so stored results and campaign files that use it still run.
 */
static const struct {
	const char *alias, *name;
} lock_aliases[] = {
	{ "rtmutex-k0", "rtmutex_k0" },	 { "rtmutex-k1", "rtmutex_k1" },
	{ "rtmutex-k2", "rtmutex_k2" },	 { "rtmutex-k3", "rtmutex_k3" },
	{ "rtmutex-k4", "rtmutex_k4" },	 { "rtmutex-k5", "rtmutex_k5" },
	{ "qspinlock-nr16k", "qspinlock_nr16k" }, { "cna-v1", "cna_v1" },
};

#define ALIAS_COUNT (sizeof(lock_aliases) / sizeof(lock_aliases[0]))

static const char *canonical_name(const char *name)
{
	for (size_t i = 0; i < ALIAS_COUNT; i++)
		if (strcmp(lock_aliases[i].alias, name) == 0)
			return lock_aliases[i].name;
	return name;
}

const struct lock_ops *registry_find(const char *name)
{
	name = canonical_name(name);
	for (size_t i = 0; i < registry_count(); i++)
		if (strcmp(registry_at(i)->name, name) == 0)
			return registry_at(i);
	return NULL;
}

size_t lock_tunable_count(const struct lock_ops *ops)
{
	size_t n = 0;
	while (ops->tunables != NULL && ops->tunables[n].name != NULL)
		n++;
	return n;
}

const struct lock_ops *registry_last_plugin(void)
{
	return plugin_count ? plugin_locks[plugin_count - 1] : NULL;
}

plugin_writer_loop_fn *registry_plugin_loop(const struct lock_ops *ops)
{
	for (size_t i = 0; i < plugin_count; i++)
		if (plugin_locks[i] == ops)
			return plugin_loops[i];
	return NULL;
}

plugin_events_fn *registry_plugin_events(const struct lock_ops *ops)
{
	for (size_t i = 0; i < plugin_count; i++)
		if (plugin_locks[i] == ops)
			return plugin_events[i];
	return NULL;
}

/* ':' separates a source from a lock (kernel:rtmutex: the kernel tree's rtmutex). */
static bool valid_lock_name(const char *name)
{
	if (name == NULL || *name == '\0')
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' ||
		      *p == ':'))
			return false;
	return true;
}

void registry_load_plugin(const char *path)
{
	if (plugin_count == MAX_PLUGINS)
		usage_error("too many plugins (at most %d)", MAX_PLUGINS);
	/* RTLD_NOW: an unresolved symbol is an error now, not a crash mid-run. */
	void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL)
		usage_error("cannot load plugin: %s", dlerror());
#ifdef LOCKLAB_SIM
	const char *not_simulated = locklab_sim_uninstrumented_plugin(path);
	if (not_simulated != NULL)
		usage_error("plugin %s cannot run in the simulator: %s", path, not_simulated);
#endif
	const struct lock_ops *ops = dlsym(handle, LOCKLAB_PLUGIN_SYMBOL);
	if (ops == NULL)
		usage_error("plugin %s does not export '%s'", path, LOCKLAB_PLUGIN_SYMBOL);
	if (ops->abi_version != LOCKLAB_ABI_VERSION)
		usage_error("plugin %s was built for lock ABI %u, this engine has %u: rebuild it",
			    path, ops->abi_version, LOCKLAB_ABI_VERSION);
	if (!valid_lock_name(ops->name))
		usage_error("plugin %s: lock name must be lower case letters, digits, '_', '-' or ':'",
			    path);
	if (ops->lock == NULL || ops->unlock == NULL || ops->lock_size == 0)
		usage_error("plugin %s: lock '%s' needs lock, unlock and a lock_size", path,
			    ops->name);
	if ((ops->flags & LOCK_READER_WRITER) && (!ops->read_lock || !ops->read_unlock))
		usage_error("plugin %s: reader-writer lock '%s' needs read_lock and read_unlock",
			    path, ops->name);
	if (lock_tunable_count(ops) > MAX_TUNABLES)
		usage_error("plugin %s: at most %d tunables", path, MAX_TUNABLES);
	if (registry_find(ops->name) != NULL)
		usage_error("plugin %s: a lock named '%s' already exists", path, ops->name);
	/*
	 * A writer loop of its own is compiled against the engine's structures: it is used only
	 * by the engine whose layout (a hash of the headers that define them) it was built for.
	 */
	plugin_writer_loop_fn *loop = (plugin_writer_loop_fn *)dlsym(handle, LOCKLAB_PLUGIN_LOOP_SYMBOL);
	if (loop != NULL) {
		const char *layout = dlsym(handle, LOCKLAB_PLUGIN_LAYOUT_SYMBOL);
		if (layout == NULL || strcmp(layout, LOCKLAB_ENGINE_LAYOUT) != 0)
			usage_error("plugin %s was built for engine layout %s, this engine has %s: "
				    "rebuild the older of the two ('make' rebuilds the engine, and "
				    "locklab the plugins it compiled)", path,
				    layout ? layout : "none", LOCKLAB_ENGINE_LAYOUT);
	}
	plugin_loops[plugin_count] = loop;
	plugin_events[plugin_count] = (plugin_events_fn *)dlsym(handle, LOCKLAB_PLUGIN_EVENTS_SYMBOL);
	plugin_locks[plugin_count++] = ops;
}
void list_locks(const char *json_path)
{
	if (json_path == NULL) {
		for (size_t i = 0; i < registry_count(); i++) {
			const struct lock_ops *ops = registry_at(i);
			printf("%-18s %-12s %s\n", ops->name, ops->family, ops->summary);
		}
		return;
	}
	struct json_writer *j = json_open(json_path);
	if (j == NULL)
		usage_error("cannot write %s", json_path);
	json_int(j, "schema", ENGINE_SCHEMA_VERSION);
	json_begin_array(j, "locks");
	for (size_t i = 0; i < registry_count(); i++) {
		const struct lock_ops *ops = registry_at(i);
		json_begin_object(j, NULL);
		json_string(j, "name", ops->name);
		json_string(j, "family", ops->family);
		json_string(j, "summary", ops->summary);
		json_string(j, "source", ops->source);
		json_begin_array(j, "aliases");
		for (size_t a = 0; a < ALIAS_COUNT; a++)
			if (strcmp(lock_aliases[a].name, ops->name) == 0)
				json_string(j, NULL, lock_aliases[a].alias);
		json_end_array(j);
		json_begin_array(j, "flags");
		static const char *const flag_names[] = { "spins", "sleeps", "reader_writer",
							  "priority_inheritance", "external",
							  "tsan_opaque" };
		for (unsigned int f = 0; f < sizeof(flag_names) / sizeof(flag_names[0]); f++)
			if (ops->flags & (1u << f))
				json_string(j, NULL, flag_names[f]);
		json_end_array(j);
		json_begin_array(j, "tunables");
		for (size_t t = 0; t < lock_tunable_count(ops); t++) {
			const struct lock_tunable *tun = &ops->tunables[t];
			json_begin_object(j, NULL);
			json_string(j, "name", tun->name);
			json_int(j, "default", tun->default_value);
			json_int(j, "min", tun->min_value);
			json_int(j, "max", tun->max_value);
			json_string(j, "meaning", tun->meaning);
			if (tun->choices != NULL) {
				json_begin_array(j, "choices");
				for (long v = tun->min_value; v <= tun->max_value; v++)
					json_string(j, NULL, lock_tunable_choice(tun, v));
				json_end_array(j);
			}
			json_end_object(j);
		}
		json_end_array(j);
		json_end_object(j);
	}
	json_end_array(j);
	json_close(j);
}
