/* What the C writers share (text.c, jsonout.c, avrojson.c): their output buffer and the
 * tables behind speedups.h's kd_put_* helpers. No Python module of its own. */

#include "speedups.h"

const char kd_hex_digits[] = "0123456789abcdef";
const char kd_base64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const char *const kd_codec_names[8] = {"none", "gzip", "snappy", "lz4", "zstd",
                                       "unknown(5)", "unknown(6)", "unknown(7)"};
uint16_t kd_base64_pairs[4096];

void
kd_text_init(void)
{
    for (int x = 0; x < 4096; x++) {
        char pair[2] = {kd_base64_alphabet[x >> 6], kd_base64_alphabet[x & 0x3F]};
        memcpy(&kd_base64_pairs[x], pair, 2);
    }
}

/* One allocation for the whole run ... */
static char *kept = NULL;
static Py_ssize_t kept_cap = 0;
/* ... unless a call made it larger than this (a huge batch: its room is not kept for the rest). */
#define KEEP_BYTES ((Py_ssize_t)16 << 20)

void
kd_out_begin(kd_out *o)
{
    o->p = kept;
    o->cap = kept_cap;
    o->len = 0;
    kept = NULL;
    kept_cap = 0;
}

int
kd_out_reserve(kd_out *o, Py_ssize_t extra)
{
    if (extra <= o->cap - o->len)
        return 0;
    if (extra < 0 || extra > PY_SSIZE_T_MAX / 2 - o->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t cap = o->cap < (1 << 16) ? 1 << 16 : o->cap;
    while (cap - o->len < extra)
        cap *= 2;
    char *p = PyMem_Realloc(o->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->p = p;
    o->cap = cap;
    return 0;
}

void
kd_out_end(kd_out *o)
{
    if (o->cap > KEEP_BYTES || kept != NULL) {
        PyMem_Free(o->p);
    } else {
        kept = o->p;
        kept_cap = o->cap;
    }
    o->p = NULL;
    o->cap = o->len = 0;
}

int
kd_out_append_to(const kd_out *o, PyObject *out)
{
    if (o->len == 0)
        return 0;           /* (o->p may be NULL: no call has asked for room yet) */
    Py_ssize_t old = PyByteArray_GET_SIZE(out);
    if (PyByteArray_Resize(out, old + o->len) < 0)
        return -1;
    memcpy(PyByteArray_AS_STRING(out) + old, o->p, (size_t)o->len);
    return 0;
}

int
kd_offsets_gap(kd_offsets *f, int64_t offset)
{
    PyObject *pair = Py_BuildValue("(LL)", (long long)f->prev, (long long)offset);
    if (pair == NULL || PyList_Append(f->gaps, pair) < 0) {
        Py_XDECREF(pair);
        return -1;
    }
    Py_DECREF(pair);
    return 0;
}

int
kd_run_write(kd_run *r, kd_out *o, kd_offsets *f, Py_ssize_t max_batches, Py_ssize_t max_out, char sep,
             kd_batch_writer write, void *ctx)
{
    int rc = 1;
    kd_records it;
    for (Py_ssize_t n = 0; n < max_batches && o->len < max_out && kd_run_next(r, &it); n++) {
        Py_ssize_t mark = o->len;
        kd_offsets_mark before = kd_offsets_here(f);
        if (n && sep) {
            if ((rc = kd_out_reserve(o, 1)) < 0)
                break;
            o->p[o->len++] = sep;
        }
        rc = write(o, r->v, &it, f, ctx);
        if (rc <= 0) {          /* not ours after all (a gap included: the caller's report sees it) */
            o->len = mark;
            kd_offsets_undo(f, &before);
            break;
        }
        r->pos += (Py_ssize_t)r->v[BF_SIZE];
    }
    return rc < 0 ? -1 : 1;
}
