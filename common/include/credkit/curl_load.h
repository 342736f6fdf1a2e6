/* curl_load.h - libcurl, opened on its first use
 *
 * The executables do not link libcurl: common/curl_load.c defines the libcurl functions the
 * project calls and opens libcurl.so.4 at the first of them (why: docs/development.md, "What
 * loads when"). Code calls libcurl's API as documented and needs nothing from here; a libcurl
 * function failing as when out of resources (curl_url() or curl_easy_init() returning NULL)
 * may ask curl_load() whether the library is missing, to say so instead of "out of memory". */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

/* Opens libcurl once for the process (later calls return the first result): 0, or -ELIBACC with
 * a message naming the library and the Debian package to install. */
int curl_load(struct err *e) _must_check_;
