/* fuzz_jsonscan.c - libFuzzer target: the envelope scan and the splice (bridge/core/jsonscan.c).
 *
 * Input: any bytes, read as a message from an agent or a server. Whatever the scan accepts
 * (settled or not) jrpc_parse() accepts too, so the fast path never lets through what the tree
 * would refuse; every span lies inside the text; a settled message with its id (and tool name)
 * spliced scans again to the same envelope, and splicing the old bytes back gives the text it
 * came from; params parsed as a stand-in (jrpc_parse_light) serialise to their own bytes with
 * only name and _meta written by json-c, its envelope (built from the scan or parsed) is the
 * whole parse's, and a request written from it (jrpc_write_request) is the tree's text. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/jsonrpc.h"
#include "core/jsonscan.h"

#include "fuzz.h"

static void check_span(struct jscan_span s, size_t size)
{
    fuzz_check(s.off <= size && s.len <= size - s.off);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct jscan j, again;
    struct jrpc_msg m, whole = {0};
    struct err e = ERR_INIT;

    int r = jscan_message(text, size, &j);
    fuzz_check(r == 0 || r == -EAGAIN || r == -EBADMSG);
    if (r == -EBADMSG)
        return 0;
    int parsed = jrpc_parse(text, size, 64u * 1024u * 1024u, &whole, &e);
    fuzz_check(parsed == 0 || parsed == -ENOMEM);
    if (r < 0) {
        jrpc_msg_done(&whole);
        return 0;
    }

    struct jscan_span spans[] = {j.id,    j.method, j.params, j.result,
                                 j.error, j.name,   j.meta,   j.token};
    for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++)
        check_span(spans[i], size);

    /* params as a stand-in serialise to their bytes, name and _meta as json-c writes them */
    if (jrpc_parse_light(text, size, 64u * 1024u * 1024u, &j, &m, &e) == 0) {
        struct jscan_edit pe[2];
        size_t np = 0;
        struct jscan_span name = {j.name.off - 1, j.name.len + 2};
        struct json_object *nv = json_object_object_get(m.params, "name");
        struct json_object *mv = json_object_object_get(m.params, "_meta");
        size_t nlen = 0, mlen = 0;
        const char *ns = j.name.len ? jrpc_serialize(nv, &nlen) : NULL;
        const char *ms = j.meta.len ? jrpc_serialize(mv, &mlen) : NULL;
        if (ns && (!ms || j.name.off < j.meta.off))
            pe[np++] = (struct jscan_edit){name, ns, nlen};
        if (ms)
            pe[np++] = (struct jscan_edit){j.meta, ms, mlen};
        if (ns && ms && j.name.off > j.meta.off)
            pe[np++] = (struct jscan_edit){name, ns, nlen};
        struct buf want;
        buf_init(&want, SIZE_MAX / 2);
        size_t plen = 0;
        const char *p = jrpc_serialize(m.params, &plen);
        fuzz_check(jscan_splice(text, size, pe, np, &want) == 0);
        fuzz_check(!p || (plen == j.params.len + want.len - size &&
                          memcmp(p, want.data + j.params.off, plen) == 0));
        /* the envelope is the whole parse's */
        if (parsed == 0) {
            fuzz_check(m.kind == whole.kind && whole.method && strcmp(m.method, whole.method) == 0);
            fuzz_check((m.id == NULL) == (whole.id == NULL));
            fuzz_check(!m.id || (json_object_get_type(m.id) == json_object_get_type(whole.id) &&
                                 json_object_equal(m.id, whole.id)));
        }
        /* the request text without a tree is the tree's */
        struct json_object *id = json_object_new_int64(12345);
        struct json_object *req = id ? jrpc_new_request(id, m.method, m.params) : NULL;
        size_t rlen = 0;
        const char *rt = req ? jrpc_serialize(req, &rlen) : NULL;
        buf_reset(&want);
        if (rt && jrpc_write_request(&want, 12345, m.method, m.params) == 0)
            fuzz_check(want.len == rlen && memcmp(want.data, rt, rlen) == 0);
        json_object_put(req);
        json_object_put(id);
        buf_release(&want);
        jrpc_msg_done(&m);
    }
    jrpc_msg_done(&whole);

    /* the id becomes a string, the name loses its first byte */
    struct jscan_edit ed[2];
    size_t n = 0;
    if (j.id.len)
        ed[n++] = (struct jscan_edit){j.id, "\"b1\"", 4};
    bool cut = j.name.len && j.name.off > j.id.off && (unsigned char)text[j.name.off] < 0x80;
    if (cut)
        ed[n++] = (struct jscan_edit){{j.name.off, 1}, "", 0};
    struct buf out, back;
    buf_init(&out, size + 16);
    buf_init(&back, size + 16);
    fuzz_check(jscan_splice(text, size, ed, n, &out) == 0);
    fuzz_check(jscan_message(out.data, out.len, &again) == 0);
    fuzz_check(again.version_ok == j.version_ok);
    fuzz_check(again.method.len == j.method.len);
    fuzz_check(memcmp(out.data + again.method.off, text + j.method.off, j.method.len) == 0);
    fuzz_check(!j.id.len || jscan_span_is(out.data, again.id, "\"b1\""));

    /* and back */
    struct jscan_edit un[2];
    size_t k = 0;
    if (j.id.len)
        un[k++] = (struct jscan_edit){again.id, text + j.id.off, j.id.len};
    if (cut)
        un[k++] = (struct jscan_edit){{again.name.off, 0}, text + j.name.off, 1};
    fuzz_check(jscan_splice(out.data, out.len, un, k, &back) == 0);
    fuzz_check(back.len == size && memcmp(back.data, text, size) == 0);
    buf_release(&out);
    buf_release(&back);
    return 0;
}
