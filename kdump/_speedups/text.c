/* text_item: the twin of TextDump.item's lines in kdump/render/text.py (item_lines:
 * batch_line, record_line; check/gaps.py follow) with the plain payload views of
 * kdump/decoders/views.py (utf8 as kdump/format/javautf8.py decodes it, in javautf8.c;
 * hex, base64, int, long; escaped or not).
 *
 * It appends one batch's lines, each ended by "\n", as UTF-8 to a bytearray, and follows
 * the record offsets as kdump.check.gaps.follow does. It returns None, leaving the
 * bytearray and the gap list as they were, for anything it does not write: a control
 * record, a field that is not an exact int within int64 where Python formats an int, a
 * timestamp type without a name. The caller then takes the Python path.
 */

#include "speedups.h"

/* mode bits (kdump/render/text.py C_MODE_*) */
#define M_METADATA 1
#define M_DATA 2
#define M_ESCAPE 4
#define M_RECORDS_ONLY (1 << 12)     /* no batch line: a slice of a batch streamed in slices */
#define KIND_SHIFT_KEY 4
#define KIND_SHIFT_VALUE 8
#define KIND_MASK 7
enum { K_UTF8 = 0, K_HEX = 1, K_BASE64 = 2, K_INT = 3, K_LONG = 4 };

static const char hexd[] = "0123456789abcdef";
static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char *const codecs[8] = {"none", "gzip", "snappy", "lz4", "zstd",
                                      "unknown(5)", "unknown(6)", "unknown(7)"};

/* ------------------------------------------------------------------------------------ */
/* The output: a plain growing buffer, copied into the bytearray at the end              */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} tbuf;

static char *tbuf_mem = NULL;     /* kept between calls: one allocation for the run ... */
#define KEEP_BYTES ((Py_ssize_t)64 << 20)      /* ... unless a batch made it larger than this */
static Py_ssize_t tbuf_cap = 0;

static int
reserve(tbuf *o, Py_ssize_t extra)
{
    if (extra > PY_SSIZE_T_MAX / 2 - o->len)
        return -1;
    if (o->len + extra <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->len + extra)
        cap *= 2;
    char *p = PyMem_Realloc(o->p, (size_t)cap);
    if (p == NULL)
        return -1;
    o->p = p;
    o->cap = cap;
    return 0;
}

#define PUT(w, lit) (memcpy((w), (lit), sizeof(lit) - 1), (w) += sizeof(lit) - 1)

static inline char *
put_str(char *w, const char *s)
{
    size_t n = strlen(s);
    memcpy(w, s, n);
    return w + n;
}

static inline char *
put_i64(char *w, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *w++ = '-';
    while (n)
        *w++ = tmp[--n];
    return w;
}

/* Header keys: Java's decoding, never escaped (record_line joins them as they are). */
/* header keys are a client's names: escaped as keys and values are (text.py record_line) */
#define put_header_key(w, s, n, mode) put_java_utf8((w), (s), (n), (mode) & M_ESCAPE)

static char *
put_hex(char *w, const unsigned char *s, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        *w++ = hexd[s[i] >> 4];
        *w++ = hexd[s[i] & 15];
    }
    return w;
}

static char *
put_base64(char *w, const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        *w++ = b64[v >> 18];
        *w++ = b64[(v >> 12) & 63];
        *w++ = b64[(v >> 6) & 63];
        *w++ = b64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *w++ = b64[v >> 18];
        *w++ = b64[(v >> 12) & 63];
        *w++ = '=';
        *w++ = '=';
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8);
        *w++ = b64[v >> 18];
        *w++ = b64[(v >> 12) & 63];
        *w++ = b64[(v >> 6) & 63];
        *w++ = '=';
    }
    return w;
}

/* A key or value as PayloadView._one_text shows it (IntegerDecoder and LongDecoder: the
 * first 4 or 8 bytes, big-endian; fewer is kdump's "<decode failed: ...>"). */
static char *
put_payload(char *w, const unsigned char *s, Py_ssize_t n, int kind, int escape)
{
    switch (kind) {
    case K_HEX:
        return put_hex(w, s, n);
    case K_BASE64:
        return put_base64(w, s, n);
    case K_INT:
    case K_LONG: {
        int size = kind == K_INT ? 4 : 8;
        if (n < size) {
            w = put_str(w, kind == K_INT ? "<decode failed: int decoder needs 4 bytes, got "
                                         : "<decode failed: long decoder needs 8 bytes, got ");
            w = put_i64(w, n);
            *w++ = '>';
            return w;
        }
        return put_i64(w, kind == K_INT ? (int64_t)(int32_t)be32(s) : (int64_t)be64(s));
    }
    default:
        return put_java_utf8(w, s, n, escape);
    }
}

/* Room a payload may take: 4 bytes a byte at worst (an escape), or a decoder's line. */
static inline Py_ssize_t
payload_room(Py_ssize_t n)
{
    return 4 * n + 80;
}

/* ------------------------------------------------------------------------------------ */
/* Fields                                                                                */
/* ------------------------------------------------------------------------------------ */

/* The text writers' common arguments: ``mode``'s payload kinds are ours, and ``gaps`` is None
 * or a list with ``last_obj`` the offset before it (into *last): 0, or -1 (not ours). */
static int
text_args(long mode, PyObject *gaps, PyObject *last_obj, int64_t *last)
{
    *last = 0;
    if (gaps != Py_None && (!PyList_Check(gaps) || exact_i64(last_obj, last) < 0))
        return -1;
    return ((mode >> KIND_SHIFT_KEY) & KIND_MASK) > K_LONG || ((mode >> KIND_SHIFT_VALUE) & KIND_MASK) > K_LONG ? -1 : 0;
}

/* f"{x}" of a field Python formats as it is: an exact int64 here, None as "None"; 0 or -1 (not ours). */
static inline int
put_field(char **w, PyObject *x)
{
    int64_t v;
    if (x == Py_None) {
        PUT(*w, "None");
        return 0;
    }
    if (exact_i64(x, &v) < 0)
        return -1;
    *w = put_i64(*w, v);
    return 0;
}

static const char *
ts_name(PyObject *x)
{
    int64_t t;
    if (exact_i64(x, &t) < 0)
        return NULL;
    return t == -1 ? "NoTimestampType" : t == 0 ? "CreateTime" : t == 1 ? "LogAppendTime" : NULL;
}

/* A v2 batch's line from its Batch fields ``v`` (v[BF_CRC_VALID] 0 or 1),
 * "\n" included; NULL where Python's int would pass int64 (the last sequence). Room: 600 bytes. */
static char *
put_v2_batch_line(char *w, const int64_t *v)
{
    int64_t base_offset = v[BF_BASE_OFFSET], last_offset = v[BF_LAST_OFFSET], base_seq = v[BF_BASE_SEQUENCE], attributes = v[BF_ATTRIBUTES];
    int64_t last_seq = -1;
    if (base_seq >= 0) {
        int64_t delta;
        if (sub_overflows(last_offset, base_offset, &delta) || sequence_at(base_seq, delta, &last_seq))
            return NULL;
    }
    PUT(w, "baseOffset: ");
    w = put_i64(w, base_offset);
    PUT(w, " lastOffset: ");
    w = put_i64(w, last_offset);
    PUT(w, " count: ");
    w = put_i64(w, v[BF_COUNT]);
    PUT(w, " baseSequence: ");
    w = put_i64(w, base_seq);
    PUT(w, " lastSequence: ");
    w = put_i64(w, last_seq);
    PUT(w, " producerId: ");
    w = put_i64(w, v[BF_PRODUCER_ID]);
    PUT(w, " producerEpoch: ");
    w = put_i64(w, v[BF_PRODUCER_EPOCH]);
    PUT(w, " partitionLeaderEpoch: ");
    w = put_i64(w, v[BF_PARTITION_LEADER_EPOCH]);
    w = put_str(w, attributes & TRANSACTIONAL_FLAG ? " isTransactional: true" : " isTransactional: false");
    w = put_str(w, attributes & CONTROL_FLAG ? " isControl: true" : " isControl: false");
    PUT(w, " deleteHorizonMs: ");
    if (attributes & DELETE_HORIZON_FLAG) {
        PUT(w, "OptionalLong[");
        w = put_i64(w, v[BF_BASE_TIMESTAMP]);
        *w++ = ']';
    } else {
        PUT(w, "OptionalLong.empty");
    }
    PUT(w, " position: ");
    w = put_i64(w, v[BF_POSITION]);
    w = put_str(w, attributes & TIMESTAMP_TYPE_MASK ? " LogAppendTime: " : " CreateTime: ");
    w = put_i64(w, v[BF_MAX_TIMESTAMP]);
    PUT(w, " size: ");
    w = put_i64(w, v[BF_SIZE]);
    PUT(w, " magic: 2 compresscodec: ");
    w = put_str(w, codecs[attributes & COMPRESSION_MASK]);
    PUT(w, " crc: ");
    w = put_i64(w, v[BF_CRC]);
    w = put_str(w, v[BF_CRC_VALID] ? " isvalid: true\n" : " isvalid: false\n");
    return w;
}

/* The batch line (text.batch_line); 0 written, -1 not ours. Room: 600 bytes. */
static int
put_batch_line(char **wp, PyObject *b)
{
    if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != BATCH_FIELDS)
        return -1;
    PyObject *const *f = ((PyTupleObject *)b)->ob_item;
    int64_t magic, attributes;
    PyObject *valid = f[BF_CRC_VALID];
    if (exact_i64(f[BF_MAGIC], &magic) < 0 || exact_i64(f[BF_ATTRIBUTES], &attributes) < 0 || (valid != Py_True && valid != Py_False))
        return -1;
    char *w = *wp;
    const char *valid_text = valid == Py_True ? "true" : "false";
    if (magic >= 2) {
        int64_t v[BATCH_FIELDS];
        if (batch_values(b, v) < 0)
            return -1;          /* a field None or not an int64: Python's line */
        w = put_v2_batch_line(w, v);
        if (w == NULL)
            return -1;
        *wp = w;
        return 0;
    } else {
        const char *ts = magic == 0 ? "NoTimestampType" : attributes & TIMESTAMP_TYPE_MASK ? "LogAppendTime" : "CreateTime";
        PUT(w, "offset: ");
        if (put_field(&w, f[BF_LAST_OFFSET]) < 0)
            return -1;
        PUT(w, " position: ");
        if (put_field(&w, f[BF_POSITION]) < 0)
            return -1;
        *w++ = ' ';
        w = put_str(w, ts);
        PUT(w, ": ");
        if (put_field(&w, f[BF_MAX_TIMESTAMP]) < 0)
            return -1;
        PUT(w, " size: ");
        if (put_field(&w, f[BF_SIZE]) < 0)
            return -1;
        PUT(w, " magic: ");
        w = put_i64(w, magic);
        PUT(w, " compresscodec: ");
        w = put_str(w, codecs[attributes & COMPRESSION_MASK]);
        PUT(w, " crc: ");
        if (put_field(&w, f[BF_CRC]) < 0)
            return -1;
        PUT(w, " isvalid: ");
        w = put_str(w, valid_text);
    }
    *w++ = '\n';
    *wp = w;
    return 0;
}

/* The room a record's line may take, or -1 if the record is not ours (a control record,
 * fields of unexpected types). */
static Py_ssize_t
record_room(PyObject *r)
{
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != RECORD_FIELDS)
        return -1;
    PyObject *const *f = ((PyTupleObject *)r)->ob_item;
    if (f[RF_CONTROL] != Py_None)
        return -1;              /* a control record: control_text is Python's */
    Py_ssize_t room = 400;
    for (int i = 3; i <= 4; i++) {
        if (f[i] == Py_None)
            continue;
        if (!PyBytes_CheckExact(f[i]))
            return -1;
        room += payload_room(PyBytes_GET_SIZE(f[i]));
    }
    PyObject *h = f[RF_HEADERS];
    if (!PyTuple_Check(h))
        return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(h); i++) {
        PyObject *pair = PyTuple_GET_ITEM(h, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyBytes_CheckExact(PyTuple_GET_ITEM(pair, 0)))
            return -1;
        room += 4 * PyBytes_GET_SIZE(PyTuple_GET_ITEM(pair, 0)) + 1;     /* escaped: 4 a byte */
    }
    return room;
}

/* The end of a record's line: its key and payload as PayloadView.text shows them (when
 * ``mode`` shows data; NULL: null, not shown), and "\n". */
static char *
put_data(char *w, const unsigned char *key, Py_ssize_t klen, const unsigned char *value, Py_ssize_t vlen, int mode)
{
    int escape = (mode & M_ESCAPE) != 0;
    if (mode & M_DATA) {
        const char *prefix = mode & M_METADATA ? " " : "| ";
        if (key != NULL) {
            w = put_str(w, prefix);
            PUT(w, "key: ");
            w = put_payload(w, key, klen, (mode >> KIND_SHIFT_KEY) & KIND_MASK, escape);
            prefix = " ";
        }
        if (value != NULL) {
            w = put_str(w, prefix);
            PUT(w, "payload: ");
            w = put_payload(w, value, vlen, (mode >> KIND_SHIFT_VALUE) & KIND_MASK, escape);
        }
    }
    *w++ = '\n';
    return w;
}

/* One record's line (text.record_line with PayloadView.text's key and payload); 0 or -1 (not ours). */
static int
put_record_line(char **wp, PyObject *r, int mode)
{
    PyObject *const *f = ((PyTupleObject *)r)->ob_item;
    char *w = *wp;
    if (mode & M_METADATA) {
        const char *ts = ts_name(f[RF_TIMESTAMP_TYPE]);
        int64_t magic;
        if (ts == NULL || exact_i64(f[RF_MAGIC], &magic) < 0)
            return -1;
        PUT(w, "| offset: ");
        if (put_field(&w, f[RF_OFFSET]) < 0)
            return -1;
        *w++ = ' ';
        w = put_str(w, ts);
        PUT(w, ": ");
        if (put_field(&w, f[RF_TIMESTAMP]) < 0)
            return -1;
        PUT(w, " keySize: ");
        w = put_i64(w, f[RF_KEY] == Py_None ? -1 : PyBytes_GET_SIZE(f[RF_KEY]));
        PUT(w, " valueSize: ");
        w = put_i64(w, f[RF_VALUE] == Py_None ? -1 : PyBytes_GET_SIZE(f[RF_VALUE]));
        if (magic >= 2) {
            PUT(w, " sequence: ");
            if (put_field(&w, f[RF_SEQUENCE]) < 0)
                return -1;
            PUT(w, " headerKeys: [");
            PyObject *h = f[RF_HEADERS];
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(h); i++) {
                PyObject *k = PyTuple_GET_ITEM(PyTuple_GET_ITEM(h, i), 0);
                if (i)
                    *w++ = ',';
                w = put_header_key(w, (const unsigned char *)PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k), mode);
            }
            *w++ = ']';
        } else {
            int valid = PyObject_IsTrue(f[RF_CRC_VALID]);
            if (valid < 0) {
                PyErr_Clear();
                return -1;
            }
            w = put_str(w, valid ? " isValid: true crc: " : " isValid: false crc: ");
            if (put_field(&w, f[RF_CRC]) < 0)
                return -1;
        }
    }
    *wp = put_data(w, f[RF_KEY] == Py_None ? NULL : (const unsigned char *)PyBytes_AS_STRING(f[RF_KEY]),
                   f[RF_KEY] == Py_None ? 0 : PyBytes_GET_SIZE(f[RF_KEY]),
                   f[RF_VALUE] == Py_None ? NULL : (const unsigned char *)PyBytes_AS_STRING(f[RF_VALUE]),
                   f[RF_VALUE] == Py_None ? 0 : PyBytes_GET_SIZE(f[RF_VALUE]), mode);
    return 0;
}

/* A v2 record read in place (kd_next_record) as put_record_line writes the record
 * decode_v2_records would make of it; ``ts``: its timestamp type's name. Room: record_room's. */
static char *
put_raw_record_line(char *w, const kd_record *r, const char *ts, int mode)
{
    if (mode & M_METADATA) {
        PUT(w, "| offset: ");
        w = put_i64(w, r->offset);
        *w++ = ' ';
        w = put_str(w, ts);
        PUT(w, ": ");
        w = put_i64(w, r->timestamp);
        PUT(w, " keySize: ");
        w = put_i64(w, r->key == NULL ? -1 : r->klen);
        PUT(w, " valueSize: ");
        w = put_i64(w, r->value == NULL ? -1 : r->vlen);
        PUT(w, " sequence: ");
        w = put_i64(w, r->sequence);
        PUT(w, " headerKeys: [");
        const unsigned char *h = r->headers;
        for (int32_t i = 0; i < r->hcount; i++) {
            const unsigned char *hk, *hv;
            int32_t hkl, hvl;
            kd_next_header(&h, r->headers_end, &hk, &hkl, &hv, &hvl);
            if (i)
                *w++ = ',';
            w = put_header_key(w, hk, hkl, mode);
        }
        *w++ = ']';
    }
    return put_data(w, r->key, r->klen, r->value, r->vlen, mode);
}

/* Offsets that do not follow one another (gaps.follow): (previous, offset) appended to
 * ``gaps``; 0, or -1 with an exception set. */
static int
follow(PyObject *records, int64_t *last, PyObject *gaps)
{
    Py_ssize_t n = PyList_GET_SIZE(records);
    int64_t prev = *last;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        int64_t offset;
        if (exact_i64(PyTuple_GET_ITEM(r, 0), &offset) < 0)
            return 1;           /* checked before: cannot happen */
        if (prev == INT64_MAX || offset != prev + 1) {
            PyObject *pair = Py_BuildValue("(LL)", (long long)prev, (long long)offset);
            if (pair == NULL || PyList_Append(gaps, pair) < 0) {
                Py_XDECREF(pair);
                return -1;
            }
            Py_DECREF(pair);
        }
        prev = offset;
    }
    *last = prev;
    return 0;
}

/* The lines of one batch drawn in ``w`` (room enough), then appended to ``out``, the offsets
 * followed into ``gaps`` (unless None): 1 done, 0 not ours (nothing changed), -1 error set. */
static int
render(char *w, PyObject *out, PyObject *batch, PyObject *records, Py_ssize_t n, int mode, PyObject *gaps,
       int64_t *last)
{
    char *start = w;
    if (!(mode & M_RECORDS_ONLY) && put_batch_line(&w, batch) < 0)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (put_record_line(&w, PyList_GET_ITEM(records, i), mode) < 0)
            return 0;
    }
    Py_ssize_t before = gaps == Py_None ? 0 : PyList_GET_SIZE(gaps);
    if (n && gaps != Py_None) {
        int rc = follow(records, last, gaps);
        if (rc != 0) {
            PyList_SetSlice(gaps, before, PyList_GET_SIZE(gaps), NULL);
            return rc < 0 ? -1 : 0;
        }
    }
    Py_ssize_t len = w - start, old = PyByteArray_GET_SIZE(out);
    if (PyByteArray_Resize(out, old + len) < 0) {
        if (gaps != Py_None)
            PyList_SetSlice(gaps, before, PyList_GET_SIZE(gaps), NULL);
        return -1;
    }
    memcpy(PyByteArray_AS_STRING(out) + old, start, (size_t)len);
    return 1;
}

PyObject *
kd_text_item(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6 || !PyByteArray_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "text_item(out: bytearray, batch, records, mode, last, gaps)");
        return NULL;
    }
    PyObject *out = args[0], *batch = args[1], *records = args[2], *gaps = args[5];
    long mode = PyLong_AsLong(args[3]);
    if (mode == -1 && PyErr_Occurred())
        return NULL;
    int64_t last;
    if (text_args(mode, gaps, args[4], &last) < 0 || (records != Py_None && !PyList_Check(records)))
        Py_RETURN_NONE;

    /* Sizes and types first: nothing is written unless every record is ours. */
    Py_ssize_t room = 640, n = records == Py_None ? 0 : PyList_GET_SIZE(records);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        Py_ssize_t rr = record_room(r);
        int64_t offset;
        if (rr < 0 || exact_i64(PyTuple_GET_ITEM(r, 0), &offset) < 0 || rr > PY_SSIZE_T_MAX / 4 - room)
            Py_RETURN_NONE;
        room += rr;
    }
    tbuf o = {tbuf_mem, 0, tbuf_cap};
    int rc = reserve(&o, room);
    tbuf_mem = o.p;
    tbuf_cap = o.cap;
    if (rc == 0)
        rc = render(o.p, out, batch, records, n, (int)mode, gaps, &last);
    else
        PyErr_NoMemory();
    if (tbuf_cap > KEEP_BYTES) {      /* a huge batch: do not keep its room for the rest of the run */
        PyMem_Free(tbuf_mem);
        tbuf_mem = NULL;
        tbuf_cap = 0;
    }
    if (rc < 0)
        return NULL;
    if (rc == 0)
        Py_RETURN_NONE;
    if (gaps == Py_None)
        return Py_NewRef(args[4]);
    return PyLong_FromLongLong(last);
}

/*
 * text_v2_run(out, buf, pos, end, max_batches, max_records, mode, last, gaps, max_out)
 *   -> (new_pos, first, last):
 * the lines text_item writes for the batches the walk and the reader would give it from
 * ``pos`` on, taken straight from the segment's bytes (no Batch or Record objects), as long
 * as each is a plain v2 batch (kd_plain_v2_at) whose records decode; it stops before the
 * first that is not (Python takes that one), at ``end``, after ``max_batches``, or once
 * ``max_out`` bytes are written. ``gaps`` a list: the record offsets followed into it from
 * ``last`` as text_item does; None: the run stops before a batch whose first record does not
 * follow the run's last (``first`` .. ``last`` then say all its offsets, None: no record).
 */
PyObject *
kd_text_v2_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 10 || !PyByteArray_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "text_v2_run(out: bytearray, buf, pos, end, max_batches, max_records, mode, last, gaps, max_out)");
        return NULL;
    }
    PyObject *out = args[0], *gaps = args[8];
    Py_ssize_t pos, end, max_batches, max_out;
    if (span_args(args + 1, &pos, &end, &max_batches) < 0)
        return NULL;
    long long max_records = PyLong_AsLongLong(args[5]);
    long mode = PyLong_AsLong(args[6]);
    max_out = PyLong_AsSsize_t(args[9]);
    if (PyErr_Occurred())
        return NULL;
    int64_t last;
    if (text_args(mode, gaps, args[7], &last) < 0)
        return Py_BuildValue("(nOO)", pos, Py_None, Py_None);
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return Py_BuildValue("(nOO)", pos, Py_None, Py_None);
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    if (end > view.len)
        end = view.len;
    tbuf o = {tbuf_mem, 0, tbuf_cap};
    int has_first = 0, failed = 0;
    int64_t first = 0, prev = last;
    Py_ssize_t gaps_before = gaps == Py_None ? 0 : PyList_GET_SIZE(gaps);
    for (Py_ssize_t n = 0; n < max_batches && o.len < max_out; n++) {
        int64_t v[BATCH_FIELDS];
        if (!kd_plain_v2_at(buf, pos, end, max_records, v))
            break;
        Py_ssize_t size = (Py_ssize_t)v[BF_SIZE];
        if (reserve(&o, 640 + (Py_ssize_t)v[BF_COUNT] * 600 + 4 * size) < 0) {
            failed = 1;
            break;
        }
        char *start = o.p + o.len, *w = put_v2_batch_line(start, v);
        const unsigned char *d = buf + pos + RECORD_BATCH_OVERHEAD;
        Py_ssize_t p = 0, section = size - RECORD_BATCH_OVERHEAD;
        const int64_t *lat = (v[BF_ATTRIBUTES] & TIMESTAMP_TYPE_MASK) ? &v[BF_MAX_TIMESTAMP] : NULL;
        const char *ts = lat ? "LogAppendTime" : "CreateTime";
        int64_t batch_prev = prev;
        int batch_has_first = has_first;
        Py_ssize_t batch_gaps = gaps == Py_None ? 0 : PyList_GET_SIZE(gaps);
        int ok = w != NULL;
        for (int64_t i = 0; ok && i < v[BF_COUNT]; i++) {
            kd_record r;
            if (kd_next_record(d, &p, section, v[BF_BASE_OFFSET], v[BF_BASE_TIMESTAMP], lat, v[BF_BASE_SEQUENCE], &r) < 0) {
                ok = 0;
                break;
            }
            if (gaps != Py_None) {
                if (prev == INT64_MAX || r.offset != prev + 1) {
                    PyObject *pair = Py_BuildValue("(LL)", (long long)prev, (long long)r.offset);
                    if (pair == NULL || PyList_Append(gaps, pair) < 0) {
                        Py_XDECREF(pair);
                        failed = 1;
                        ok = 0;
                        break;
                    }
                    Py_DECREF(pair);
                }
            } else if (has_first && (prev == INT64_MAX || r.offset != prev + 1)) {
                ok = 0;         /* a gap: the caller's report sees it */
                break;
            }
            if (!has_first) {
                has_first = 1;
                first = r.offset;
            }
            prev = r.offset;
            w = put_raw_record_line(w, &r, ts, (int)mode);
        }
        if (ok && p != section)
            ok = 0;
        if (!ok) {              /* not ours after all: as it was before this batch */
            prev = batch_prev;
            has_first = batch_has_first;
            if (gaps != Py_None)
                PyList_SetSlice(gaps, batch_gaps, PyList_GET_SIZE(gaps), NULL);
            break;
        }
        o.len = w - o.p;
        pos += size;
    }
    tbuf_mem = o.p;
    tbuf_cap = o.cap;
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (failed) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
    } else {
        Py_ssize_t old = PyByteArray_GET_SIZE(out);
        if (PyByteArray_Resize(out, old + o.len) == 0) {
            memcpy(PyByteArray_AS_STRING(out) + old, o.p, (size_t)o.len);
            if (has_first)
                result = Py_BuildValue("(nLL)", pos, (long long)first, (long long)prev);
            else
                result = Py_BuildValue("(nOO)", pos, Py_None, Py_None);
        }
    }
    if (result == NULL && gaps != Py_None)
        PyList_SetSlice(gaps, gaps_before, PyList_GET_SIZE(gaps), NULL);
    if (tbuf_cap > KEEP_BYTES) {
        PyMem_Free(tbuf_mem);
        tbuf_mem = NULL;
        tbuf_cap = 0;
    }
    return result;
}

/*
 * text_legacy_set(out, batch, data, log_append_ts, mode, last, gaps) -> (first, last) | None:
 * text_item's lines for a legacy wrapper ``batch`` and the records decode_legacy_set would
 * make of its decompressed inner set ``data`` (log_append_ts: the wrapper's LogAppendTime,
 * or None), written from the bytes without making them. ``gaps`` a list: the offsets
 * followed into it from ``last``; None: only where they follow one another. None, leaving
 * everything as it was, for anything else (the usual path then decodes and draws them).
 */
PyObject *
kd_text_legacy_set(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 7 || !PyByteArray_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "text_legacy_set(out: bytearray, batch, data, log_append_ts, mode, last, gaps)");
        return NULL;
    }
    PyObject *out = args[0], *batch = args[1], *gaps = args[6];
    long mode = PyLong_AsLong(args[4]);
    if (mode == -1 && PyErr_Occurred())
        return NULL;
    int64_t last, lat, wrapper_offset, magic;
    if (text_args(mode, gaps, args[5], &last) < 0 || legacy_wrapper_args(batch, args[3], &wrapper_offset, &magic, &lat) < 0)
        Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[2], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const unsigned char *d = (const unsigned char *)view.buf;
    int64_t base, first = 0, prev = last;
    Py_ssize_t n, before = gaps == Py_None ? 0 : PyList_GET_SIZE(gaps);
    PyObject *result = Py_None;
    tbuf o = {tbuf_mem, 0, tbuf_cap};
    if (kd_legacy_check(d, view.len, wrapper_offset, (int)magic, &base, &n) < 0)
        goto done;
    if (reserve(&o, 640 + n * 600 + 4 * view.len) < 0) {
        PyErr_NoMemory();
        result = NULL;
        goto done;
    }
    char *w = o.p;
    if (put_batch_line(&w, batch) < 0)
        goto done;
    const int64_t *lap = args[3] != Py_None ? &lat : NULL;
    Py_ssize_t p = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        kd_legacy_msg r;
        kd_legacy_next(d, &p, base, lap, &r);
        if (gaps != Py_None) {
            if (prev == INT64_MAX || r.offset != prev + 1) {
                PyObject *pair = Py_BuildValue("(LL)", (long long)prev, (long long)r.offset);
                if (pair == NULL || PyList_Append(gaps, pair) < 0) {
                    Py_XDECREF(pair);
                    result = NULL;
                    goto done;
                }
                Py_DECREF(pair);
            }
        } else if (i && (prev == INT64_MAX || r.offset != prev + 1)) {
            goto done;          /* a gap: the caller's report sees it in the records */
        }
        if (i == 0)
            first = r.offset;
        prev = r.offset;
        if (mode & M_METADATA) {
            const char *ts = r.ts_type == 1 ? "LogAppendTime" : r.ts_type == 0 ? "CreateTime" : "NoTimestampType";
            PUT(w, "| offset: ");
            w = put_i64(w, r.offset);
            *w++ = ' ';
            w = put_str(w, ts);
            PUT(w, ": ");
            w = put_i64(w, r.timestamp);
            PUT(w, " keySize: ");
            w = put_i64(w, r.key == NULL ? -1 : r.klen);
            PUT(w, " valueSize: ");
            w = put_i64(w, r.value == NULL ? -1 : r.vlen);
            w = put_str(w, r.crc_ok ? " isValid: true crc: " : " isValid: false crc: ");
            w = put_i64(w, r.crc);
        }
        w = put_data(w, r.key, r.klen, r.value, r.vlen, (int)mode);
    }
    Py_ssize_t len = w - o.p, old = PyByteArray_GET_SIZE(out);
    if (PyByteArray_Resize(out, old + len) < 0) {
        result = NULL;
        goto done;
    }
    memcpy(PyByteArray_AS_STRING(out) + old, o.p, (size_t)len);
    result = Py_BuildValue("(LL)", (long long)first, (long long)prev);
done:
    PyBuffer_Release(&view);
    tbuf_mem = o.p;
    tbuf_cap = o.cap;
    if (tbuf_cap > KEEP_BYTES) {
        PyMem_Free(tbuf_mem);
        tbuf_mem = NULL;
        tbuf_cap = 0;
    }
    if (result == Py_None || result == NULL) {
        if (gaps != Py_None)
            PyList_SetSlice(gaps, before, PyList_GET_SIZE(gaps), NULL);
        if (result == Py_None)
            Py_RETURN_NONE;
    }
    return result;
}
