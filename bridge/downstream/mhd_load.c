/* mhd_load.c - libmicrohttpd's functions, forwarded to the library opened on first listen
 *
 * See mhd_load.h for why. Single-threaded like the rest of the bridge: the table is written by
 * the first mhd_load() and only read after. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <microhttpd.h>

#include "downstream/mhd_load.h"

#define MHD_LIBRARY "libmicrohttpd.so.12"
#define MHD_PACKAGE "libmicrohttpd12"

/* X(return type, name, parameters, arguments) of the functions forwarded as they are;
 * MHD_start_daemon() and MHD_get_daemon_info() are variadic and written out below. */
#define MHD_FUNCTIONS(X)                                                                           \
    X(enum MHD_Result, MHD_run, (struct MHD_Daemon * d), (d))                                      \
    X(enum MHD_Result, MHD_get_timeout, (struct MHD_Daemon * d, MHD_UNSIGNED_LONG_LONG * ms),      \
      (d, ms))                                                                                     \
    X(struct MHD_Response *, MHD_create_response_from_buffer,                                      \
      (size_t size, void *buffer, enum MHD_ResponseMemoryMode mode), (size, buffer, mode))         \
    X(struct MHD_Response *, MHD_create_response_from_callback,                                    \
      (uint64_t size, size_t block, MHD_ContentReaderCallback crc, void *cls,                      \
       MHD_ContentReaderFreeCallback crfc),                                                        \
      (size, block, crc, cls, crfc))                                                               \
    X(enum MHD_Result, MHD_add_response_header,                                                    \
      (struct MHD_Response * r, const char *header, const char *content), (r, header, content))    \
    X(enum MHD_Result, MHD_queue_response,                                                         \
      (struct MHD_Connection * c, unsigned int status, struct MHD_Response *r), (c, status, r))    \
    X(const char *, MHD_lookup_connection_value,                                                   \
      (struct MHD_Connection * c, enum MHD_ValueKind kind, const char *key), (c, kind, key))       \
    X(int, MHD_get_connection_values,                                                              \
      (struct MHD_Connection * c, enum MHD_ValueKind kind, MHD_KeyValueIterator it, void *cls),    \
      (c, kind, it, cls))

/* V(name, parameters, arguments): those returning nothing. */
#define MHD_VOID_FUNCTIONS(V)                                                                      \
    V(MHD_stop_daemon, (struct MHD_Daemon * d), (d))                                               \
    V(MHD_destroy_response, (struct MHD_Response * r), (r))                                        \
    V(MHD_suspend_connection, (struct MHD_Connection * c), (c))                                    \
    V(MHD_resume_connection, (struct MHD_Connection * c), (c))

typedef struct MHD_Daemon *(*start_daemon_va_fn)(unsigned int flags, uint16_t port,
                                                 MHD_AcceptPolicyCallback apc, void *apc_cls,
                                                 MHD_AccessHandlerCallback dh, void *dh_cls,
                                                 va_list ap);
typedef const union MHD_DaemonInfo *(*get_daemon_info_fn)(struct MHD_Daemon *d,
                                                          enum MHD_DaemonInfoType type, ...);
typedef const union MHD_ConnectionInfo *(*get_connection_info_fn)(struct MHD_Connection *c,
                                                                  enum MHD_ConnectionInfoType type,
                                                                  ...);

#define TABLE_ENTRY(ret, name, params, args) ret(*name) params;
#define TABLE_VOID_ENTRY(name, params, args) void(*name) params;
static struct {
    MHD_FUNCTIONS(TABLE_ENTRY)
    MHD_VOID_FUNCTIONS(TABLE_VOID_ENTRY)
    start_daemon_va_fn MHD_start_daemon_va;
    get_daemon_info_fn MHD_get_daemon_info;
    get_connection_info_fn MHD_get_connection_info;
} fn;
#undef TABLE_ENTRY
#undef TABLE_VOID_ENTRY

static int load_result = 1; /* 1: not tried yet */
static char load_error[ERR_MSG_MAX];

static int load(void)
{
    void *lib = dlopen(MHD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        (void)snprintf(load_error, sizeof load_error,
                       "cannot load libmicrohttpd: %s (install the Debian package " MHD_PACKAGE ")",
                       why ? why : MHD_LIBRARY);
        return -ELIBACC;
    }
    const char *missing = NULL;
    /* POSIX guarantees that dlsym()'s object pointer holds a function's address. */
#define RESOLVE(name)                                                                              \
    if (!(*(void **)&fn.name = dlsym(lib, #name)) && !missing)                                     \
        missing = #name;
#define RESOLVE_ENTRY(ret, name, params, args) RESOLVE(name)
#define RESOLVE_VOID_ENTRY(name, params, args) RESOLVE(name)
    MHD_FUNCTIONS(RESOLVE_ENTRY)
    MHD_VOID_FUNCTIONS(RESOLVE_VOID_ENTRY)
    RESOLVE(MHD_start_daemon_va)
    RESOLVE(MHD_get_daemon_info)
    RESOLVE(MHD_get_connection_info)
#undef RESOLVE_ENTRY
#undef RESOLVE_VOID_ENTRY
#undef RESOLVE
    if (missing) {
        (void)snprintf(load_error, sizeof load_error,
                       "cannot use " MHD_LIBRARY
                       ": it has no %s() (install the Debian package " MHD_PACKAGE ")",
                       missing);
        return -ELIBACC;
    }
    return 0;
}

int mhd_load(struct err *e)
{
    if (load_result > 0)
        load_result = load();
    if (load_result < 0)
        return err_set(e, load_result, "%s", load_error);
    return 0;
}

#define STUB(ret, name, params, args)                                                              \
    ret name params                                                                                \
    {                                                                                              \
        return fn.name args;                                                                       \
    }
#define VOID_STUB(name, params, args)                                                              \
    void name params                                                                               \
    {                                                                                              \
        fn.name args;                                                                              \
    }
MHD_FUNCTIONS(STUB)
MHD_VOID_FUNCTIONS(VOID_STUB)
#undef STUB
#undef VOID_STUB

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    if (mhd_load(NULL) < 0)
        return NULL;
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = fn.MHD_start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}

/* The information the bridge asks for takes no argument after its type. */
const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *d, enum MHD_DaemonInfoType type,
                                                ...)
{
    return fn.MHD_get_daemon_info(d, type);
}

const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *c,
                                                        enum MHD_ConnectionInfoType type, ...)
{
    return fn.MHD_get_connection_info(c, type);
}
