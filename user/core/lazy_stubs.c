/* SPDX-License-Identifier: BSD-2-Clause */
/* DESIGN: libcurl, libmicrohttpd and libdebuginfod are not linked: each
 * function kiln calls is defined here under its own name (the headers'
 * prototypes, so a mismatch does not compile) and forwards to the real
 * one, which the first call loads (lazy_lib.h says why). A function that
 * creates something (a handle, a daemon, a client) returns the library's
 * own failure value when the library cannot be loaded, and its callers
 * already report that; one that frees or ends something is a no-op then,
 * for nothing was created. A function kiln does not call is not here: the
 * link fails until it is added to its list. */
#define CURL_DISABLE_TYPECHECK  /* the stubs define, they do not call */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>

#include <curl/curl.h>
#include <elfutils/debuginfod.h>
#include <microhttpd.h>

#include "core/lazy_lib.h"

/* Per library, three lists: LOAD(ret, name, params, args, fail), loads the
 * library, else returns fail; IF_LOADED(name, params, args), a void
 * function, a no-op unless loaded; BY_HAND(name), resolved here, defined
 * below (variadic). */
#define CURL_FNS(LOAD, IF_LOADED, BY_HAND)                                              \
	LOAD(CURLcode, curl_global_init, (long flags), (flags), CURLE_FAILED_INIT)      \
	LOAD(CURL *, curl_easy_init, (void), (), NULL)                                  \
	LOAD(CURLcode, curl_easy_perform, (CURL *h), (h), CURLE_FAILED_INIT)            \
	LOAD(const char *, curl_easy_strerror, (CURLcode code), (code),                 \
	     "libcurl is not loaded")                                                   \
	LOAD(char *, curl_easy_escape, (CURL *h, const char *s, int len), (h, s, len),  \
	     NULL)                                                                      \
	LOAD(time_t, curl_getdate, (const char *s, const time_t *unused), (s, unused),  \
	     -1)                                                                        \
	LOAD(struct curl_slist *, curl_slist_append, (struct curl_slist *l, const char *s), \
	     (l, s), NULL)                                                              \
	IF_LOADED(curl_global_cleanup, (void), ())                                      \
	IF_LOADED(curl_easy_cleanup, (CURL *h), (h))                                    \
	IF_LOADED(curl_easy_reset, (CURL *h), (h))                                      \
	IF_LOADED(curl_free, (void *p), (p))                                            \
	IF_LOADED(curl_slist_free_all, (struct curl_slist *l), (l))                     \
	BY_HAND(curl_easy_setopt)                                                       \
	BY_HAND(curl_easy_getinfo)

#define MHD_FNS(LOAD, IF_LOADED, BY_HAND)                                               \
	LOAD(struct MHD_Response *, MHD_create_response_from_buffer,                    \
	     (size_t size, void *buffer, enum MHD_ResponseMemoryMode mode),             \
	     (size, buffer, mode), NULL)                                                \
	LOAD(enum MHD_Result, MHD_add_response_header,                                  \
	     (struct MHD_Response *r, const char *header, const char *content),         \
	     (r, header, content), MHD_NO)                                              \
	LOAD(enum MHD_Result, MHD_queue_response,                                       \
	     (struct MHD_Connection *c, unsigned int status, struct MHD_Response *r),   \
	     (c, status, r), MHD_NO)                                                    \
	LOAD(int, MHD_get_connection_values,                                            \
	     (struct MHD_Connection *c, enum MHD_ValueKind kind,                        \
	      MHD_KeyValueIterator it, void *it_cls), (c, kind, it, it_cls), -1)        \
	IF_LOADED(MHD_destroy_response, (struct MHD_Response *r), (r))                  \
	IF_LOADED(MHD_suspend_connection, (struct MHD_Connection *c), (c))              \
	IF_LOADED(MHD_resume_connection, (struct MHD_Connection *c), (c))               \
	IF_LOADED(MHD_stop_daemon, (struct MHD_Daemon *d), (d))                         \
	BY_HAND(MHD_start_daemon_va)

#define DEBUGINFOD_FNS(LOAD, IF_LOADED, BY_HAND)                                        \
	LOAD(debuginfod_client *, debuginfod_begin, (void), (), NULL)                   \
	LOAD(int, debuginfod_find_debuginfo,                                            \
	     (debuginfod_client *c, const unsigned char *id, int len, char **path),     \
	     (c, id, len, path), -ENOSYS)                                               \
	LOAD(void *, debuginfod_get_user_data, (debuginfod_client *c), (c), NULL)       \
	IF_LOADED(debuginfod_set_user_data, (debuginfod_client *c, void *v), (c, v))    \
	IF_LOADED(debuginfod_set_progressfn, (debuginfod_client *c,                     \
					      debuginfod_progressfn_t fn), (c, fn))     \
	IF_LOADED(debuginfod_end, (debuginfod_client *c), (c))

#define INDEX_LOAD(ret, name, params, args, fail) I_##name,
#define INDEX_IF_LOADED(name, params, args) I_##name,
#define INDEX_BY_HAND(name) I_##name,
#define NAME_LOAD(ret, name, params, args, fail) #name,
#define NAME_IF_LOADED(name, params, args) #name,
#define NAME_BY_HAND(name) #name,

/* Hidden: bound by kiln's own calls only. Exported, a stub would take the
 * place of the real function inside every library that calls it too
 * (libdebuginfod's calls into its own libcurl, for one), whenever a link
 * exports the executable's symbols (the sanitizer builds do). */
#define STUB __attribute__((visibility("hidden")))

#define STUB_LOAD(lib, ret, name, params, args, fail)                                   \
	STUB ret name params                                                            \
	{                                                                               \
		if (!lazy_lib__load(&lib))                                              \
			return fail;                                                    \
		return ((ret(*) params)lib.fns[I_##name]) args;                         \
	}
#define STUB_IF_LOADED(lib, name, params, args)                                         \
	STUB void name params                                                           \
	{                                                                               \
		if (lazy_lib__loaded(&lib))                                             \
			((void(*) params)lib.fns[I_##name]) args;                       \
	}

/* One library: its indices, names, function slots and lazy_lib, then
 * its stubs. */
#define LIBRARY(lib, soname, FNS)                                                       \
	enum { FNS(INDEX_LOAD, INDEX_IF_LOADED, INDEX_BY_HAND) lib##_count };           \
	static const char *const lib##_names[] = {                                      \
		FNS(NAME_LOAD, NAME_IF_LOADED, NAME_BY_HAND)                            \
	};                                                                              \
	static void *lib##_fns[lib##_count];                                            \
	static struct lazy_lib lib = { soname, lib##_names, lib##_fns, lib##_count, 0 };

/* The sonames: the ABI of the headers kiln is built with. */
LIBRARY(curl, "libcurl.so.4", CURL_FNS)
LIBRARY(mhd, "libmicrohttpd.so.12", MHD_FNS)
LIBRARY(dbgi, "libdebuginfod.so.1", DEBUGINFOD_FNS)

#define CURL_LOAD(...) STUB_LOAD(curl, __VA_ARGS__)
#define CURL_IF_LOADED(...) STUB_IF_LOADED(curl, __VA_ARGS__)
#define MHD_LOAD(...) STUB_LOAD(mhd, __VA_ARGS__)
#define MHD_IF_LOADED(...) STUB_IF_LOADED(mhd, __VA_ARGS__)
#define DBGI_LOAD(...) STUB_LOAD(dbgi, __VA_ARGS__)
#define DBGI_IF_LOADED(...) STUB_IF_LOADED(dbgi, __VA_ARGS__)
#define NO_STUB(name)

CURL_FNS(CURL_LOAD, CURL_IF_LOADED, NO_STUB)
MHD_FNS(MHD_LOAD, MHD_IF_LOADED, NO_STUB)
DEBUGINFOD_FNS(DBGI_LOAD, DBGI_IF_LOADED, NO_STUB)

/* libcurl reads the value with the type its option number's range says
 * (curl.h's CURLOPTTYPE_*): a long, a pointer (data or callback), a
 * curl_off_t, or a blob's pointer. */
STUB CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	CURLcode (*set)(CURL *, CURLoption, ...);
	CURLcode rc;
	va_list ap;

	if (!lazy_lib__load(&curl))
		return CURLE_FAILED_INIT;
	set = (CURLcode(*)(CURL *, CURLoption, ...))curl.fns[I_curl_easy_setopt];
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = set(h, opt, va_arg(ap, long));
	else if (opt >= CURLOPTTYPE_OFF_T && opt < CURLOPTTYPE_BLOB)
		rc = set(h, opt, va_arg(ap, curl_off_t));
	else
		rc = set(h, opt, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* Every CURLINFO_* takes a pointer to where the answer goes. */
STUB CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	CURLcode (*get)(CURL *, CURLINFO, ...);
	CURLcode rc;
	va_list ap;

	if (!lazy_lib__load(&curl))
		return CURLE_FAILED_INIT;
	get = (CURLcode(*)(CURL *, CURLINFO, ...))curl.fns[I_curl_easy_getinfo];
	va_start(ap, info);
	rc = get(h, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

STUB struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
					 MHD_AcceptPolicyCallback apc, void *apc_cls,
					 MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	struct MHD_Daemon *(*start)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
				    MHD_AccessHandlerCallback, void *, va_list);
	struct MHD_Daemon *d;
	va_list ap;

	if (!lazy_lib__load(&mhd))
		return NULL;
	start = (struct MHD_Daemon * (*)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
					 MHD_AccessHandlerCallback, void *,
					 va_list))mhd.fns[I_MHD_start_daemon_va];
	va_start(ap, dh_cls);
	d = start(flags, port, apc, apc_cls, dh, dh_cls, ap);
	va_end(ap);
	return d;
}
