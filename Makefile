# locklab: `make demo` runs a short default experiment, `make test` runs every test.
# Both install what is missing (Debian packages, the Python virtualenv) and build first.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BUILD := build
# A copy shipped to a host (locklab --hosts) has no .git: the shipping locklab passes its commit.
VERSION := $(or $(LOCKLAB_COMMIT),$(shell git describe --always --dirty 2>/dev/null || echo unknown))
# What a plugin's own writer loop is compiled against (native/kshim/plugin.c): a hash of the
# engine headers it includes. An engine loads such a loop only from a plugin with the same hash.
LAYOUT_HEADERS := native/engine/engine.h native/engine/worker_hot.h native/engine/worker_loop.h \
	native/include/locklab/lock.h native/include/locklab/kernel.h native/include/locklab/arch.h \
	native/include/locklab/cacheline.h
ENGINE_LAYOUT := $(shell cat $(LAYOUT_HEADERS) | sha256sum | cut -c1-16)

CC ?= gcc
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -pthread -g $(WARNINGS) -Inative/include \
	-DLOCKLAB_VERSION='"$(VERSION)"' -DLOCKLAB_ENGINE_LAYOUT='"$(ENGINE_LAYOUT)"'
# Per build variant: optimised (what is measured), ThreadSanitizer, AddressSanitizer+UBSan.
CFLAGS_opt := -O2
# A C11 fence is a warning under -fsanitize=thread (-Wtsan: ThreadSanitizer does not model it),
# not an error: such a lock runs, and locklab says that its reports may include what a fence
# orders (run/source_plugin.py reads the warning). The simulator models fences (-Wno-tsan).
CFLAGS_tsan := -O1 -fsanitize=thread -Wno-error=tsan
CFLAGS_asan := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
VARIANTS := opt tsan asan
# The simulator (native/sim/, docs/simulator.md): the same sources, instrumented by GCC's
# ThreadSanitizer pass, whose hooks locklab's runtime defines instead of libtsan. Hence two
# steps: the instrumented objects, then a link without -fsanitize (which would add libtsan).
# Function entry and exit hooks carry nothing the model uses.
# Concurrency Kit on its compiler builtins (ck_pr.h's CK_USE_CC_BUILTINS), which the pass sees,
# instead of its inline assembly, which it cannot.
CFLAGS_sim := -O2 -fsanitize=thread --param=tsan-instrument-func-entry-exit=0 -DLOCKLAB_SIM \
	-DCK_USE_CC_BUILTINS=1 -Wno-tsan
SIM_RUNTIME_SRC := $(wildcard native/sim/*.c)
# What a build's shared objects are linked with: its flags, sanitizer runtimes included; the
# simulator's plugins without -fsanitize, their hooks resolved against locklab-sim's.
LINK_FLAGS_opt = $(CFLAGS_opt)
LINK_FLAGS_tsan = $(CFLAGS_tsan)
LINK_FLAGS_asan = $(CFLAGS_asan)
LINK_FLAGS_sim := -O2

ENGINE_SRC := $(wildcard native/engine/*.c)
LOCK_SRC := $(wildcard native/locks/*.c)
# The engine compiles a lock family with a writer loop of its own (native/engine/loops/, listed
# in loops.def) from that loop's file, which includes the lock's source, instead of the source.
LOOP_SRC := $(wildcard native/engine/loops/*.c)
ENGINE_LOCK_SRC := $(LOOP_SRC) $(filter-out $(patsubst native/engine/loops/%,native/locks/%,$(LOOP_SRC)),$(LOCK_SRC))
HEADERS := $(wildcard native/include/locklab/*.h native/engine/*.h native/locks/*.h) native/locks/registry.def \
	native/engine/loops/loops.def
# The LD_PRELOAD library that puts a lock of the catalogue under an unmodified program's
# pthread mutexes, and the program that tortures it (opt and tsan: a sanitizer runtime has to
# come first in a process, so asan is left out).
INTERPOSE_SRC := $(wildcard native/interpose/*.c)
INTERPOSE_VARIANTS := opt tsan
# Shared objects loaded with --plugin: the documented example and the test suite's locks.
# Load generators of the real-program workloads (native/workloads/), run by campaigns as the
# program beside the server they drive (campaigns/memcached.toml).
WORKLOAD_PROGRAMS := $(BUILD)/opt/memcached-load $(BUILD)/opt/pi-futex-load $(BUILD)/opt/anon-vma-load
PLUGIN_SRC := examples/plugin/example_ticket.c $(wildcard tests/plugins/*.c)
vpath %.c examples/plugin tests/plugins

.PHONY: all build build-all arm64 static deps venv demo test test-slow test-c test-python lint bench bench-loops clean

all: build

deps:
	@scripts/install-deps.sh

define variant_rules
$(BUILD)/$(1)/locklab-bench: $(ENGINE_SRC) $(LOCK_SRC) $(LOOP_SRC) $(HEADERS) Makefile
	@mkdir -p $$(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_$(1)) -rdynamic -o $$@ $(ENGINE_SRC) $(ENGINE_LOCK_SRC) -ldl -lm

$(BUILD)/$(1)/plugins/%.so: %.c $(HEADERS) Makefile
	@mkdir -p $$(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_$(1)) -shared -fPIC -o $$@ $$<

$(BUILD)/$(1)/liblocklab-interpose.so: $(INTERPOSE_SRC) native/interpose/interpose.h \
		native/interpose/interpose.map $(LOCK_SRC) $(HEADERS) Makefile
	@mkdir -p $$(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_$(1)) -shared -fPIC \
		-Wl,--version-script=native/interpose/interpose.map -o $$@ $(INTERPOSE_SRC) $(LOCK_SRC) -ldl

$(BUILD)/$(1)/interpose-torture: tests/interpose/torture.c Makefile
	@mkdir -p $$(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_$(1)) -o $$@ $$<

$(BUILD)/$(1)/unit/%: tests/unit/%.c tests/unit/check.h tests/unit/access_hooks.h $(LOCK_SRC) $(ENGINE_SRC) $(HEADERS) Makefile
	@mkdir -p $$(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_$(1)) -o $$@ $$< -lm
endef
$(foreach v,$(VARIANTS),$(eval $(call variant_rules,$(v))))

SIM_OBJ := $(BUILD)/sim/obj
SIM_ENGINE_OBJS := $(patsubst %.c,$(SIM_OBJ)/%.o,$(ENGINE_SRC) $(ENGINE_LOCK_SRC))
$(SIM_OBJ)/%.o: %.c $(HEADERS) native/include/locklab/sim.h Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_sim) -c -o $@ $<
# What runs only once the run is over (the report and its JSON) is compiled without the
# instrumentation: the model would otherwise time each bucket of each thread's histogram,
# most of a short run's host time at 96 CPUs, and no figure depends on it.
SIM_UNMODELLED_SRC := native/engine/report.c native/engine/report_sim.c \
	native/engine/report_workload.c native/engine/json.c
$(patsubst %.c,$(SIM_OBJ)/%.o,$(SIM_UNMODELLED_SRC)): CFLAGS_sim := \
	$(filter-out -fsanitize=thread --param=tsan-instrument-func-entry-exit=0,$(CFLAGS_sim))
# A loop's object is also its lock's: native/engine/loops/X.c includes native/locks/X.c.
$(foreach loop,$(LOOP_SRC),$(eval $(SIM_OBJ)/$(loop:.c=.o): native/locks/$(notdir $(loop))))

$(BUILD)/sim/locklab-sim: $(SIM_ENGINE_OBJS) $(SIM_RUNTIME_SRC) $(wildcard native/sim/*.h) \
		native/include/locklab/sim.h Makefile
	$(CC) $(BASE_CFLAGS) -O2 -DLOCKLAB_SIM -rdynamic -o $@ $(SIM_ENGINE_OBJS) \
		$(SIM_RUNTIME_SRC) -ldl -lm

# Plugins for the simulator: instrumented, their hooks resolved against locklab-sim's when
# loaded; linked apart, as the executable is, so that no libtsan comes with them.
$(BUILD)/sim/plugins/%.so: %.c $(HEADERS) Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_sim) -fPIC -c -o $@.o $<
	$(CC) $(BASE_CFLAGS) -shared -o $@ $@.o
	rm -f $@.o

plugins_of = $(patsubst %.c,$(BUILD)/$(1)/plugins/%.so,$(notdir $(PLUGIN_SRC)))
# C unit tests of lock internals (tests/unit/*.c include the lock's source file).
UNIT_SRC := $(wildcard tests/unit/*.c)
units_of = $(patsubst tests/unit/%.c,$(BUILD)/$(1)/unit/%,$(UNIT_SRC))

interpose_of = $(BUILD)/$(1)/liblocklab-interpose.so $(BUILD)/$(1)/interpose-torture

build: $(BUILD)/opt/locklab-bench $(call plugins_of,opt) $(call interpose_of,opt) $(WORKLOAD_PROGRAMS) \
	$(BUILD)/sim/locklab-sim $(call plugins_of,sim) $(BUILD)/opt/line-latency

$(BUILD)/opt/memcached-load: native/workloads/memcached_load.c Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_opt) -o $@ $<

# The seeds' kernel workloads, run inside booted kernels (locklab kernel --exec).
$(BUILD)/opt/pi-futex-load: native/workloads/pi_futex_load.c native/workloads/load_args.h Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_opt) -o $@ $<

$(BUILD)/opt/anon-vma-load: native/workloads/anon_vma_load.c native/workloads/load_args.h Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_opt) -o $@ $<

build-all: $(WORKLOAD_PROGRAMS) $(foreach v,$(VARIANTS),$(BUILD)/$(v)/locklab-bench $(call plugins_of,$(v)) \
	$(call units_of,$(v))) $(foreach v,$(INTERPOSE_VARIANTS),$(call interpose_of,$(v))) \
	$(BUILD)/sim/locklab-sim $(call plugins_of,sim) $(BUILD)/opt/line-latency arm64

# A machine lent without build tools (a many-core machine to check the simulator against):
# the engine and line-latency (native/tools/, a cache line's transfer cost between two CPUs,
# what a machine profile's costs are) linked statically, so they run on any x86-64 Linux.
# Built-in locks only: a static engine cannot load plugins.
static: $(BUILD)/static/locklab-bench $(BUILD)/static/line-latency

$(BUILD)/static/locklab-bench: $(ENGINE_SRC) $(LOCK_SRC) $(LOOP_SRC) $(HEADERS) Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_opt) -static -o $@ $(ENGINE_SRC) $(ENGINE_LOCK_SRC) -ldl -lm

$(BUILD)/%/line-latency: native/tools/line_latency.c $(HEADERS) Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_opt) $(if $(filter static,$*),-static) -o $@ $<

# arm64 (seed 000 ran on a Kunpeng 920): the engine cross-built for aarch64 with Debian's
# gcc-aarch64-linux-gnu, run by tests/test_arm64.py under qemu-aarch64-static. armv8.2-a is
# the Kunpeng 920's level: LSE atomics inline (-mno-outline-atomics: no libgcc helpers, so the
# instructions can be read); `make arm64 ARM64_MARCH=armv8-a` gives ldaxr/stlxr loops instead.
# ck's ck_md.h is generated for the build host (TSO on amd64): the build uses an aarch64 one.
# Checked when the rule runs, not when make starts, so `make test` builds it right after
# `make deps` has installed the compiler; without it the build says so and the tests skip.
ARM64_CC ?= aarch64-linux-gnu-gcc
ARM64_MARCH ?= armv8.2-a
arm64:
	@if command -v $(ARM64_CC) >/dev/null; then \
		$(MAKE) --no-print-directory $(BUILD)/arm64/locklab-bench $(BUILD)/arm64/torture-init; \
	else \
		echo "locklab: $(ARM64_CC) not found (Debian package gcc-aarch64-linux-gnu):" \
			"arm64 build skipped"; \
	fi

$(BUILD)/arm64/locklab-bench: $(ENGINE_SRC) $(LOCK_SRC) $(LOOP_SRC) $(HEADERS) native/cross/aarch64/ck_md.h Makefile
	@mkdir -p $(@D)
	$(ARM64_CC) $(BASE_CFLAGS) -O2 -march=$(ARM64_MARCH) -mno-outline-atomics \
		-Inative/cross/aarch64 -o $@ $(ENGINE_SRC) $(ENGINE_LOCK_SRC) -ldl -lm

# The /init of arm64 guests with locktorture built in (`locklab kernel --arch arm64`): static,
# as the initramfs holds nothing else. python/locklab/kernel/initramfs.py runs this rule.
$(BUILD)/arm64/torture-init: native/guest/torture_init.c Makefile
	@mkdir -p $(@D)
	$(ARM64_CC) -std=c11 -D_GNU_SOURCE -O2 $(WARNINGS) -static -o $@ $<

$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

# The front end is installed editable, so pip compiles none of it; compiled here, every
# `locklab` start reads bytecode instead of compiling about 50 modules (0.08 s), also where
# PYTHONDONTWRITEBYTECODE keeps Python from caching them itself.
venv: $(VENV)/.installed $(BUILD)/opt/locklab-bench $(BUILD)/sim/locklab-sim
	cp --remove-destination $(BUILD)/opt/locklab-bench $(VENV)/bin/locklab-bench
	cp --remove-destination $(BUILD)/sim/locklab-sim $(VENV)/bin/locklab-sim
	$(VENV)/bin/python -m compileall -q python/locklab

demo: deps build venv
	@scripts/demo.sh

test: deps build-all venv
	$(VENV)/bin/ruff check python tests bench
	$(VENV)/bin/ruff format --check python tests bench
	$(VENV)/bin/python -m pytest -q --durations=15 tests

# What CI cannot afford: Linux 6.12 built with PREEMPT_RT and booted (seed 003), and the
# KCSAN + lockdep kernel that catches the broken checker patches.
test-slow: deps build-all venv
	scripts/install-deps.sh --slow
	$(VENV)/bin/python -m pytest -q -m slow tests

# P1's bare loops (bench/engine_overhead.py): each lock's own source in a loop of nothing else
# (inline_), the same with the engine's checks (checked_) or with one read of the section's line
# only (oneread_), and Concurrency Kit's and glibc's locks in the same loop.
INLINE_LOCKS := tas:tas ttas:tas ticket:ticket mcs:mcs clh:clh qspinlock:qspinlock \
	cna:qspinlock futex_mutex:futex_mutex pthread_mutex:pthread_locks
BARE_LOOP_KINDS := inline: checked:-DBARE_CHECKS oneread:-DBARE_ONE_READ
inline_source = $(word 2,$(subst :, ,$(filter $(1):%,$(INLINE_LOCKS))))
.SECONDEXPANSION:
# $(1): the loop's kind (the program's prefix), $(2): the define that makes it that kind.
define bare_loop_rule
$(BUILD)/opt/$(1)_%: bench/inline_loop.c bench/bare_loop.h native/locks/$$$$(call inline_source,$$$$*).c $(HEADERS)
	@mkdir -p $$(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_opt) -Inative/locks -DLOCK_SOURCE='"$$(call inline_source,$$*).c"' \
		-DLOCK_OPS=$$*_ops $(2) -o $$@ bench/inline_loop.c
endef
$(foreach k,$(BARE_LOOP_KINDS),$(eval $(call bare_loop_rule,$(word 1,$(subst :, ,$(k))),$(word 2,$(subst :, ,$(k))))))

$(BUILD)/opt/ck_loop: bench/ck_loop.c bench/bare_loop.h
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_opt) -o $@ bench/ck_loop.c

BARE_LOOPS := $(foreach k,$(BARE_LOOP_KINDS),$(foreach l,$(INLINE_LOCKS), \
	$(BUILD)/opt/$(firstword $(subst :, ,$(k)))_$(firstword $(subst :, ,$(l))))) $(BUILD)/opt/ck_loop

# What interposition adds to one lock call (bench/interpose_overhead.py).
$(BUILD)/opt/mutex_calls: bench/mutex_calls.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS_opt) -o $@ bench/mutex_calls.c

bench-loops: $(BARE_LOOPS) $(BUILD)/opt/mutex_calls

bench: deps build venv $(BARE_LOOPS)
	$(VENV)/bin/python bench/engine_overhead.py
	$(VENV)/bin/python bench/frontend.py
	$(VENV)/bin/python bench/spinlocks.py
	$(VENV)/bin/python bench/adaptive.py
	$(VENV)/bin/python bench/interpose_overhead.py
	$(VENV)/bin/python bench/from_source.py
	$(VENV)/bin/python bench/calibration.py
	$(VENV)/bin/python bench/waiting.py
	$(VENV)/bin/python bench/simulator.py

clean:
	rm -rf $(BUILD)

# A lock compiled from a kernel tree (python/locklab/kernel/from_source.py calls this with the
# tree already copied and patched): the tree's own files against the shim (native/kshim), as
# GNU C like the kernel's (-std=gnu11, no strict aliasing or overflow, null checks kept), in
# the build's flags, into one plugin with its own writer loop. Only the tree's files may warn:
# an undeclared function is an error (a patch that calls what the shim lacks), and the shim's
# own files are held to the project's warnings.
#   KSHIM_TREE=DIR KSHIM_LOCK=rtmutex|mutex|rwsem|qspinlock KSHIM_BUILD=opt|tsan|asan|sim
#   KSHIM_OUT=PATH.so KSHIM_SOURCE='text for the catalogue'
KSHIM_FILES_rtmutex := kernel/locking/rtmutex_api.c
KSHIM_FILES_mutex := kernel/locking/mutex.c kernel/locking/osq_lock.c
KSHIM_FILES_rwsem := kernel/locking/rwsem.c kernel/locking/osq_lock.c
KSHIM_FILES_qspinlock :=
KSHIM_TREE_FILES = $(KSHIM_FILES_$(KSHIM_LOCK)) kernel/locking/qspinlock.c lib/rbtree.c
KSHIM_OBJ = $(KSHIM_OUT).objs
# The tree's lock event counters, where it has them (5.1 on): native/kshim/events.c.
KSHIM_EVENTS = $(if $(wildcard $(KSHIM_TREE)/kernel/locking/lock_events_list.h),\
	-DCONFIG_LOCK_EVENT_COUNTS -I$(KSHIM_TREE)/kernel/locking)
KERNEL_CFLAGS = -std=gnu11 -D__KERNEL__ -fno-strict-aliasing -fno-delete-null-pointer-checks \
	-fno-strict-overflow -fno-common -fPIC -fvisibility=hidden -g \
	-Wall -Wno-unused-function -Wno-unused-variable -Werror=implicit-function-declaration \
	-Inative/kshim/include -I$(KSHIM_TREE)/include -Inative/include -DKSHIM_LOCK_$(KSHIM_LOCK) \
	$(KSHIM_EVENTS)
KSHIM_TREE_OBJS = $(patsubst %.c,$(KSHIM_OBJ)/tree/%.o,$(KSHIM_TREE_FILES))
KSHIM_OWN_OBJS = $(KSHIM_OBJ)/sched.o $(KSHIM_OBJ)/bridge.o $(KSHIM_OBJ)/events.o
# qspinlock.c's own events are listed only under CONFIG_QUEUED_SPINLOCKS, which the shim does
# not set (it would choose other headers): that file counts nothing, the others as the tree does.
$(KSHIM_OBJ)/tree/kernel/locking/qspinlock.o: KSHIM_EVENTS =

.PHONY: kshim-plugin
kshim-plugin: $(KSHIM_OUT)

$(KSHIM_OBJ)/tree/%.o: $(KSHIM_TREE)/%.c
	@mkdir -p $(@D)
	$(CC) $(KERNEL_CFLAGS) $(CFLAGS_$(KSHIM_BUILD)) -c -o $@ $<

$(KSHIM_OBJ)/%.o: native/kshim/%.c
	@mkdir -p $(@D)
	$(CC) $(KERNEL_CFLAGS) -Wextra -Werror -Wno-unused-parameter $(CFLAGS_$(KSHIM_BUILD)) -c -o $@ $<

KSHIM_HOST_FLAGS = $(BASE_CFLAGS) $(CFLAGS_$(KSHIM_BUILD)) -fPIC -fvisibility=hidden \
	-DKSHIM_LOCK_$(KSHIM_LOCK) -DKSHIM_SOURCE='"$(KSHIM_SOURCE)"'

$(KSHIM_OUT): $(KSHIM_TREE_OBJS) $(KSHIM_OWN_OBJS) native/kshim/host.c native/kshim/plugin.c \
		$(HEADERS) Makefile
	$(CC) $(KSHIM_HOST_FLAGS) -c -o $(KSHIM_OBJ)/host.o native/kshim/host.c
	$(CC) $(KSHIM_HOST_FLAGS) -c -o $(KSHIM_OBJ)/plugin.o native/kshim/plugin.c
	$(CC) $(BASE_CFLAGS) $(LINK_FLAGS_$(KSHIM_BUILD)) -fPIC -shared -o $@ \
		$(KSHIM_OBJ)/host.o $(KSHIM_OBJ)/plugin.o $(KSHIM_TREE_OBJS) $(KSHIM_OWN_OBJS)

# A plugin given as C source (python/locklab/run/source_plugin.py calls this): the user's file,
# unmodified, with a writer loop of its own (native/engine/source_plugin/loop.c), in the
# build's flags. -fno-semantic-interposition lets the loop call the file's lock() and unlock()
# directly, as the engine's own loops do.
#   SOURCE_PLUGIN=FILE.c SOURCE_PLUGIN_BUILD=opt|tsan|asan|sim SOURCE_PLUGIN_OUT=PATH.so
.PHONY: source-plugin
source-plugin:
	$(CC) $(BASE_CFLAGS) $(CFLAGS_$(SOURCE_PLUGIN_BUILD)) -fPIC -c \
		-fno-semantic-interposition -DLOCKLAB_PLUGIN_SOURCE='"$(abspath $(SOURCE_PLUGIN))"' \
		-o $(SOURCE_PLUGIN_OUT).o native/engine/source_plugin/loop.c
	$(CC) $(BASE_CFLAGS) $(LINK_FLAGS_$(SOURCE_PLUGIN_BUILD)) -shared -o $(SOURCE_PLUGIN_OUT) \
		$(SOURCE_PLUGIN_OUT).o
	rm -f $(SOURCE_PLUGIN_OUT).o
