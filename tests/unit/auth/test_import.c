/* test_import.c - what `login --with-token` accepts, and mcp-remote's files as import.c reads
 * them: the directory, the MD5 file names, the token and client JSON (as mcp-remote 0.15.1
 * writes them), and what is refused */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "credkit/err.h"
#include "credkit/util.h"

#include "import.h"
#include "oauth.h"
#include "tests.h"

static int parse(const char *text, struct import_signin *s, struct err *e)
{
    err_clear(e);
    return import_parse_token(text, strlen(text), s, e);
}

static void test_plain_token(void)
{
    struct import_signin s = {0};
    struct err e = ERR_INIT;
    CHECK_INT(parse("  abc.DEF-123_~+/==\n", &s, &e), 0);
    CHECK_STR(s.access_token, "abc.DEF-123_~+/==");
    CHECK(!s.refresh_token && !s.token_type && !s.client_id);
    CHECK_INT(s.expires_at, 0);
    import_signin_release(&s);
    /* nothing, two lines, what no bearer token holds: refused, never quoted */
    CHECK_INT(parse(" \n", &s, &e), -EINVAL);
    CHECK_CONTAINS(err_msg(&e), "no token on standard input");
    CHECK_INT(parse("secret-one\nsecret-two", &s, &e), -EINVAL);
    CHECK_CONTAINS(err_msg(&e), "more than one line");
    CHECK(!strstr(err_msg(&e), "secret-one"));
    CHECK_INT(parse("Bearer secret-one", &s, &e), -EINVAL);
    CHECK_CONTAINS(err_msg(&e), "is not a bearer token");
    CHECK(!strstr(err_msg(&e), "secret-one"));
    CHECK_INT(parse("=secret", &s, &e), -EINVAL);
}

static void test_json_token(void)
{
    struct import_signin s = {0};
    struct err e = ERR_INIT;
    int64_t before = now_unix();
    CHECK_INT(parse("{\"access_token\": \"at-1\", \"token_type\": \"bearer\", \"expires_in\": 600, "
                    "\"refresh_token\": \"rt-1\", \"scope\": \"a b\", \"other\": 1}",
                    &s, &e),
              0);
    CHECK_STR(s.access_token, "at-1");
    CHECK_STR(s.refresh_token, "rt-1");
    CHECK_STR(s.scope, "a b");
    CHECK(s.expires_at >= before + 600 && s.expires_at <= now_unix() + 600);
    import_signin_release(&s);
    /* an absurd lifetime is capped, never an overflow */
    CHECK_INT(parse("{\"access_token\": \"at-1\", \"expires_in\": 9223372036854775807}", &s, &e),
              0);
    CHECK(s.expires_at > 0 && s.expires_at <= now_unix() + OAUTH_LIFETIME_MAX_S);
    import_signin_release(&s);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"{\"access_token\": \"secret-1\"", "not valid JSON"},
        {"{\"refresh_token\": \"secret-1\"}", "has no \"access_token\""},
        {"{\"access_token\": 5}", "\"access_token\" is a number, not a string"},
        {"{\"access_token\": \"secret 1\"}", "not a bearer token"},
        {"{\"access_token\": \"secret-1\", \"token_type\": \"DPoP\"}", "not Bearer"},
        {"{\"access_token\": \"secret-1\", \"expires_in\": 0}", "\"expires_in\" is not a positive"},
        {"{\"access_token\": \"secret-1\", \"expires_in\": \"60\"}", "\"expires_in\" is not"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_INT(parse(bad[i].text, &s, &e), -EINVAL);
        CHECK_CONTAINS(err_msg(&e), bad[i].msg);
        CHECK(!strstr(err_msg(&e), "secret"));
    }
}

static void test_read_fd(void)
{
    struct import_signin s = {0};
    struct err e = ERR_INIT;
    int p[2];
    CHECK_INT(pipe(p), 0);
    CHECK_INT((int)write(p[1], "tok-from-a-pipe\n", 16), 16);
    close(p[1]);
    CHECK_INT(import_read_token(p[0], &s, &e), 0);
    close(p[0]);
    CHECK_STR(s.access_token, "tok-from-a-pipe");
    import_signin_release(&s);
}

static void write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
    CHECK_INT(chmod(path, mode), 0);
}

static void test_mcp_remote_dir(void)
{
    char *d = NULL;
    struct err e = ERR_INIT;
    CHECK_INT(import_mcp_remote_dir("/x/y", &d, &e), 0);
    CHECK_STR(d, "/x/y/mcp-remote-v1");
    free(d);
    CHECK_INT(import_mcp_remote_dir("/x/mcp-remote-v1/", &d, &e), 0);
    CHECK_STR(d, "/x/mcp-remote-v1");
    free(d);
    CHECK_INT(setenv("MCP_REMOTE_CONFIG_DIR", "/cfg", 1), 0);
    CHECK_INT(import_mcp_remote_dir(NULL, &d, &e), 0);
    CHECK_STR(d, "/cfg/mcp-remote-v1");
    free(d);
    CHECK_INT(unsetenv("MCP_REMOTE_CONFIG_DIR"), 0);
    CHECK_INT(setenv("HOME", "/home/someone", 1), 0);
    CHECK_INT(import_mcp_remote_dir("", &d, &e), 0);
    CHECK_STR(d, "/home/someone/.mcp-auth/mcp-remote-v1");
    free(d);
}

static void test_mcp_remote_files(void)
{
    char dir[4200], h[33], h2[33];
    struct err e = ERR_INIT;
    struct import_signin s = {0};
    struct strv v = STRV_INIT;
    snprintf(dir, sizeof(dir), "%s/mcp-remote-v1", tests_tmpdir());
    CHECK_INT(import_mcp_remote_list(dir, &v, &e), 0); /* absent: none */
    CHECK_INT((int)v.n, 0);
    CHECK_INT(mkdir(dir, 0700), 0);
    /* the name mcp-remote gave the sign-in of this URL (seen on its own files) */
    import_mcp_remote_hash("http://127.0.0.1:43427/mcp", h);
    CHECK_STR(h, "f4b2d2abe49711ac9515469319606f7f");
    import_mcp_remote_hash("https://other.example.com/mcp", h2);
    CHECK_INT(import_mcp_remote_read(dir, h, &s, &e), -ENOENT);

    char tokens_name[64], client_name[64];
    snprintf(tokens_name, sizeof(tokens_name), "%s_tokens.json", h);
    snprintf(client_name, sizeof(client_name), "%s_client_info.json", h);
    write_file(dir, tokens_name,
               "{\"refresh_token\": \"rt-x\", \"access_token\": \"at-x\", \"token_type\": "
               "\"Bearer\", \"expires_in\": 12, \"scope\": \"mcp:read mcp:write\", "
               "\"expires_at\": 1796546833716, \"requested_scope\": \"mcp:read\"}",
               0600);
    write_file(dir, client_name,
               "{\"redirect_uris\": [\"http://localhost:20161/oauth/callback\"], "
               "\"token_endpoint_auth_method\": \"none\", \"client_id\": \"cid-1\", "
               "\"client_id_issued_at\": 1796546819, \"issuer\": \"http://127.0.0.1:38995\"}",
               0600);
    snprintf(tokens_name, sizeof(tokens_name), "%s_tokens.json", h2);
    write_file(dir, tokens_name, "{\"access_token\": \"at-2\"}", 0600);
    write_file(dir, "not-a-hash_tokens.json", "{}", 0600);
    write_file(dir, "refresh_in_progress.json", "{}", 0600);

    CHECK_INT(import_mcp_remote_list(dir, &v, &e), 0);
    CHECK_INT((int)v.n, 2);
    CHECK_STR(v.v[0], strcmp(h, h2) < 0 ? h : h2);
    strv_release(&v);

    CHECK_INT(import_mcp_remote_read(dir, h, &s, &e), 0);
    CHECK_STR(s.access_token, "at-x");
    CHECK_STR(s.refresh_token, "rt-x");
    CHECK_STR(s.scope, "mcp:read mcp:write");
    CHECK_INT(s.expires_at, 1796546833); /* milliseconds in the file */
    CHECK(s.obtained_at > 0);
    CHECK_STR(s.client_id, "cid-1");
    CHECK_STR(s.auth_method, "none");
    CHECK_STR(s.redirect_uri, "http://localhost:20161/oauth/callback");
    CHECK_STR(s.issuer, "http://127.0.0.1:38995");
    CHECK(!s.client_secret);
    import_signin_release(&s);

    /* no client file (a static client): the tokens alone */
    CHECK_INT(import_mcp_remote_read(dir, h2, &s, &e), 0);
    CHECK_STR(s.access_token, "at-2");
    CHECK(!s.client_id && !s.issuer);
    import_signin_release(&s);

    /* what mcp-remote does not write: named; a file others can read: refused */
    write_file(dir, tokens_name, "{\"access_token\": [\"at\"]}", 0600);
    CHECK_INT(import_mcp_remote_read(dir, h2, &s, &e), -EBADMSG);
    CHECK_CONTAINS(err_msg(&e), "_tokens.json': \"access_token\" is an array, not a string");
    write_file(dir, tokens_name, "{\"access_token\": \"at-2\"}", 0644);
    err_clear(&e);
    CHECK(import_mcp_remote_read(dir, h2, &s, &e) < 0);
    CHECK_CONTAINS(err_msg(&e), "chmod 600");
    write_file(dir, tokens_name, "{\"access_token\": \"at-2\"}", 0600);
    write_file(dir, client_name, "{\"client_secret\": \"cs\"}", 0600);
    err_clear(&e);
    CHECK_INT(import_mcp_remote_read(dir, h, &s, &e), -EBADMSG);
    CHECK_CONTAINS(err_msg(&e), "has no \"client_id\"");
}

TESTS_MAIN(test_plain_token, test_json_token, test_read_fd, test_mcp_remote_dir,
           test_mcp_remote_files)
