/* mhd_load.h - libmicrohttpd, loaded when the bridge first listens
 *
 * Only `--listen` needs an HTTP server, and linking libmicrohttpd brings GnuTLS and p11-kit,
 * which initialise themselves at load: about 2 MB of every bridge's memory. So mcp-bridge does
 * not link it: mhd_load.c defines the libmicrohttpd functions the listener calls (agent_http*.c
 * call libmicrohttpd's API as documented) and forwards them to libmicrohttpd.so.12, opened by
 * mhd_load(). The listener calls mhd_load() before it starts a daemon; every other function
 * takes a daemon, a connection or a response, which only exist once it succeeded.
 * mcp-auth links libmicrohttpd as usual (every login listens). */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

/* Opens libmicrohttpd once, for the whole process; later calls return its first result.
 * Returns 0, or -ELIBACC with a message naming the library and the package that provides it. */
int mhd_load(struct err *e) _must_check_;
