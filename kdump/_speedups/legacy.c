/* decode_legacy_set: the twin of the inner-message loop of kdump/format/legacy.py */

#include "speedups.h"

/*
 * The inner message set of a decompressed v0/v1 wrapper as Records: legacy.py's
 * _inner_messages after its decompress() call, check for check. Any malformation, and
 * anything Python would turn into a big int, gives NULL with no exception set, and the
 * Python code reruns to raise its precise error. A bad inner CRC is not a malformation:
 * it is reported in the record's crc_valid, as Python does.
 */

#define LEGACY_OVERHEAD_V0 14
#define LEGACY_OVERHEAD_V1 22

/* A key or value: int32 length (-1: null), then the bytes, all before ``end``. Its start
 * goes to *start and *q moves past it; -1 if malformed. */
static inline int
read_bytes_field(const unsigned char *d, Py_ssize_t *q, Py_ssize_t end, int32_t *len, Py_ssize_t *start)
{
    if (end - *q < 4)
        return -1;
    *len = (int32_t)be32(d + *q);
    *q += 4;
    if (*len < -1 || (*len >= 0 && *len > end - *q))
        return -1;
    *start = *q;
    if (*len > 0)
        *q += *len;
    return 0;
}

/* The checks of one inner message d[mstart:mend] (of at least LEGACY_OVERHEAD_V0 bytes) that
 * legacy.py's Message and _entries make: 0 if it is well-formed and uncompressed, else -1. */
static int
message_ok(const unsigned char *d, Py_ssize_t mstart, Py_ssize_t mend)
{
    const unsigned char *m = d + mstart;
    int magic = (int8_t)m[4], attributes = (int8_t)m[5];
    if (magic != 0 && magic != 1)
        return -1;
    if (magic == 1 && mend - mstart < LEGACY_OVERHEAD_V1)
        return -1;
    if (attributes & COMPRESSION_MASK)  /* inner messages must not be compressed */
        return -1;
    Py_ssize_t q = mstart + 6 + (magic == 1 ? 8 : 0), kstart, vstart;
    int32_t klen, vlen;
    if (read_bytes_field(d, &q, mend, &klen, &kstart) < 0 || read_bytes_field(d, &q, mend, &vlen, &vstart) < 0
        || q != mend)
        return -1;
    return 0;
}

/*
 * The entries of an inner set wholly inside d[start:end) from start on (a window of a set
 * decompressed as a stream), at most max_n of them, each checked as legacy.py's Message and
 * _entries check it: their number, where the next starts, and their first and last inner
 * offsets. Stops, without error, before an entry that does not lie wholly in the window; -1
 * if a whole one (or a header's size) is malformed. The one framing of an inner set.
 */
static int
legacy_entries(const unsigned char *d, Py_ssize_t start, Py_ssize_t end, Py_ssize_t max_n, Py_ssize_t *next,
               Py_ssize_t *count, int64_t *first, int64_t *last)
{
    Py_ssize_t p = start, n = 0;
    while (n < max_n && end - p >= LOG_OVERHEAD) {
        int64_t size = (int32_t)be32(d + p + 8);
        if (size < LEGACY_OVERHEAD_V0)
            return -1;
        if (size > end - p - LOG_OVERHEAD)
            break;
        if (message_ok(d, p + LOG_OVERHEAD, p + LOG_OVERHEAD + (Py_ssize_t)size) < 0)
            return -1;
        if (n == 0)
            *first = (int64_t)be64(d + p);
        *last = (int64_t)be64(d + p);
        p += LOG_OVERHEAD + (Py_ssize_t)size;
        n++;
    }
    *next = p;
    *count = n;
    return 0;
}

/* Whether base + the inner offset of each of the n entries from d[p] on stays in int64. */
static int
offsets_fit(const unsigned char *d, Py_ssize_t p, Py_ssize_t n, int64_t base)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t offset;
        if (add_overflows(base, (int64_t)be64(d + p), &offset))
            return 0;
        p += LOG_OVERHEAD + (Py_ssize_t)(int32_t)be32(d + p + 8);
    }
    return 1;
}

/*
 * The whole inner set checked as decode_legacy (below) checks it, without making anything:
 * 0 with its message count and the base its inner offsets are added to, -1 if malformed
 * (or beyond int64). kd_legacy_next then reads the messages one after another.
 */
int
kd_legacy_check(const unsigned char *d, Py_ssize_t end, int64_t wrapper_offset, int wrapper_magic, int64_t *base_out,
                Py_ssize_t *count)
{
    Py_ssize_t next, n;
    int64_t first_inner = 0, last_inner = 0;
    if (legacy_entries(d, 0, end, PY_SSIZE_T_MAX, &next, &n, &first_inner, &last_inner) < 0 || next != end || n == 0)
        return -1;
    int64_t base = 0;                  /* v0 inner offsets are absolute */
    if (wrapper_magic >= 1 && wrapper_offset != 0) {    /* librdkafka's 0 means base 0 */
        /* v1 inner offsets are relative to the last one */
        if (wrapper_offset < last_inner || sub_overflows(wrapper_offset, last_inner, &base))
            return -1;                  /* (beyond int64: Python's big ints decide) */
    }
    if (!offsets_fit(d, 0, n, base))
        return -1;
    *base_out = base;
    *count = n;
    return 0;
}

/* The message at d[*p] of a set kd_legacy_check passed, as its Record would hold it
 * (log_append_ts: the wrapper's LogAppendTime, or NULL); *p moves past it. */
void
kd_legacy_next(const unsigned char *d, Py_ssize_t *p, int64_t base, const int64_t *log_append_ts, kd_record *r)
{
    int64_t inner_offset = (int64_t)be64(d + *p);
    Py_ssize_t mstart = *p + LOG_OVERHEAD, mend = mstart + (Py_ssize_t)(int32_t)be32(d + *p + 8);
    *p = mend;
    const unsigned char *m = d + mstart;
    int attributes = (int8_t)m[5];
    r->magic = (int8_t)m[4];
    r->crc = be32(m);
    r->crc_ok = crc32_ieee(m + 4, (size_t)(mend - mstart - 4)) == (uint32_t)r->crc;
    r->offset = base + inner_offset;
    r->sequence = -1;
    Py_ssize_t q = mstart + 6;
    r->timestamp = -1;
    r->ts_type = -1;
    if (r->magic == 1) {
        r->timestamp = (int64_t)be64(d + q);
        r->ts_type = (attributes & TIMESTAMP_TYPE_MASK) ? 1 : 0;
        q += 8;
    }
    if (log_append_ts != NULL) {
        r->timestamp = *log_append_ts;
        r->ts_type = 1;
    }
    Py_ssize_t kstart = 0, vstart = 0;
    int32_t klen = -1, vlen = -1;
    read_bytes_field(d, &q, mend, &klen, &kstart);
    read_bytes_field(d, &q, mend, &vlen, &vstart);
    r->key = klen >= 0 ? d + kstart : NULL;
    r->value = vlen >= 0 ? d + vstart : NULL;
    r->klen = klen < 0 ? 0 : klen;
    r->vlen = vlen < 0 ? 0 : vlen;
    r->hcount = r->hbytes = 0;
    r->headers = NULL;
    r->header_pairs = NULL;
}

/* The Record of a message kd_legacy_next read (log_append_ts: the wrapper's LogAppendTime, or
 * NULL; ts_types: the ints -1, 0 and 1). */
static PyObject *
new_record(const kd_record *r, PyObject *log_append_ts, PyObject *const *ts_types)
{
    PyObject *items[RECORD_FIELDS];
    items[RF_OFFSET] = PyLong_FromLongLong(r->offset);
    if (log_append_ts != NULL) {
        items[RF_TIMESTAMP] = Py_NewRef(log_append_ts);
        items[RF_TIMESTAMP_TYPE] = Py_NewRef(ts_types[2]);
    } else {
        items[RF_TIMESTAMP] = PyLong_FromLongLong(r->timestamp);
        items[RF_TIMESTAMP_TYPE] = Py_NewRef(ts_types[r->ts_type + 1]);
    }
    items[RF_KEY] = r->key != NULL ? PyBytes_FromStringAndSize((const char *)r->key, r->klen) : Py_NewRef(Py_None);
    items[RF_VALUE] = r->value != NULL ? PyBytes_FromStringAndSize((const char *)r->value, r->vlen)
                                       : Py_NewRef(Py_None);
    items[RF_HEADERS] = Py_NewRef(empty_tuple);
    items[RF_SEQUENCE] = PyLong_FromLong(-1);
    items[RF_CONTROL] = Py_NewRef(Py_None);
    items[RF_MAGIC] = PyLong_FromLong(r->magic);
    items[RF_CRC] = PyLong_FromLongLong(r->crc);
    items[RF_CRC_VALID] = Py_NewRef(r->crc_ok ? Py_True : Py_False);
    return new_struct(RecordType, items, RECORD_FIELDS);
}

/* The list of the Records of the ``n`` messages from d[p] on (kd_legacy_next's), their
 * offsets base + the inner offset; NULL with no exception set on any failure (the Python
 * decoder reruns and says what is wrong, memory errors included). */
static PyObject *
records_from(const unsigned char *d, Py_ssize_t p, Py_ssize_t n, int64_t base, PyObject *log_append_ts)
{
    PyObject *list = PyList_New(n), *ts_types[3] = {NULL, NULL, NULL};       /* -1, 0, 1 */
    if (list == NULL)
        goto error;
    for (int i = 0; i < 3; i++) {
        ts_types[i] = PyLong_FromLong(i - 1);
        if (ts_types[i] == NULL)
            goto error;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        kd_record r;
        kd_legacy_next(d, &p, base, NULL, &r);
        PyObject *rec = new_record(&r, log_append_ts, ts_types);
        if (rec == NULL)
            goto error;
        PyList_SET_ITEM(list, i, rec);
    }
    for (int i = 0; i < 3; i++)
        Py_DECREF(ts_types[i]);
    return list;

error:
    for (int i = 0; i < 3; i++)
        Py_XDECREF(ts_types[i]);
    Py_XDECREF(list);
    PyErr_Clear();
    return NULL;
}

static PyObject *
decode_legacy(const unsigned char *d, Py_ssize_t end, int64_t wrapper_offset, int wrapper_magic,
              PyObject *log_append_ts)
{
    int64_t base;
    Py_ssize_t n;
    if (kd_legacy_check(d, end, wrapper_offset, wrapper_magic, &base, &n) < 0)
        return NULL;
    return records_from(d, 0, n, base, log_append_ts);
}

/* The wrapper's offset and magic (0 or 1) as the inner-set functions take them; -1 (no
 * exception set) for anything else. */
static int
wrapper_args(PyObject *offset, PyObject *magic, int64_t *wrapper_offset, int64_t *wrapper_magic)
{
    return as_int64(offset, wrapper_offset) < 0 || as_int64(magic, wrapper_magic) < 0 || *wrapper_magic < 0 ||
                   *wrapper_magic > 1 ? -1 : 0;
}

/* legacy_set_span(data, wrapper_offset, wrapper_magic) -> (first_offset, count) | None:
 * what decode_legacy_set's list would say of its records, without making them. */
PyObject *
kd_legacy_set_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    Py_buffer view;
    PyObject *offset, *magic;
    int rc = kd_args(args, nargs, "legacy_set_span(data, wrapper_offset, wrapper_magic)", "yOO", &view, &offset,
                     &magic);
    int64_t wrapper_offset, wrapper_magic, base, first = 0;
    Py_ssize_t n;
    if (rc < 0)
        return NULL;
    if (rc == 0 && wrapper_args(offset, magic, &wrapper_offset, &wrapper_magic) == 0) {
        const unsigned char *d = (const unsigned char *)view.buf;
        rc = kd_legacy_check(d, view.len, wrapper_offset, (int)wrapper_magic, &base, &n);
        if (rc == 0)
            first = base + (int64_t)be64(d);
    } else {
        rc = -1;
    }
    PyBuffer_Release(&view);
    if (rc < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(Ln)", (long long)first, n);
}

PyObject *
kd_decode_legacy_set(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    Py_buffer view;
    PyObject *offset, *magic, *lat, *result = NULL;
    int64_t wrapper_offset, wrapper_magic;
    int rc = kd_initialised(RecordType);
    if (rc == 0)
        rc = kd_args(args, nargs, "decode_legacy_set(data, wrapper_offset, wrapper_magic, log_append_time)", "yOOO",
                     &view, &offset, &magic, &lat);
    if (rc < 0)
        return NULL;
    if (rc == 0 && wrapper_args(offset, magic, &wrapper_offset, &wrapper_magic) == 0 && kd_lat_arg(&lat) == 0)
        result = decode_legacy((const unsigned char *)view.buf, view.len, wrapper_offset, (int)wrapper_magic, lat);
    PyBuffer_Release(&view);
    if (result == NULL)
        Py_RETURN_NONE;
    return result;
}


/* data, start and end of the window functions: -1 (no exception set) when they are not a
 * window of a flat buffer; otherwise the buffer is held. */
static int
window_args(PyObject *const *args, Py_ssize_t nargs, const char *usage, const char *format, Py_buffer *view,
            Py_ssize_t *start, Py_ssize_t *end, PyObject **extra)
{
    PyObject *start_o, *end_o;
    int rc = kd_args(args, nargs, usage, format, view, &start_o, &end_o, &extra[0], &extra[1], &extra[2]);
    if (rc != 0)
        return rc < 0 ? -2 : -1;
    *start = PyLong_AsSsize_t(start_o);
    *end = PyLong_AsSsize_t(end_o);
    if (PyErr_Occurred() || *start < 0 || *end > view->len || *start > *end) {
        PyErr_Clear();
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* legacy_scan(data, start, end) -> (next, count, first_inner, last_inner) | None: legacy.py's
 * _entries(data, start, end, final=False) without making anything (first and last None when
 * no entry lies wholly in the window). */
PyObject *
kd_legacy_scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    Py_buffer view;
    Py_ssize_t start, end, next, n;
    int64_t first = 0, last = 0;
    PyObject *none[3];
    int rc = window_args(args, nargs, "legacy_scan(data, start, end)", "yOO", &view, &start, &end, none);
    if (rc == -2)
        return NULL;
    if (rc < 0)
        Py_RETURN_NONE;
    rc = legacy_entries((const unsigned char *)view.buf, start, end, PY_SSIZE_T_MAX, &next, &n, &first, &last);
    PyBuffer_Release(&view);
    if (rc < 0)
        Py_RETURN_NONE;
    if (n == 0)
        return Py_BuildValue("(nnOO)", next, n, Py_None, Py_None);
    return Py_BuildValue("(nnLL)", next, n, (long long)first, (long long)last);
}

/* legacy_decode_span(data, start, end, base, take, log_append_time) -> (list of Record, next) | None:
 * the Records of at most ``take`` entries wholly inside data[start:end), their offsets base + the
 * inner offset (legacy_stream.py's decode_span); None if one is malformed or its offset leaves
 * int64 (Python's big ints decide). */
PyObject *
kd_legacy_decode_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    Py_buffer view;
    Py_ssize_t start, end, next, n;
    int64_t base, take, first = 0, last = 0;
    PyObject *extra[3];     /* base, take, log_append_time */
    if (kd_initialised(RecordType) < 0)
        return NULL;
    int rc = window_args(args, nargs, "legacy_decode_span(data, start, end, base, take, log_append_time)", "yOOOOO",
                         &view, &start, &end, extra);
    if (rc == -2)
        return NULL;
    if (rc < 0)
        Py_RETURN_NONE;
    PyObject *lat = extra[2];
    if (as_int64(extra[0], &base) < 0 || as_int64(extra[1], &take) < 0 || take < 0 || kd_lat_arg(&lat) < 0)
        goto fail;
    const unsigned char *d = (const unsigned char *)view.buf;
    PyObject *list = NULL;
    if (legacy_entries(d, start, end, (Py_ssize_t)(take < PY_SSIZE_T_MAX ? take : PY_SSIZE_T_MAX), &next, &n,
                       &first, &last) < 0)
        goto fail;
    if (!offsets_fit(d, start, n, base))
        goto fail;
    list = records_from(d, start, n, base, lat);
    if (list == NULL)
        goto fail;
    PyBuffer_Release(&view);
    PyObject *result = Py_BuildValue("(Nn)", list, next);
    if (result == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return result;

fail:
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}
