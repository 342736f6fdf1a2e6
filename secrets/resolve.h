/* resolve.h - from a name to a value.
 *
 * The order: the recipe in secrets.json first; when there is none, the process environment
 * (a variable of the same name). An environment variable never shadows a recipe silently: the
 * answer says when one exists and was not used.
 *
 * Every value resolved is registered with the redaction registry under its name, so it can
 * never appear in a log line or error message of this process afterwards. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"
#include "credkit/redact.h"

#include "cache.h"
#include "recipe.h"
#include "store.h"

#define SECRET_VALUE_MAX (1024 * 1024)

struct resolved {
    char *value; /* the secret; release with resolved_release() */
    size_t len;
    const char *source; /* recipe_kind_str() of the recipe, or "environment" */
    int64_t expires_at; /* unix seconds; 0 = does not expire */
    bool cached;        /* served from the TTL cache without running the command */
    bool env_shadowed;  /* an environment variable of the same name exists; the recipe won */
};

enum resolve_flags {
    RESOLVE_NO_CACHE = 1 << 0, /* run commands even when a fresh value is cached */
    RESOLVE_NO_ENV_FALLBACK = 1 << 1,
};

struct resolver;

/* store and redact are borrowed and must outlive the resolver; cache may be NULL. scope is the
 * agent directory (keys the cache). Caller frees with resolver_free(). */
int resolver_new(struct store *store, struct cache *cache, struct redact *redact, const char *scope,
                 unsigned flags, struct resolver **ret) _must_check_;
void resolver_free(struct resolver *rs);

/* Resolves name. Errors say what failed and what to do; they never contain the value. */
int resolver_get(struct resolver *rs, const char *name, struct resolved *ret,
                 struct err *e) _must_check_;

/* Resolves one recipe (which need not be in the store: configure tests a recipe before saving
 * it). */
int resolver_run(struct resolver *rs, const struct recipe *r, struct resolved *ret,
                 struct err *e) _must_check_;

void resolved_release(struct resolved *r);
