/* SPDX-License-Identifier: MIT */
/*
 * memcached-load - a load generator for memcached that checks every reply, loopback only.
 *
 * N client threads, each with its own TCP connection, speak memcached's text protocol
 * (protocol.txt in memcached's sources: "set <key> <flags> <exptime> <bytes>", "get <key>",
 * "stats") to a server on 127.0.0.0/8. The keys are preloaded, then each client picks a
 * random key and gets it, or sets a new version of it, at the chosen ratio (the defaults are
 * the usual memtier/mc-crusher ones: 90% gets, 10k keys, 64-byte values) for a duration or a
 * number of operations. Throughput is printed as "ops/s: X" and the last line is "ok";
 * anything wrong is one line "memcached-load: error: ..." and exit status 1 (usage: 2).
 *
 * Every value names its key and its version ("%08u.%010u." then filler derived from both), so
 * a get that returns another key's value, a torn or corrupt value, or a stale version is
 * caught. Sets of a key come from one client only (its owner: key % clients), so versions of
 * a key reach the server in order; a get must then return a version at least the one whose
 * STORED had arrived before the get was sent, and at most the newest one sent.
 *
 * --spawn starts memcached itself (-t --server-threads) on a free loopback port, runs the
 * load, stops it with SIGTERM and requires a clean exit, and compares memcached's own
 * counters (cmd_get, get_hits, get_misses, cmd_set, curr_items) with what the clients did.
 * The lab's lock belongs under memcached only, not under this program: `locklab exec` starts
 * the whole command with LD_PRELOAD, so after forking memcached (which keeps the environment)
 * the launcher re-executes itself without LD_PRELOAD. The dynamic loader reads LD_PRELOAD
 * only when a program starts, hence the exec; an exec keeps the pid, so memcached stays this
 * process's child (its exit status is ours to check) and in its process group (a timeout that
 * kills the group kills both). The server's pid and port travel in SPAWNED_ENV.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROG "memcached-load"
#define SPAWNED_ENV "MEMCACHED_LOAD_SPAWNED" /* "pid:port" of the memcached --spawn started */
#define KEY_FORMAT "locklab:%08" PRIu32
#define VALUE_PREFIX_LEN 20 /* "%08u.%010u." */
#define MAX_VALUE 65536
#define MAX_KEYS 10000000u /* 8 digits in the value's prefix */
#define CONN_BUF (MAX_VALUE + 4096)
#define STOP_GRACE_S 5.0 /* after SIGTERM, before memcached counts as hung */

struct options {
	const char *host;
	int port;
	int clients;
	uint32_t keys;
	unsigned value_size;
	unsigned get_percent;
	double duration_s;
	uint64_t ops;
	double io_timeout_s;
	bool spawn;
	const char *memcached;
	int server_threads;
	double startup_timeout_s;
};

static struct options opt = {
	.host = "127.0.0.1",
	.port = 11211,
	.clients = 4,
	.keys = 10000,
	.value_size = 64,
	.get_percent = 90,
	.duration_s = 1.0,
	.ops = 0,
	.io_timeout_s = 5.0,
	.memcached = "memcached",
	.server_threads = 4,
	.startup_timeout_s = 10.0,
};

struct conn {
	int fd;
	size_t start, end;
	char buf[CONN_BUF];
};

struct client {
	int id;
	pthread_t thread;
	uint64_t rng;
	uint64_t quota; /* operations to do in --ops mode */
	uint64_t gets, sets;
	struct conn conn;
	char request[MAX_VALUE + 256];
	char expected[MAX_VALUE + 1];
};

/* Per key: the newest version sent by its owner, and the newest one the server confirmed. */
static _Atomic uint32_t *issued;
static _Atomic uint32_t *confirmed;
static atomic_bool stopping;
static pthread_barrier_t start_line;
static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_error[512];
static struct sockaddr_in server_addr;
static pid_t server_pid; /* memcached, when --spawn started it */

static void usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, PROG ": error: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see --help)\n");
	va_end(ap);
	exit(2);
}

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf(PROG ": error: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	exit(1);
}

/* The first failure wins: it is the one line printed; the other clients stop. */
static bool fail(const char *fmt, ...)
{
	pthread_mutex_lock(&error_lock);
	if (first_error[0] == '\0') {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(first_error, sizeof first_error, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&error_lock);
	atomic_store(&stopping, true);
	return false;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds,
			       .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static uint64_t xorshift(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

/* ---- options ---- */

static long long parse_int(const char *name, const char *text, long long lo, long long hi)
{
	char *end;
	errno = 0;
	long long value = strtoll(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || value < lo || value > hi)
		usage_error("%s: '%s' is not a whole number from %lld to %lld", name, text, lo, hi);
	return value;
}

static double parse_seconds(const char *name, const char *text)
{
	char *end;
	double value = strtod(text, &end);
	if (end == text || *end != '\0' || !(value > 0) || value > 86400)
		usage_error("%s: '%s' is not a number of seconds above 0", name, text);
	return value;
}

/* Loopback only: this program sends as fast as it can, which is no way to treat a network. */
static void parse_host(const char *text)
{
	const char *address = strcmp(text, "localhost") == 0 ? "127.0.0.1" : text;
	struct in_addr in;
	if (inet_pton(AF_INET, address, &in) != 1)
		usage_error("--host: '%s' is not an IPv4 address (loopback only: 127.0.0.0/8)", text);
	if ((ntohl(in.s_addr) >> 24) != 127)
		usage_error("--host: refusing %s: loopback addresses only (127.0.0.0/8)", text);
	opt.host = address;
	server_addr.sin_family = AF_INET;
	server_addr.sin_addr = in;
}

static void print_help(void)
{
	printf("usage: " PROG " [--spawn [--server-threads N] [--memcached PATH]] [options]\n"
	       "  --host ADDR          server address, loopback only (default 127.0.0.1)\n"
	       "  --port N             server port (default 11211; --spawn picks a free one)\n"
	       "  --clients N          client threads, one connection each (default 4)\n"
	       "  --keys N             key space, preloaded (default 10000)\n"
	       "  --value-size N       bytes per value, %d..%d (default 64)\n"
	       "  --get-percent N      gets among operations, the rest sets (default 90)\n"
	       "  --duration S         seconds of load after the preload (default 1)\n"
	       "  --ops N              instead: this many operations in all\n"
	       "  --io-timeout S       a reply later than this is a failure (default 5)\n"
	       "  --spawn              start memcached, load it, stop it, check its exit and stats\n"
	       "  --server-threads N   memcached's worker threads, -t (default 4)\n"
	       "  --memcached PATH     the memcached to start (default: memcached on PATH)\n"
	       "  --startup-timeout S  seconds memcached may take to accept (default 10)\n",
	       VALUE_PREFIX_LEN, MAX_VALUE);
}

static void parse_options(int argc, char **argv)
{
	bool port_given = false;
	parse_host(opt.host);
	for (int i = 1; i < argc; i++) {
		const char *name = argv[i];
		if (strcmp(name, "--help") == 0) {
			print_help();
			exit(0);
		}
		if (strcmp(name, "--spawn") == 0) {
			opt.spawn = true;
			continue;
		}
		if (i + 1 >= argc)
			usage_error("%s needs a value", name);
		const char *value = argv[++i];
		if (strcmp(name, "--host") == 0)
			parse_host(value);
		else if (strcmp(name, "--port") == 0)
			opt.port = (int)parse_int(name, value, 1, 65535), port_given = true;
		else if (strcmp(name, "--clients") == 0)
			opt.clients = (int)parse_int(name, value, 1, 1024);
		else if (strcmp(name, "--keys") == 0)
			opt.keys = (uint32_t)parse_int(name, value, 1, MAX_KEYS);
		else if (strcmp(name, "--value-size") == 0)
			opt.value_size = (unsigned)parse_int(name, value, VALUE_PREFIX_LEN, MAX_VALUE);
		else if (strcmp(name, "--get-percent") == 0)
			opt.get_percent = (unsigned)parse_int(name, value, 0, 100);
		else if (strcmp(name, "--duration") == 0)
			opt.duration_s = parse_seconds(name, value);
		else if (strcmp(name, "--ops") == 0)
			opt.ops = (uint64_t)parse_int(name, value, 1, (long long)1 << 50);
		else if (strcmp(name, "--io-timeout") == 0)
			opt.io_timeout_s = parse_seconds(name, value);
		else if (strcmp(name, "--server-threads") == 0)
			opt.server_threads = (int)parse_int(name, value, 1, 1024);
		else if (strcmp(name, "--memcached") == 0)
			opt.memcached = value;
		else if (strcmp(name, "--startup-timeout") == 0)
			opt.startup_timeout_s = parse_seconds(name, value);
		else
			usage_error("unknown option '%s'", name);
	}
	if (opt.keys < (uint32_t)opt.clients)
		usage_error("--keys (%" PRIu32 ") must be at least --clients (%d): every client "
			    "owns keys", opt.keys, opt.clients);
	if (opt.spawn && port_given)
		usage_error("--port and --spawn: --spawn picks a free port itself");
	server_addr.sin_port = htons((uint16_t)opt.port);
}

/* ---- starting memcached (--spawn) ---- */

static bool on_path(const char *program)
{
	if (strchr(program, '/'))
		return access(program, X_OK) == 0;
	const char *path = getenv("PATH");
	char candidate[4096];
	while (path && *path) {
		size_t len = strcspn(path, ":");
		snprintf(candidate, sizeof candidate, "%.*s/%s", (int)len, path, program);
		struct stat st;
		if (len > 0 && stat(candidate, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(candidate, X_OK) == 0)
			return true;
		path += len + (path[len] == ':');
	}
	return false;
}

static int free_port(void)
{
	struct sockaddr_in addr = server_addr;
	socklen_t len = sizeof addr;
	addr.sin_port = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
	    getsockname(fd, (struct sockaddr *)&addr, &len) != 0)
		die("no free port on %s: %s", opt.host, strerror(errno));
	close(fd);
	return ntohs(addr.sin_port);
}

static void launch(char **argv)
{
	if (!on_path(opt.memcached))
		die("cannot run %s: not found (Debian package memcached; scripts/install-deps.sh)",
		    opt.memcached);
	int port = free_port();
	char threads[16], port_text[16];
	snprintf(threads, sizeof threads, "%d", opt.server_threads);
	snprintf(port_text, sizeof port_text, "%d", port);
	/* -U 0: no UDP; -m: room for the keys without evictions (a miss would be an error);
	 * as root memcached insists on a user to run as. */
	char *server_argv[] = { (char *)opt.memcached, "-t", threads, "-p", port_text,
				"-l", (char *)opt.host, "-U", "0", "-m", "1024", "-c", "4096",
				geteuid() == 0 ? "-u" : NULL, "root", NULL };
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		execvp(opt.memcached, server_argv);
		_exit(127);
	}
	char spawned[64];
	snprintf(spawned, sizeof spawned, "%d:%d", (int)pid, port);
	setenv(SPAWNED_ENV, spawned, 1);
	unsetenv("LD_PRELOAD"); /* see the top of the file: the lock is for memcached only */
	execv("/proc/self/exe", argv);
	kill(pid, SIGKILL);
	die("cannot re-execute %s: %s", argv[0], strerror(errno));
}

static const char *exit_words(int status, char *out, size_t size)
{
	if (WIFEXITED(status))
		snprintf(out, size, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, size, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(out, size, "status 0x%x", status);
	return out;
}

/* Waits up to seconds for memcached to exit; true with *status if it did. */
static bool reap_within(double seconds, int *status)
{
	double deadline = now_s() + seconds;
	for (;;) {
		pid_t got = waitpid(server_pid, status, WNOHANG);
		if (got == server_pid)
			return true;
		if (got < 0 && errno != EINTR)
			die("waitpid memcached: %s", strerror(errno));
		if (now_s() >= deadline)
			return false;
		sleep_s(0.01);
	}
}

static void kill_server(void)
{
	int status;
	kill(server_pid, SIGKILL);
	while (waitpid(server_pid, &status, 0) < 0 && errno == EINTR)
		;
}

/* ---- connections ---- */

static int connect_server(char *why, size_t why_size)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		snprintf(why, why_size, "socket: %s", strerror(errno));
		return -1;
	}
	/* A send, a receive or the connect itself that takes longer than this fails, so a hung
	 * server is a failure, never a hang. */
	struct timeval tv = { .tv_sec = (time_t)opt.io_timeout_s,
			      .tv_usec = (suseconds_t)((opt.io_timeout_s -
							(double)(time_t)opt.io_timeout_s) * 1e6) };
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&server_addr, sizeof server_addr) != 0) {
		int error = errno;
		snprintf(why, why_size, "%s", error == EINPROGRESS || error == EAGAIN ?
			 "timed out" : strerror(error));
		close(fd);
		errno = error;
		return -1;
	}
	return fd;
}

static bool send_all(struct conn *c, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
		if (n > 0) {
			data += n, len -= (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return fail("memcached took no request for %g s (hung?)", opt.io_timeout_s);
		} else {
			char text[128];
			return fail("send to memcached: %s", strerror_r(errno, text, sizeof text));
		}
	}
	return true;
}

static bool receive_more(struct conn *c)
{
	if (c->start > 0) {
		memmove(c->buf, c->buf + c->start, c->end - c->start);
		c->end -= c->start;
		c->start = 0;
	}
	if (c->end == sizeof c->buf)
		return fail("a reply from memcached without its line end in %zu bytes", c->end);
	for (;;) {
		ssize_t n = recv(c->fd, c->buf + c->end, sizeof c->buf - c->end, 0);
		if (n > 0) {
			c->end += (size_t)n;
			return true;
		}
		if (n == 0)
			return fail("memcached closed the connection");
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return fail("no reply from memcached in %g s (hung?)", opt.io_timeout_s);
		char text[128];
		return fail("receive from memcached: %s", strerror_r(errno, text, sizeof text));
	}
}

/* The next reply line, NUL-terminated without its "\r\n". */
static char *read_line(struct conn *c)
{
	for (;;) {
		char *begin = c->buf + c->start;
		char *crlf = memmem(begin, c->end - c->start, "\r\n", 2);
		if (crlf) {
			*crlf = '\0';
			c->start = (size_t)(crlf + 2 - c->buf);
			return begin;
		}
		if (!receive_more(c))
			return NULL;
	}
}

/* The next len bytes and the "\r\n" after them. */
static char *read_block(struct conn *c, size_t len)
{
	while (c->end - c->start < len + 2)
		if (!receive_more(c))
			return NULL;
	char *begin = c->buf + c->start;
	if (begin[len] != '\r' || begin[len + 1] != '\n') {
		fail("a value from memcached is not followed by its line end");
		return NULL;
	}
	c->start += len + 2;
	return begin;
}

/* A printable excerpt of a reply, for an error line. */
static const char *excerpt(const char *data, size_t len, char *out, size_t size)
{
	size_t n = len < size - 1 ? len : size - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = data[i] >= 32 && data[i] < 127 ? data[i] : '?';
	out[n] = '\0';
	return out;
}

/* ---- values: each names its key and version, the filler derives from both ---- */

static void make_value(char *out, uint32_t key, uint32_t version)
{
	snprintf(out, VALUE_PREFIX_LEN + 1, "%08" PRIu32 ".%010" PRIu32 ".", key, version);
	uint64_t state = (((uint64_t)key << 32) | version) * 0x9E3779B97F4A7C15ull | 1;
	for (unsigned i = VALUE_PREFIX_LEN; i < opt.value_size; i++)
		out[i] = (char)('a' + xorshift(&state) % 26);
}

static bool set_key(struct client *self, uint32_t key)
{
	uint32_t version = atomic_load(&issued[key]) + 1; /* only this client writes this key */
	atomic_store(&issued[key], version);
	int n = snprintf(self->request, sizeof self->request, "set " KEY_FORMAT " 0 0 %u\r\n", key,
			 opt.value_size);
	make_value(self->request + n, key, version);
	memcpy(self->request + n + opt.value_size, "\r\n", 2);
	if (!send_all(&self->conn, self->request, (size_t)n + opt.value_size + 2))
		return false;
	char *line = read_line(&self->conn);
	if (!line)
		return false;
	if (strcmp(line, "STORED") != 0) {
		char text[64];
		return fail("set " KEY_FORMAT ": memcached replied '%s'", key,
			    excerpt(line, strlen(line), text, sizeof text));
	}
	atomic_store(&confirmed[key], version);
	return true;
}

static bool get_key(struct client *self, uint32_t key)
{
	uint32_t oldest_allowed = atomic_load(&confirmed[key]);
	char name[32], text[64];
	snprintf(name, sizeof name, KEY_FORMAT, key);
	int n = snprintf(self->request, sizeof self->request, "get %s\r\n", name);
	if (!send_all(&self->conn, self->request, (size_t)n))
		return false;
	char *line = read_line(&self->conn);
	if (!line)
		return false;
	if (strcmp(line, "END") == 0)
		return fail("get %s: missing, though it was stored (version %" PRIu32 ")", name,
			    oldest_allowed);
	char got_key[256];
	unsigned flags;
	size_t bytes;
	int used = 0;
	if (sscanf(line, "VALUE %255s %u %zu%n", got_key, &flags, &bytes, &used) != 3 ||
	    line[used] != '\0')
		return fail("get %s: memcached replied '%s'", name,
			    excerpt(line, strlen(line), text, sizeof text));
	if (strcmp(got_key, name) != 0)
		return fail("get %s: memcached replied with key %s", name, got_key);
	if (bytes != opt.value_size)
		return fail("get %s: %zu bytes instead of %u", name, bytes, opt.value_size);
	char *value = read_block(&self->conn, bytes);
	if (!value)
		return false;
	line = read_line(&self->conn);
	if (!line)
		return false;
	if (strcmp(line, "END") != 0)
		return fail("get %s: '%s' instead of END", name,
			    excerpt(line, strlen(line), text, sizeof text));
	uint32_t newest_allowed = atomic_load(&issued[key]);
	uint32_t value_key, version;
	char tail;
	char prefix[VALUE_PREFIX_LEN + 1];
	memcpy(prefix, value, VALUE_PREFIX_LEN);
	prefix[VALUE_PREFIX_LEN] = '\0';
	if (sscanf(prefix, "%8" SCNu32 ".%10" SCNu32 "%c", &value_key, &version, &tail) != 3 ||
	    tail != '.')
		return fail("get %s: corrupt value '%s'", name,
			    excerpt(value, bytes, text, sizeof text));
	if (value_key != key)
		return fail("get %s: the value of key " KEY_FORMAT, name, value_key);
	make_value(self->expected, key, version);
	if (memcmp(value, self->expected, bytes) != 0)
		return fail("get %s: corrupt value '%s'", name,
			    excerpt(value, bytes, text, sizeof text));
	if (version < oldest_allowed)
		return fail("get %s: stale value, version %" PRIu32 " after version %" PRIu32
			    " was stored", name, version, oldest_allowed);
	if (version > newest_allowed)
		return fail("get %s: version %" PRIu32 " was never written (newest %" PRIu32 ")",
			    name, version, newest_allowed);
	return true;
}

/* ---- the clients ---- */

static void *client_main(void *arg)
{
	struct client *self = arg;
	/* Preload: each client stores the keys it owns (version 1). */
	for (uint32_t key = (uint32_t)self->id; key < opt.keys && !atomic_load(&stopping);
	     key += (uint32_t)opt.clients)
		if (!set_key(self, key))
			break;
	pthread_barrier_wait(&start_line);
	uint32_t owned = (opt.keys - (uint32_t)self->id + (uint32_t)opt.clients - 1) /
			 (uint32_t)opt.clients;
	while (!atomic_load(&stopping) && (opt.ops == 0 || self->gets + self->sets < self->quota)) {
		uint64_t r = xorshift(&self->rng);
		if (r % 100 < opt.get_percent) {
			if (!get_key(self, (uint32_t)((r >> 8) % opt.keys)))
				break;
			self->gets++;
		} else {
			uint32_t key = (uint32_t)((r >> 8) % owned) * (uint32_t)opt.clients +
				       (uint32_t)self->id;
			if (!set_key(self, key))
				break;
			self->sets++;
		}
	}
	return NULL;
}

/* memcached's "stats" after the load, against what the clients did. */
static bool check_server_stats(struct conn *c, uint64_t gets, uint64_t sets, char *summary,
			       size_t size)
{
	if (!send_all(c, "stats\r\n", 7))
		return false;
	unsigned long long cmd_get = ~0ull, get_hits = ~0ull, get_misses = ~0ull, cmd_set = ~0ull,
			   curr_items = ~0ull;
	for (;;) {
		char *line = read_line(c);
		if (!line)
			return false;
		if (strcmp(line, "END") == 0)
			break;
		char name[64];
		unsigned long long value;
		if (sscanf(line, "STAT %63s %llu", name, &value) != 2)
			continue; /* a non-numeric statistic */
		if (strcmp(name, "cmd_get") == 0)
			cmd_get = value;
		else if (strcmp(name, "get_hits") == 0)
			get_hits = value;
		else if (strcmp(name, "get_misses") == 0)
			get_misses = value;
		else if (strcmp(name, "cmd_set") == 0)
			cmd_set = value;
		else if (strcmp(name, "curr_items") == 0)
			curr_items = value;
	}
	uint64_t all_sets = sets + opt.keys; /* and the preload */
	if (cmd_get != gets || get_hits != gets || get_misses != 0 || cmd_set != all_sets ||
	    curr_items != opt.keys)
		return fail("memcached's stats disagree with the clients: cmd_get %llu get_hits %llu"
			    " get_misses %llu cmd_set %llu curr_items %llu, expected %" PRIu64
			    " %" PRIu64 " 0 %" PRIu64 " %" PRIu32, cmd_get, get_hits, get_misses,
			    cmd_set, curr_items, gets, gets, all_sets, opt.keys);
	snprintf(summary, size, "cmd_get %llu, get_hits %llu, cmd_set %llu, curr_items %llu",
		 cmd_get, get_hits, cmd_set, curr_items);
	return true;
}

static int wait_for_server(void)
{
	char why[128];
	double deadline = now_s() + opt.startup_timeout_s;
	for (;;) {
		int status;
		if (server_pid && reap_within(0, &status)) {
			char words[96];
			server_pid = 0;
			die("memcached exited before accepting connections (%s)",
			    exit_words(status, words, sizeof words));
		}
		int fd = connect_server(why, sizeof why);
		if (fd >= 0)
			return fd;
		if (!server_pid || errno != ECONNREFUSED)
			break;
		if (now_s() >= deadline) {
			kill_server();
			die("memcached did not accept connections on %s:%d in %g s (hung?)",
			    opt.host, opt.port, opt.startup_timeout_s);
		}
		sleep_s(0.02);
	}
	if (server_pid)
		kill_server();
	die("cannot connect to %s:%d: %s", opt.host, opt.port, why);
	return -1;
}

int main(int argc, char **argv)
{
	parse_options(argc, argv);
	const char *spawned = getenv(SPAWNED_ENV);
	if (opt.spawn && !spawned)
		launch(argv); /* comes back here re-executed, with SPAWNED_ENV set */
	if (spawned) {
		int pid, port;
		if (sscanf(spawned, "%d:%d", &pid, &port) != 2)
			usage_error("%s='%s' is not pid:port", SPAWNED_ENV, spawned);
		unsetenv(SPAWNED_ENV);
		server_pid = (pid_t)pid;
		opt.port = port;
		server_addr.sin_port = htons((uint16_t)port);
	}

	issued = calloc(opt.keys, sizeof *issued);
	confirmed = calloc(opt.keys, sizeof *confirmed);
	struct client *clients = calloc((size_t)opt.clients, sizeof *clients);
	if (!issued || !confirmed || !clients)
		die("out of memory");
	for (int i = 0; i < opt.clients; i++) {
		struct client *c = &clients[i];
		c->id = i;
		c->rng = 0x5DEECE66Dull * (uint64_t)(i + 1) + 0x2545F4914F6CDD1Dull;
		c->quota = opt.ops / (uint64_t)opt.clients + ((uint64_t)i < opt.ops % (uint64_t)opt.clients);
		c->conn.fd = i == 0 ? wait_for_server() : -1;
	}
	for (int i = 1; i < opt.clients; i++) {
		char why[128];
		clients[i].conn.fd = connect_server(why, sizeof why);
		if (clients[i].conn.fd < 0) {
			if (server_pid)
				kill_server();
			die("cannot connect to %s:%d: %s", opt.host, opt.port, why);
		}
	}

	pthread_barrier_init(&start_line, NULL, (unsigned)opt.clients + 1);
	for (int i = 0; i < opt.clients; i++)
		if (pthread_create(&clients[i].thread, NULL, client_main, &clients[i]) != 0)
			die("cannot start client thread %d", i);
	pthread_barrier_wait(&start_line);
	double start = now_s();
	if (opt.ops == 0) {
		double end = start + opt.duration_s;
		while (!atomic_load(&stopping) && now_s() < end)
			sleep_s(0.005);
		atomic_store(&stopping, true);
	}
	uint64_t gets = 0, sets = 0;
	for (int i = 0; i < opt.clients; i++) {
		pthread_join(clients[i].thread, NULL);
		gets += clients[i].gets;
		sets += clients[i].sets;
	}
	double elapsed = now_s() - start;

	char summary[256] = "";
	bool load_ok = first_error[0] == '\0';
	if (load_ok && server_pid)
		load_ok = check_server_stats(&clients[0].conn, gets, sets, summary, sizeof summary);
	for (int i = 0; i < opt.clients; i++)
		close(clients[i].conn.fd);

	if (server_pid) {
		int status;
		char words[96];
		if (!load_ok) {
			/* A server that died is the cause, whatever the clients saw. */
			if (reap_within(0.5, &status) && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
				die("memcached died during the load (%s)",
				    exit_words(status, words, sizeof words));
			kill_server();
			die("%s", first_error);
		}
		kill(server_pid, SIGTERM);
		if (!reap_within(STOP_GRACE_S, &status)) {
			kill_server();
			die("memcached did not exit within %g s of SIGTERM (hung?)", STOP_GRACE_S);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			die("memcached did not exit cleanly (%s)", exit_words(status, words, sizeof words));
	} else if (!load_ok) {
		die("%s", first_error);
	}
	printf(PROG ": %d clients, %" PRIu32 " keys, %u-byte values, %u%% gets: %" PRIu64
	       " gets and %" PRIu64 " sets in %.3f s, every reply checked\n",
	       opt.clients, opt.keys, opt.value_size, opt.get_percent, gets, sets, elapsed);
	if (server_pid)
		printf(PROG ": memcached -t %d exited cleanly; its stats agree (%s)\n",
		       opt.server_threads, summary);
	printf("ops/s: %.1f\n", elapsed > 0 ? (double)(gets + sets) / elapsed : 0.0);
	printf("ok\n");
	return 0;
}
