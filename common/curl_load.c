/* curl_load.c - libcurl, loaded on its first use
 *
 * Linking libcurl costs every process about 5 MB of resident memory before main() runs: on
 * Debian it brings librtmp and libldap, hence GnuTLS (whose constructor initialises itself and
 * touches p11-kit), Kerberos, libssh2, nettle and a dozen more, all relocated and initialised at
 * start. A bridge relaying a stdio server never makes an HTTP request, so the executables do not
 * link libcurl: this file defines the libcurl functions the project calls, and the first of them
 * called opens libcurl.so.4 (RTLD_LOCAL) and forwards to it. Callers keep calling libcurl's API
 * as documented; a process that never calls it never maps it.
 *
 * The table is process-wide, as libcurl's own global state is: it is filled once (pthread_once)
 * and never changes after. When libcurl cannot be loaded, each function fails as libcurl does
 * when out of resources (NULL, CURLE_FAILED_INIT, CURLM_INTERNAL_ERROR, CURLUE_OUT_OF_MEMORY)
 * and curl_easy_strerror() returns the loader's message, so that every caller's report names
 * the missing library and the package.
 *
 * GnuTLS, which libcurl's dependencies bring, initialises itself in a constructor unless
 * GNUTLS_NO_IMPLICIT_INIT is set: nothing here uses GnuTLS (libcurl speaks TLS with OpenSSL;
 * librtmp, libldap and libmicrohttpd call gnutls_global_init() themselves before using it), so
 * the variable is set around the dlopen() only, when the process runs one thread (setenv() is
 * not safe beside threads that read the environment: a threaded mcp-auth pays GnuTLS's start-up
 * instead), unless the caller's environment already has it,
 * and taken out again before any child could inherit it. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "credkit/curl_load.h"

#define CURL_LIBRARY "libcurl.so.4"
#define CURL_PACKAGE "libcurl4"

/* curl/curl.h wraps these in type-checking macros: the functions themselves are defined here. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt

/* X(return type, name, parameters, arguments, value when libcurl is missing); the variadic
 * setters and getters are written out below. */
#define CURL_FUNCTIONS(X)                                                                          \
    X(CURLcode, curl_global_init, (long flags), (flags), CURLE_FAILED_INIT)                        \
    X(char *, curl_version, (void), (), NULL)                                                      \
    X(curl_version_info_data *, curl_version_info, (CURLversion v), (v), NULL)                     \
    X(CURL *, curl_easy_init, (void), (), NULL)                                                    \
    X(CURLcode, curl_easy_perform, (CURL * h), (h), CURLE_FAILED_INIT)                             \
    X(CURL *, curl_easy_duphandle, (CURL * h), (h), NULL)                                          \
    X(CURLcode, curl_easy_pause, (CURL * h, int bitmask), (h, bitmask), CURLE_FAILED_INIT)         \
    X(CURLcode, curl_easy_upkeep, (CURL * h), (h), CURLE_FAILED_INIT)                              \
    X(CURLcode, curl_easy_recv, (CURL * h, void *b, size_t n, size_t *got), (h, b, n, got),        \
      CURLE_FAILED_INIT)                                                                           \
    X(CURLcode, curl_easy_send, (CURL * h, const void *b, size_t n, size_t *sent),                 \
      (h, b, n, sent), CURLE_FAILED_INIT)                                                          \
    X(CURLHcode, curl_easy_header,                                                                 \
      (CURL * h, const char *name, size_t index, unsigned int origin, int request,                 \
       struct curl_header **hout),                                                                 \
      (h, name, index, origin, request, hout), CURLHE_BAD_ARGUMENT)                                \
    X(struct curl_header *, curl_easy_nextheader,                                                  \
      (CURL * h, unsigned int origin, int request, struct curl_header *prev),                      \
      (h, origin, request, prev), NULL)                                                            \
    X(char *, curl_easy_escape, (CURL * h, const char *s, int n), (h, s, n), NULL)                 \
    X(char *, curl_easy_unescape, (CURL * h, const char *s, int n, int *outn), (h, s, n, outn),    \
      NULL)                                                                                        \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist * l, const char *s), (l, s),      \
      NULL)                                                                                        \
    X(time_t, curl_getdate, (const char *p, const time_t *unused), (p, unused), -1)                \
    X(const char *, curl_multi_strerror, (CURLMcode c), (c), load_error)                           \
    X(const char *, curl_url_strerror, (CURLUcode c), (c), load_error)                             \
    X(CURLM *, curl_multi_init, (void), (), NULL)                                                  \
    X(CURLMcode, curl_multi_add_handle, (CURLM * m, CURL * h), (m, h), CURLM_INTERNAL_ERROR)       \
    X(CURLMcode, curl_multi_remove_handle, (CURLM * m, CURL * h), (m, h), CURLM_INTERNAL_ERROR)    \
    X(CURLMcode, curl_multi_fdset, (CURLM * m, fd_set * r, fd_set * w, fd_set * e, int *max),      \
      (m, r, w, e, max), CURLM_INTERNAL_ERROR)                                                     \
    X(CURLMcode, curl_multi_wait,                                                                  \
      (CURLM * m, struct curl_waitfd * fds, unsigned int n, int ms, int *ret),                     \
      (m, fds, n, ms, ret), CURLM_INTERNAL_ERROR)                                                  \
    X(CURLMcode, curl_multi_poll,                                                                  \
      (CURLM * m, struct curl_waitfd * fds, unsigned int n, int ms, int *ret),                     \
      (m, fds, n, ms, ret), CURLM_INTERNAL_ERROR)                                                  \
    X(CURLMcode, curl_multi_wakeup, (CURLM * m), (m), CURLM_INTERNAL_ERROR)                        \
    X(CURLMcode, curl_multi_perform, (CURLM * m, int *running), (m, running),                      \
      CURLM_INTERNAL_ERROR)                                                                        \
    X(CURLMcode, curl_multi_cleanup, (CURLM * m), (m), CURLM_INTERNAL_ERROR)                       \
    X(CURLMsg *, curl_multi_info_read, (CURLM * m, int *left), (m, left), NULL)                    \
    X(CURLMcode, curl_multi_socket_action,                                                         \
      (CURLM * m, curl_socket_t s, int ev_bitmask, int *running), (m, s, ev_bitmask, running),     \
      CURLM_INTERNAL_ERROR)                                                                        \
    X(CURLMcode, curl_multi_timeout, (CURLM * m, long *ms), (m, ms), CURLM_INTERNAL_ERROR)         \
    X(CURLMcode, curl_multi_assign, (CURLM * m, curl_socket_t s, void *p), (m, s, p),              \
      CURLM_INTERNAL_ERROR)                                                                        \
    X(CURLU *, curl_url, (void), (), NULL)                                                         \
    X(CURLU *, curl_url_dup, (CURLU * u), (u), NULL)                                               \
    X(CURLUcode, curl_url_get, (CURLU * u, CURLUPart what, char **part, unsigned int flags),       \
      (u, what, part, flags), CURLUE_OUT_OF_MEMORY)                                                \
    X(CURLUcode, curl_url_set, (CURLU * u, CURLUPart what, const char *part, unsigned int flags),  \
      (u, what, part, flags), CURLUE_OUT_OF_MEMORY)

/* V(name, parameters, arguments): the functions returning nothing, a no-op without libcurl (no
 * handle they could be given exists then). */
#define CURL_VOID_FUNCTIONS(V)                                                                     \
    V(curl_global_cleanup, (void), ())                                                             \
    V(curl_easy_cleanup, (CURL * h), (h))                                                          \
    V(curl_easy_reset, (CURL * h), (h))                                                            \
    V(curl_free, (void *p), (p))                                                                   \
    V(curl_slist_free_all, (struct curl_slist * l), (l))                                           \
    V(curl_url_cleanup, (CURLU * u), (u))

/* The variadic ones: the one argument after the option, read by the option's type (the range
 * its number is in, CURLOPTTYPE_*, as libcurl reads it) and passed on as that type. */
typedef CURLcode (*easy_setopt_fn)(CURL *, CURLoption, ...);
typedef CURLcode (*easy_getinfo_fn)(CURL *, CURLINFO, ...);
typedef CURLMcode (*multi_setopt_fn)(CURLM *, CURLMoption, ...);
typedef const char *(*easy_strerror_fn)(CURLcode);
typedef void (*any_fn)(void);

#define TABLE_ENTRY(ret, name, params, args, fail) ret(*name) params;
#define TABLE_VOID_ENTRY(name, params, args)       void(*name) params;
static struct {
    CURL_FUNCTIONS(TABLE_ENTRY)
    CURL_VOID_FUNCTIONS(TABLE_VOID_ENTRY)
    easy_setopt_fn curl_easy_setopt;
    easy_getinfo_fn curl_easy_getinfo;
    multi_setopt_fn curl_multi_setopt;
    easy_strerror_fn curl_easy_strerror;
} fn;
#undef TABLE_ENTRY
#undef TABLE_VOID_ENTRY

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_error[512];

static void *resolve(void *lib, const char *name, bool *ok)
{
    void *p = dlsym(lib, name);
    if (!p && *ok) {
        *ok = false;
        (void)snprintf(load_error, sizeof load_error,
                       "cannot use " CURL_LIBRARY ": it has no %s() (libcurl 7.88 or later is "
                       "needed: Debian package " CURL_PACKAGE ")",
                       name);
    }
    return p;
}

/* Whether this process runs one thread (num_threads, field 20 of /proc/self/stat): setenv() is
 * safe only then, as another thread may read the environment meanwhile (glib's, under
 * libsecret, in mcp-auth and secrets). Unknown counts as more. */
static bool one_thread(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    (void)close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    /* comm (field 2) may hold spaces: counted from its end, the space before field 3 */
    const char *p = strrchr(buf, ')');
    if (p)
        p++;
    for (int field = 3; p && field < 20; field++)
        p = strchr(p + 1, ' ');
    return p && strtol(p + 1, NULL, 10) == 1;
}

static void load(void)
{
    bool set_env = !getenv("GNUTLS_NO_IMPLICIT_INIT") && one_thread();
    if (set_env)
        (void)setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 0);
    void *lib = dlopen(CURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (set_env)
        (void)unsetenv("GNUTLS_NO_IMPLICIT_INIT");
    if (!lib) {
        const char *why = dlerror();
        (void)snprintf(load_error, sizeof load_error,
                       "cannot load libcurl: %s (install the Debian package " CURL_PACKAGE ")",
                       why ? why : CURL_LIBRARY);
        return;
    }
    bool ok = true;
    /* POSIX guarantees that dlsym()'s object pointer holds a function's address. */
#define RESOLVE(name)                                *(void **)&fn.name = resolve(lib, #name, &ok);
#define RESOLVE_ENTRY(ret, name, params, args, fail) RESOLVE(name)
#define RESOLVE_VOID_ENTRY(name, params, args)       RESOLVE(name)
    CURL_FUNCTIONS(RESOLVE_ENTRY)
    CURL_VOID_FUNCTIONS(RESOLVE_VOID_ENTRY)
    RESOLVE(curl_easy_setopt)
    RESOLVE(curl_easy_getinfo)
    RESOLVE(curl_multi_setopt)
    RESOLVE(curl_easy_strerror)
#undef RESOLVE
#undef RESOLVE_ENTRY
#undef RESOLVE_VOID_ENTRY
    /* all or nothing: a library lacking one function is not used (and stays mapped, unused) */
    loaded = ok;
}

static bool ready(void)
{
    (void)pthread_once(&load_once, load);
    return loaded;
}

int curl_load(struct err *e)
{
    return ready() ? 0 : err_set(e, -ELIBACC, "%s", load_error);
}

#define STUB(ret, name, params, args, fail)                                                        \
    ret name params                                                                                \
    {                                                                                              \
        return ready() ? fn.name args : fail;                                                      \
    }
#define VOID_STUB(name, params, args)                                                              \
    void name params                                                                               \
    {                                                                                              \
        if (ready())                                                                               \
            fn.name args;                                                                          \
    }
CURL_FUNCTIONS(STUB)
CURL_VOID_FUNCTIONS(VOID_STUB)
#undef STUB
#undef VOID_STUB

const char *curl_easy_strerror(CURLcode c)
{
    return ready() ? fn.curl_easy_strerror(c) : load_error;
}

CURLcode curl_easy_setopt(CURL *h, CURLoption option, ...)
{
    if (!ready())
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, option);
    CURLcode r;
    if (option < CURLOPTTYPE_OBJECTPOINT)
        r = fn.curl_easy_setopt(h, option, va_arg(ap, long));
    else if (option < CURLOPTTYPE_FUNCTIONPOINT)
        r = fn.curl_easy_setopt(h, option, va_arg(ap, void *));
    else if (option < CURLOPTTYPE_OFF_T)
        r = fn.curl_easy_setopt(h, option, va_arg(ap, any_fn));
    else if (option < CURLOPTTYPE_BLOB)
        r = fn.curl_easy_setopt(h, option, va_arg(ap, curl_off_t));
    else
        r = fn.curl_easy_setopt(h, option, va_arg(ap, void *));
    va_end(ap);
    return r;
}

CURLMcode curl_multi_setopt(CURLM *m, CURLMoption option, ...)
{
    if (!ready())
        return CURLM_INTERNAL_ERROR;
    va_list ap;
    va_start(ap, option);
    CURLMcode r;
    if (option < CURLOPTTYPE_OBJECTPOINT)
        r = fn.curl_multi_setopt(m, option, va_arg(ap, long));
    else if (option < CURLOPTTYPE_FUNCTIONPOINT)
        r = fn.curl_multi_setopt(m, option, va_arg(ap, void *));
    else if (option < CURLOPTTYPE_OFF_T)
        r = fn.curl_multi_setopt(m, option, va_arg(ap, any_fn));
    else
        r = fn.curl_multi_setopt(m, option, va_arg(ap, curl_off_t));
    va_end(ap);
    return r;
}

/* Every CURLINFO answers through a pointer. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
    if (!ready())
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, info);
    CURLcode r = fn.curl_easy_getinfo(h, info, va_arg(ap, void *));
    va_end(ap);
    return r;
}
