/* SPDX-License-Identifier: BSD-2-Clause */
/* The option rows kiln agent and kiln record share, written once: the
 * sampler's (frequency, idle, map sizes) and the limits of the process
 * table and the symbol cache. Each macro expands to CONFIG_ROW_* rows of
 * T, a command's options struct whose member `pipe` is the struct
 * pipeline_opts handed to pipeline__open, so a value lands in the stage's
 * own options with no copying. A command's table lists them where its
 * --help shows them:
 *
 *   static const struct config_option rows[] = {
 *           OPTIONS_FREQUENCY(struct record_opts),
 *           ... the command's own rows ...
 *           OPTIONS_LIMITS(struct record_opts),
 *   };
 *
 * A flag both commands take goes here, once; docs/options.md shows it
 * under each command (make options-doc). */
#ifndef KILN_OPTIONS_H
#define KILN_OPTIONS_H

#include <stddef.h>

#include "core/config.h"
#include "core/elf.h"
#include "core/file.h"
#include "pipeline.h"

#define OPTIONS_FREQUENCY(T) \
	CONFIG_ROW_U64(T, pipe.sampler.frequency, "frequency", 'F', "HZ", "97", 1, 1000, \
		       "samples per second per CPU")

/* Bounds, one per option for every command: 0 or at least 1024 map
 * entries (fewer only drops samples), at least 64 processes, at least one
 * process's worth of mappings (PROC_MAPS_PER_PROCESS), a symbol cache
 * of 1 MiB to 64 GiB, JIT symbols of 0 to 4 GiB (jit_table.h indexes a
 * table's names with 32 bits). */
#define OPTIONS_LIMITS(T) \
	CONFIG_ROW_BOOL(T, pipe.sampler.include_idle, "include-idle", 0, \
			"keep samples of the idle task (pid 0)"), \
	CONFIG_ROW_U64_AUTO(T, pipe.sampler.counts_entries, "counts-entries", "N", 1024, 1 << 24, \
			    "distinct sample keys a drain holds (0: CPUs x Hz x 20, power of two; ~80 bytes each, grown as used)"), \
	CONFIG_ROW_U64_AUTO(T, pipe.sampler.stack_entries, "stack-entries", "N", 1024, 1 << 22, \
			    "distinct stacks a drain holds (0: half the keys, at least 4096; ~40 bytes + 8 a frame, grown as used)"), \
	CONFIG_ROW_U64(T, pipe.max_processes, "max-processes", 0, "N", "32768", 64, 1 << 22, \
		       "processes tracked at once"), \
	CONFIG_ROW_SIZE(T, pipe.unwind_bytes, "unwind-memory", "SIZE", "16M", 0, 1ull << 30, \
			"BPF memory for unwind tables at most, 4 bytes a row, and 4 a 4 KiB page of code for their index, taken 1 MiB at a time as tables need it (least recently used tables of exited processes give way; 0: frame pointers only)"), \
	CONFIG_ROW_DURATION_NS(T, pipe.unwind_table_ttl_ns, "unwind-table-ttl", "10m", 0, 604800, \
			       "free the unwind table of a file no process has mapped this long, and the 1 MiB of rows left empty (90s, 10m, 1h; at most 168h; 0: only for room)"), \
	CONFIG_ROW_STRING(T, pipe.unwind_cache, "unwind-cache", 0, "DIR", NULL, \
			  "keep unwind tables, the kernel's symbol table and the kernel's types for the BPF programs in DIR between runs, so a restart does not build them again (default: /var/cache/kiln as root, else $XDG_CACHE_HOME/kiln; none: off)"), \
	CONFIG_ROW_SIZE(T, pipe.unwind_cache_bytes, "unwind-cache-size", "SIZE", "256M", 0, 1ull << 36, \
			"bound of the --unwind-cache directory (least recently used tables deleted; 0: off)"), \
	CONFIG_ROW_U64(T, pipe.sampler.unwind_processes, "unwind-processes", 0, "N", "4096", 64, 1 << 20, \
		       "processes whose stacks are walked with unwind tables at once (~4 KiB of BPF memory each; others: frame pointers), a quarter of that before kiln has read them (early walks, ~1 KiB each)"), \
	CONFIG_ROW_BOOL(T, pipe.sampler.no_bpf_loop, "no-bpf-loop", 0, \
			"load the unrolled BPF programs that kernels before 5.17 (no bpf_loop) load, whatever the kernel (tests; about 0.2 s more CPU at start)"), \
	CONFIG_ROW_BOOL(T, pipe.sampler.wake_on_new, "wake-on-new-process", 0, \
			"wake at each new process's first sample, so that its unwind tables load before its second (otherwise at the loop's next read, or once 8 of its samples were walked by frame pointers; about 40 us of CPU a new process on a VM); always so with a COMMAND or -p"), \
	CONFIG_ROW_BOOL(T, pipe.no_python, "no-python", 0, \
			"no Python frames: CPython processes keep their native eval-loop frames and their memory is not read"), \
	CONFIG_ROW_BOOL(T, pipe.no_ruby, "no-ruby", 0, \
			"no Ruby frames: CRuby processes keep their native rb_vm_exec frames and their memory is not read"), \
	CONFIG_ROW_U64(T, pipe.max_mappings, "max-mappings", 0, "N", "262144", 4096, 1 << 26, \
		       "executable mappings held for all processes together (each keeps at most 4096)"), \
	CONFIG_ROW_SIZE(T, pipe.cache_bytes, "symbol-cache", "SIZE", "64M", 1 << 20, 1ull << 36, \
			"ELF symbol cache bound (LRU; a drain also keeps the 8192 user frames it named first, 768K of names)"), \
	CONFIG_ROW_DURATION_NS(T, pipe.cache_ttl_ns, "symbol-cache-ttl", "10m", 0, 604800, \
			       "free a binary's symbols once no sample needed them this long (90s, 10m, 1h; at most 168h; 0: never)"), \
	CONFIG_ROW_SIZE(T, pipe.jit_bytes, "jit-memory", "SIZE", "64M", 0, 1ull << 32, \
			"JIT code names from perf maps and jitdump files, all processes (a file's table at most a quarter; LRU; 0: none read)")

/* Debug files from debuginfod servers (DEBUGINFOD_URLS), for binaries whose
 * local sources hold no debug symbols: lookups at once (0: none), and the
 * bounds of one download; a debug file may not pass ELF_FILE_MAX anyway. */
#define OPTIONS_DEBUGINFOD(T) \
	CONFIG_ROW_U64(T, pipe.debuginfod.lookups, "debuginfod-lookups", 0, "N", "2", 0, \
		       DEBUGINFOD_LOOKUPS_MAX, \
		       "debug files fetched at once, in the background, from the servers of DEBUGINFOD_URLS (libdebuginfod) for binaries with no local debug symbols; 0: none"), \
	CONFIG_ROW_DURATION_NS(T, pipe.debuginfod.timeout_ns, "debuginfod-timeout", "30s", 1, 3600, \
			       "give up one debug file's download after this long"), \
	CONFIG_ROW_SIZE(T, pipe.debuginfod.max_bytes, "debuginfod-max-size", "SIZE", "256M", 1 << 20, \
			ELF_FILE_MAX, "give up a debug file larger than this"), \
	CONFIG_ROW_DURATION_NS(T, pipe.debuginfod.miss_ttl_ns, "debuginfod-miss-ttl", "10m", 1, 604800, \
			       "a debug file not found, too large or timed out is asked for again after this long")

/* T's member `output_mode` (unsigned): the permission bits of every file
 * written (core/file.h bounds them). */
#define OPTIONS_OUTPUT(T) \
	CONFIG_ROW_MODE(T, output_mode, "output-mode", "0640", FILE_MODE_MIN, FILE_MODE_MAX, \
			"permission bits of the files written, octal; the umask applies")

/* A static label on every profile (the agent's and record's pushes,
 * files and labels): T's pipe.metadata.tags. */
#define OPTIONS_TAGS(T) \
	CONFIG_ROW_LIST(T, pipe.metadata.tags, pipe.metadata.ntags, "tag", 0, "KEY=VALUE", \
			"static label on every profile, repeatable (e.g. region=us-east-1)")

/* How to reach a Pyroscope server (push, query): T's `http` (struct
 * http_client_opts) and `allow_insecure_credentials` (bool). */
#define OPTIONS_SERVER(T) \
	CONFIG_ROW_STRING(T, http.basic_auth_user, "basic-auth-user", 0, "USER", NULL, \
			  "HTTP basic auth user (Grafana Cloud: the instance id)"), \
	CONFIG_ROW_STRING(T, http.basic_auth_password_file, "basic-auth-password-file", 0, "FILE", \
			  NULL, "file holding the basic auth password (re-read on SIGHUP and 401)"), \
	CONFIG_ROW_STRING(T, http.bearer_token_file, "bearer-token-file", 0, "FILE", NULL, \
			  "file holding a bearer token (re-read on SIGHUP and 401)"), \
	CONFIG_ROW_STRING(T, http.tenant_id, "tenant-id", 0, "ID", NULL, \
			  "X-Scope-OrgID for multi-tenant servers"), \
	CONFIG_ROW_LIST(T, http.headers, http.nheaders, "header", 0, "KEY=VALUE", \
			"extra HTTP header on every request, repeatable"), \
	CONFIG_ROW_BOOL(T, allow_insecure_credentials, "allow-insecure-credentials", 0, \
			"send credentials (token, basic auth, tenant, user:password in the URL) over plain http:// (unsafe)"), \
	CONFIG_ROW_STRING(T, http.ca_file, "ca-file", 0, "FILE", NULL, \
			  "CA bundle to verify the server's certificate"), \
	CONFIG_ROW_BOOL(T, http.insecure_skip_verify, "tls-insecure-skip-verify", 0, \
			"do not verify the server's certificate (unsafe)"), \
	CONFIG_ROW_SECONDS(T, http.connect_timeout, "connect-timeout", 0, "SECONDS", "5", 0.1, 300, \
			   "TCP + TLS connect timeout"), \
	CONFIG_ROW_SECONDS(T, http.request_timeout, "request-timeout", 0, "SECONDS", "30", 0.1, 600, \
			   "whole-request timeout")

/* What a push may hold and queue: T's queue_max_bytes, push_max_stacks,
 * push_max_bytes (uint64_t). */
#define OPTIONS_PUSH(T) \
	CONFIG_ROW_SIZE(T, queue_max_bytes, "queue-max-bytes", "SIZE", "64M", 1 << 16, 1ull << 40, \
			"profiles waiting for the server; beyond it the oldest is dropped"), \
	CONFIG_ROW_U64(T, push_max_stacks, "push-max-stacks", 0, "N", "16000", 1, 16000, \
		       "stacks of a profile for the server (Pyroscope's limit: 16000); the lightest beyond it are folded into [other]"), \
	CONFIG_ROW_SIZE(T, push_max_bytes, "push-max-bytes", "SIZE", "1900000", 4096, 4000000, \
			"a profile for the server with its labels, before compression (under Pyroscope's 2 MB burst); beyond it the lightest stacks are folded into [other]")

/* T's member `config` (const char *): the file of `key = value` lines. */
#define OPTIONS_CONFIG(T) \
	CONFIG_ROW_STRING(T, config, "config", 'c', "FILE", NULL, \
			  "read 'key = value' lines (keys = flag names); flags and environment win")

#endif
