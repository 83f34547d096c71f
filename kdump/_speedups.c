/*
 * kdump._speedups: optional C versions of kdump's three hot loops.
 *
 *   scan_v2(buf, pos, end, max_batches) -> (list[Batch], new_pos)
 *   decode_v2_records(data, base_offset, base_timestamp, log_append_time,
 *                     base_sequence, count) -> list[Record] | None
 *   crc32c(data, value=0) -> int
 *   init(Batch, Record)
 *
 * The pure-Python code in kdump/format/ is the reference: these functions must produce
 * exactly what it produces, and hand everything unusual back to it. scan_v2 stops,
 * without consuming, at the first entry it does not like (legacy magic, bad sizes,
 * torn tails, values Python would turn into big ints); decode_v2_records returns None
 * on any malformation so that the Python decoder reruns and raises its precise error.
 * Every read is bounds-checked against the buffer length.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* SSE4.2 CRC-32C on x86-64 with GCC or clang (checked at run time); -DKDUMP_NO_HW_CRC
 * builds the portable table-driven code only, as on every other platform. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(KDUMP_NO_HW_CRC)
#  define KD_HAVE_SSE42 1
#  include <nmmintrin.h>
#else
#  define KD_HAVE_SSE42 0
#endif

/* Release the GIL around CRCs of at least this many bytes. */
#define KD_NOGIL_BYTES ((Py_ssize_t)1 << 16)

/* ------------------------------------------------------------------------------------ */
/* Small helpers                                                                         */
/* ------------------------------------------------------------------------------------ */

static inline uint32_t
be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline uint64_t
be64(const unsigned char *p)
{
    return ((uint64_t)be32(p) << 32) | (uint64_t)be32(p + 4);
}

static inline int16_t
be16s(const unsigned char *p)
{
    return (int16_t)(uint16_t)(((unsigned)p[0] << 8) | (unsigned)p[1]);
}

static inline uint64_t
le64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = ((uint64_t)p[0]) | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) | ((uint64_t)p[3] << 24) |
        ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) | ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
#endif
    return v;
}

/* a + b in int64; returns nonzero on overflow (Python would make a big int: not ours). */
static inline int
add_overflows(int64_t a, int64_t b, int64_t *out)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_add_overflow(a, b, out);
#else
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
        return 1;
    *out = a + b;
    return 0;
#endif
}

/* ------------------------------------------------------------------------------------ */
/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78)                                 */
/*                                                                                       */
/* All the internal functions work on the raw register: callers invert on entry and     */
/* exit. Software: slicing-by-8 tables. SSE4.2: three independent streams over adjacent   */
/* blocks (the crc32 instruction has a latency of ~3 cycles but a throughput of 1), then  */
/* the first two are moved past the following blocks with a "append N zero bytes"         */
/* operator, which is linear and so tabulated per byte of the register.                   */
/* ------------------------------------------------------------------------------------ */

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_tab[8][256];

static void
crc_tables_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_tab[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = crc_tab[0][n];
        for (int t = 1; t < 8; t++) {
            c = crc_tab[0][c & 0xFF] ^ (c >> 8);
            crc_tab[t][n] = c;
        }
    }
}

static uint32_t
crc_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = crc_tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w = le64(p) ^ (uint64_t)crc;
        uint32_t lo = (uint32_t)w, hi = (uint32_t)(w >> 32);
        crc = crc_tab[7][lo & 0xFF] ^ crc_tab[6][(lo >> 8) & 0xFF] ^
              crc_tab[5][(lo >> 16) & 0xFF] ^ crc_tab[4][lo >> 24] ^
              crc_tab[3][hi & 0xFF] ^ crc_tab[2][(hi >> 8) & 0xFF] ^
              crc_tab[1][(hi >> 16) & 0xFF] ^ crc_tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = crc_tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if KD_HAVE_SSE42

#define CRC_LONG 8192      /* block of the three-stream loop for big buffers */
#define CRC_SHORT 256      /* ... and for medium ones */

/* shift_long[k][b]: the register b << 8k after CRC_LONG zero bytes; same for short. */
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];

/* A GF(2)-linear map on 32-bit registers, as the images of the 32 unit vectors. */
typedef struct { uint32_t col[32]; } gf2mat;

static uint32_t
gf2_apply(const gf2mat *m, uint32_t v)
{
    uint32_t r = 0;
    for (int i = 0; v; i++, v >>= 1)
        if (v & 1)
            r ^= m->col[i];
    return r;
}

/* out = a after b (apply b first). out may not alias a or b. */
static void
gf2_compose(gf2mat *out, const gf2mat *a, const gf2mat *b)
{
    for (int i = 0; i < 32; i++)
        out->col[i] = gf2_apply(a, b->col[i]);
}

static void
zeros_table(uint32_t tab[4][256], size_t nbytes)
{
    gf2mat power, result, tmp;
    /* one zero byte: register -> table[reg & 0xff] ^ (reg >> 8) */
    for (int i = 0; i < 32; i++) {
        uint32_t v = (uint32_t)1 << i;
        power.col[i] = crc_tab[0][v & 0xFF] ^ (v >> 8);
        result.col[i] = v;      /* identity */
    }
    while (nbytes) {
        if (nbytes & 1) {
            gf2_compose(&tmp, &power, &result);
            result = tmp;
        }
        nbytes >>= 1;
        if (nbytes) {
            gf2_compose(&tmp, &power, &power);
            power = tmp;
        }
    }
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            tab[k][b] = gf2_apply(&result, b << (8 * k));
}

static inline uint32_t
shift_by(const uint32_t tab[4][256], uint32_t crc)
{
    return tab[0][crc & 0xFF] ^ tab[1][(crc >> 8) & 0xFF] ^ tab[2][(crc >> 16) & 0xFF] ^ tab[3][crc >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t
crc_hw(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c0 = crc;
    while (n && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        n--;
    }
    while (n >= 3 * CRC_LONG) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *stop = p + CRC_LONG;
        do {
            uint64_t w0, w1, w2;
            memcpy(&w0, p, 8);
            memcpy(&w1, p + CRC_LONG, 8);
            memcpy(&w2, p + 2 * CRC_LONG, 8);
            c0 = _mm_crc32_u64(c0, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
            p += 8;
        } while (p < stop);
        c0 = shift_by(shift_long, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = shift_by(shift_long, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * CRC_LONG;
        n -= 3 * CRC_LONG;
    }
    while (n >= 3 * CRC_SHORT) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *stop = p + CRC_SHORT;
        do {
            uint64_t w0, w1, w2;
            memcpy(&w0, p, 8);
            memcpy(&w1, p + CRC_SHORT, 8);
            memcpy(&w2, p + 2 * CRC_SHORT, 8);
            c0 = _mm_crc32_u64(c0, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
            p += 8;
        } while (p < stop);
        c0 = shift_by(shift_short, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = shift_by(shift_short, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * CRC_SHORT;
        n -= 3 * CRC_SHORT;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c0 = _mm_crc32_u64(c0, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}

#endif /* KD_HAVE_SSE42 */

static uint32_t (*crc_raw)(uint32_t, const unsigned char *, size_t) = crc_sw;
static const char *crc_impl_name = "software";

static void
crc_init(void)
{
    crc_tables_init();
#if KD_HAVE_SSE42
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        zeros_table(shift_long, CRC_LONG);
        zeros_table(shift_short, CRC_SHORT);
        crc_raw = crc_hw;
        crc_impl_name = "sse4.2";
    }
#endif
}

static inline uint32_t
crc32c_value(uint32_t value, const unsigned char *p, size_t n)
{
    return ~crc_raw(~value, p, n);
}

/* ------------------------------------------------------------------------------------ */
/* The Batch and Record classes, and building their instances                            */
/* ------------------------------------------------------------------------------------ */

#define BATCH_FIELDS 15
#define RECORD_FIELDS 11

static PyTypeObject *BatchType = NULL;
static PyTypeObject *RecordType = NULL;
static PyObject *empty_tuple = NULL;
static PyObject *int_two = NULL;      /* the magic of every v2 record */

/*
 * An instance of the tuple subclass ``tp`` holding ``items`` (references stolen, also on
 * failure): what ``tuple.__new__(tp, items)`` builds, without the intermediate tuple.
 * Every item is an int, bool, bytes, None or a tuple of those, so the result can never
 * be part of a cycle: it is untracked at once, as the collector would do on its first
 * pass anyway.
 */
static PyObject *
new_struct(PyTypeObject *tp, PyObject **items, Py_ssize_t n)
{
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        if (items[i] == NULL) {
            for (Py_ssize_t j = 0; j < n; j++)
                Py_XDECREF(items[j]);
            return NULL;
        }
    }
#if PY_VERSION_HEX >= 0x030F0000 || defined(KDUMP_GENERIC_TUPLES)
    /* Unknown future tuple layout: go through tuple.__new__ itself. */
    PyObject *plain = PyTuple_New(n);
    if (plain == NULL) {
        for (i = 0; i < n; i++)
            Py_DECREF(items[i]);
        return NULL;
    }
    for (i = 0; i < n; i++)
        PyTuple_SET_ITEM(plain, i, items[i]);
    PyObject *args = PyTuple_Pack(1, plain);
    Py_DECREF(plain);
    if (args == NULL)
        return NULL;
    PyObject *obj = PyTuple_Type.tp_new(tp, args, NULL);
    Py_DECREF(args);
    return obj;
#else
    PyObject *obj = tp->tp_alloc(tp, n);
    if (obj == NULL) {
        for (i = 0; i < n; i++)
            Py_DECREF(items[i]);
        return NULL;
    }
#  if PY_VERSION_HEX >= 0x030E0000
    ((PyTupleObject *)obj)->ob_hash = -1;     /* 3.14 caches tuple hashes; -1 = not yet */
#  endif
    for (i = 0; i < n; i++)
        PyTuple_SET_ITEM(obj, i, items[i]);
    if (PyObject_GC_IsTracked(obj))
        PyObject_GC_UnTrack(obj);
    return obj;
#endif
}

static PyObject *
kd_init(PyObject *self, PyObject *args)
{
    PyObject *batch, *record;
    if (!PyArg_ParseTuple(args, "OO:init", &batch, &record))
        return NULL;
    Py_ssize_t want[2] = {BATCH_FIELDS, RECORD_FIELDS};
    PyObject *types[2] = {batch, record};
    for (int i = 0; i < 2; i++) {
        PyObject *t = types[i];
        if (!PyType_Check(t) || !PyType_IsSubtype((PyTypeObject *)t, &PyTuple_Type) ||
            ((PyTypeObject *)t)->tp_alloc == NULL) {
            PyErr_SetString(PyExc_TypeError, "init() wants two tuple subclasses (Batch, Record)");
            return NULL;
        }
        PyObject *fields = PyObject_GetAttrString(t, "_fields");
        Py_ssize_t nf = fields == NULL ? -1 : PyObject_Length(fields);
        Py_XDECREF(fields);
        if (nf != want[i]) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s is not a named tuple of %zd fields",
                         ((PyTypeObject *)t)->tp_name, want[i]);
            return NULL;
        }
    }
    Py_INCREF(batch);
    Py_INCREF(record);
    Py_XSETREF(BatchType, (PyTypeObject *)batch);
    Py_XSETREF(RecordType, (PyTypeObject *)record);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------ */
/* scan_v2                                                                               */
/* ------------------------------------------------------------------------------------ */

#define LOG_OVERHEAD 12
#define HEADER_UP_TO_MAGIC 17
#define RECORD_BATCH_OVERHEAD 61
#define ATTRIBUTES_OFFSET 21

static PyObject *
kd_scan_v2(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "scan_v2(buf, pos, end, max_batches)");
        return NULL;
    }
    if (BatchType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "kdump._speedups.init() was not called");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if (end == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t max_batches = PyLong_AsSsize_t(args[3]);
    if (max_batches == -1 && PyErr_Occurred())
        return NULL;

    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;

    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        /* Not a flat buffer: consume nothing, the Python walker decides what happens. */
        PyErr_Clear();
        goto done;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    if (end > view.len)
        end = view.len;

    Py_ssize_t n = 0;
    while (n < max_batches && pos >= 0 && end - pos > HEADER_UP_TO_MAGIC) {
        const unsigned char *h = buf + pos;
        if (h[16] != 2)
            break;
        int32_t length = (int32_t)be32(h + 8);
        if ((int64_t)length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD)
            break;
        if ((int64_t)length + LOG_OVERHEAD > (int64_t)(end - pos))
            break;
        Py_ssize_t size = (Py_ssize_t)length + LOG_OVERHEAD;
        /* From here the whole entry, header included, lies inside [pos, end). */
        int64_t base_offset = (int64_t)be64(h);
        int32_t last_delta = (int32_t)be32(h + 23);
        int64_t last_offset;
        if (add_overflows(base_offset, last_delta, &last_offset))
            break;    /* Python would make a big int: let it */
        int32_t epoch = (int32_t)be32(h + 12);
        uint32_t crc = be32(h + 17);
        int16_t attributes = be16s(h + 21);
        int64_t base_ts = (int64_t)be64(h + 27);
        int64_t max_ts = (int64_t)be64(h + 35);
        int64_t producer_id = (int64_t)be64(h + 43);
        int16_t producer_epoch = be16s(h + 51);
        int32_t base_sequence = (int32_t)be32(h + 53);
        int32_t count = (int32_t)be32(h + 57);

        const unsigned char *crc_start = h + ATTRIBUTES_OFFSET;
        size_t crc_len = (size_t)(size - ATTRIBUTES_OFFSET);
        uint32_t computed;
        if ((Py_ssize_t)crc_len >= KD_NOGIL_BYTES) {
            Py_BEGIN_ALLOW_THREADS
            computed = crc32c_value(0, crc_start, crc_len);
            Py_END_ALLOW_THREADS
        } else {
            computed = crc32c_value(0, crc_start, crc_len);
        }

        PyObject *items[BATCH_FIELDS];
        items[0] = PyLong_FromSsize_t(pos);
        items[1] = PyLong_FromLongLong(base_offset);
        /* equal values share one int object (one-record batches: both pairs) */
        items[2] = (last_delta == 0 && items[1] != NULL) ? Py_NewRef(items[1]) : PyLong_FromLongLong(last_offset);
        items[3] = PyLong_FromLong(count);
        items[4] = PyLong_FromSsize_t(size);
        items[5] = Py_NewRef(int_two);
        items[6] = PyLong_FromUnsignedLong(crc);
        items[7] = PyBool_FromLong(computed == crc);
        items[8] = PyLong_FromLong(attributes);
        items[9] = PyLong_FromLong(epoch);
        items[10] = PyLong_FromLongLong(base_ts);
        items[11] = (max_ts == base_ts && items[10] != NULL) ? Py_NewRef(items[10]) : PyLong_FromLongLong(max_ts);
        items[12] = PyLong_FromLongLong(producer_id);
        items[13] = PyLong_FromLong(producer_epoch);
        items[14] = PyLong_FromLong(base_sequence);
        PyObject *batch = new_struct(BatchType, items, BATCH_FIELDS);
        if (batch == NULL)
            goto fail;
        int rc = PyList_Append(list, batch);
        Py_DECREF(batch);
        if (rc < 0)
            goto fail;
        pos += size;
        n++;
    }
    PyBuffer_Release(&view);
done:;
    PyObject *pos_obj = PyLong_FromSsize_t(pos);
    if (pos_obj == NULL) {
        Py_DECREF(list);
        return NULL;
    }
    PyObject *result = PyTuple_New(2);
    if (result == NULL) {
        Py_DECREF(list);
        Py_DECREF(pos_obj);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, list);
    PyTuple_SET_ITEM(result, 1, pos_obj);
    return result;

fail:
    PyBuffer_Release(&view);
    Py_DECREF(list);
    return NULL;
}

/* ------------------------------------------------------------------------------------ */
/* decode_v2_records                                                                     */
/* ------------------------------------------------------------------------------------ */

/*
 * Zigzag varints exactly as kdump/format/varint.py read_varint: at most 5 bytes and the
 * raw value must fit in 32 bits (varint), at most 10 bytes (varlong). Reads stop at
 * ``end``. Return 0 on success, -1 where Python raises.
 */
static inline int
read_varint32(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, int32_t *out)
{
    Py_ssize_t p = *pos;
    if (p < end && d[p] < 0x80) {             /* the one-byte case */
        uint32_t r = d[p];
        *out = (int32_t)((r >> 1) ^ (0u - (r & 1)));
        *pos = p + 1;
        return 0;
    }
    uint64_t r = 0;
    for (int i = 0; i < 5; i++) {
        if (p + i >= end)
            return -1;
        unsigned b = d[p + i];
        r |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            if (r > 0xFFFFFFFFu)
                return -1;
            uint32_t u = (uint32_t)r;
            *out = (int32_t)((u >> 1) ^ (0u - (u & 1)));
            *pos = p + i + 1;
            return 0;
        }
    }
    return -1;
}

/* Varlong: 0 on success; 1 when Python accepts it but the value lies outside int64 (a raw
 * value of 64 bits or more: only the lowest bit of the tenth byte fits), ``*out`` then
 * holding junk; -1 where Python raises. */
static inline int
read_varint64(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, int64_t *out)
{
    Py_ssize_t p = *pos;
    if (p < end && d[p] < 0x80) {
        uint64_t r = d[p];
        *out = (int64_t)((r >> 1) ^ ((uint64_t)0 - (r & 1)));
        *pos = p + 1;
        return 0;
    }
    uint64_t r = 0;
    int big = 0;
    for (int i = 0; i < 10; i++) {
        if (p + i >= end)
            return -1;
        unsigned b = d[p + i];
        if (i < 9) {
            r |= (uint64_t)(b & 0x7F) << (7 * i);
        } else {
            r |= (uint64_t)(b & 1) << 63;
            big = (b & 0x7E) != 0;
        }
        if (b < 0x80) {
            *out = (int64_t)((r >> 1) ^ ((uint64_t)0 - (r & 1)));
            *pos = p + i + 1;
            return big;
        }
    }
    return -1;
}

/* An int64 from a Python int; 0 on success, -1 (no exception set) if not an int64. */
static int
as_int64(PyObject *o, int64_t *out)
{
    if (!PyLong_Check(o))
        return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

/* The records of ``d[0:end]``; NULL with no exception set means "malformed". */
static PyObject *
decode_records(const unsigned char *d, Py_ssize_t end, int64_t base_offset, int64_t base_ts,
               PyObject *log_append_ts, int64_t base_seq, int64_t count)
{
    if (count < 0 || count > end / 7)   /* every record takes 7 bytes or more */
        return NULL;
    PyObject *ts_type = PyLong_FromLong(log_append_ts != NULL ? 1 : 0);
    if (ts_type == NULL)
        return NULL;
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (list == NULL) {
        Py_DECREF(ts_type);
        return NULL;
    }
    Py_ssize_t p = 0;
    for (Py_ssize_t n = 0; n < (Py_ssize_t)count; n++) {
        int32_t length, off_delta, klen, vlen, hcount;
        int64_t ts_delta, offset, ts = 0, seq;
        if (read_varint32(d, &p, end, &length) < 0 || length < 6 || length > end - p)
            goto malformed;
        Py_ssize_t rend = p + length;
        p += 1;                                  /* attributes, unused */
        int ts_big = read_varint64(d, &p, rend, &ts_delta);
        if (ts_big < 0 || read_varint32(d, &p, rend, &off_delta) < 0)
            goto malformed;
        if (ts_big && log_append_ts == NULL)
            goto malformed;         /* a timestamp delta beyond int64: Python's big ints */
        if (add_overflows(base_offset, off_delta, &offset))
            goto malformed;
        if (log_append_ts == NULL && add_overflows(base_ts, ts_delta, &ts))
            goto malformed;
        if (base_seq >= 0) {
            if (add_overflows(base_seq, off_delta, &seq))
                goto malformed;
            seq &= 0x7FFFFFFF;
        } else {
            seq = -1;
        }
        /* key */
        const unsigned char *kp = NULL;
        if (read_varint32(d, &p, rend, &klen) < 0 || klen < -1 || (klen >= 0 && klen > rend - p))
            goto malformed;
        if (klen >= 0) {
            kp = d + p;
            p += klen;
        }
        /* value */
        const unsigned char *vp = NULL;
        if (read_varint32(d, &p, rend, &vlen) < 0 || vlen < -1 || (vlen >= 0 && vlen > rend - p))
            goto malformed;
        if (vlen >= 0) {
            vp = d + p;
            p += vlen;
        }
        /* headers */
        if (read_varint32(d, &p, rend, &hcount) < 0 || hcount < 0 || hcount > rend - p)
            goto malformed;
        PyObject *headers;
        if (hcount == 0) {
            headers = Py_NewRef(empty_tuple);
        } else {
            headers = PyTuple_New(hcount);
            if (headers == NULL)
                goto error;
            for (int32_t i = 0; i < hcount; i++) {
                int32_t hk, hv;
                if (read_varint32(d, &p, rend, &hk) < 0 || hk < 0 || hk > rend - p) {
                    Py_DECREF(headers);
                    goto malformed;
                }
                Py_ssize_t kstart = p;
                p += hk;
                if (read_varint32(d, &p, rend, &hv) < 0 || hv < -1 || (hv >= 0 && hv > rend - p)) {
                    Py_DECREF(headers);
                    goto malformed;
                }
                PyObject *pair = PyTuple_New(2);
                if (pair == NULL) {
                    Py_DECREF(headers);
                    goto error;
                }
                PyTuple_SET_ITEM(headers, i, pair);
                PyObject *hkey = PyBytes_FromStringAndSize((const char *)d + kstart, hk);
                if (hkey == NULL) {
                    Py_DECREF(headers);
                    goto error;
                }
                PyTuple_SET_ITEM(pair, 0, hkey);
                PyObject *hval;
                if (hv < 0) {
                    hval = Py_NewRef(Py_None);
                } else {
                    hval = PyBytes_FromStringAndSize((const char *)d + p, hv);
                    p += hv;
                    if (hval == NULL) {
                        Py_DECREF(headers);
                        goto error;
                    }
                }
                PyTuple_SET_ITEM(pair, 1, hval);
                PyObject_GC_UnTrack(pair);
            }
            PyObject_GC_UnTrack(headers);
        }
        if (p != rend) {
            Py_DECREF(headers);
            goto malformed;
        }
        PyObject *items[RECORD_FIELDS];
        items[0] = PyLong_FromLongLong(offset);
        items[1] = log_append_ts != NULL ? Py_NewRef(log_append_ts) : PyLong_FromLongLong(ts);
        items[2] = Py_NewRef(ts_type);
        items[3] = kp != NULL ? PyBytes_FromStringAndSize((const char *)kp, klen) : Py_NewRef(Py_None);
        items[4] = vp != NULL ? PyBytes_FromStringAndSize((const char *)vp, vlen) : Py_NewRef(Py_None);
        items[5] = headers;
        items[6] = PyLong_FromLongLong(seq);
        items[7] = Py_NewRef(Py_None);
        items[8] = Py_NewRef(int_two);
        items[9] = Py_NewRef(Py_None);
        items[10] = Py_NewRef(Py_None);
        PyObject *rec = new_struct(RecordType, items, RECORD_FIELDS);
        if (rec == NULL)
            goto error;
        PyList_SET_ITEM(list, n, rec);
    }
    if (p != end)
        goto malformed;
    Py_DECREF(ts_type);
    return list;

malformed:
    Py_DECREF(ts_type);
    Py_DECREF(list);
    return NULL;
error:
    Py_DECREF(ts_type);
    Py_DECREF(list);
    PyErr_Clear();          /* memory errors included: the Python decoder reruns */
    return NULL;
}

static PyObject *
kd_decode_v2_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "decode_v2_records(data, base_offset, base_timestamp, log_append_time, "
                        "base_sequence, count)");
        return NULL;
    }
    if (RecordType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "kdump._speedups.init() was not called");
        return NULL;
    }
    int64_t base_offset, base_ts, base_seq, count;
    PyObject *lat = args[3];
    if (as_int64(args[1], &base_offset) < 0 || as_int64(args[2], &base_ts) < 0 ||
        as_int64(args[4], &base_seq) < 0 || as_int64(args[5], &count) < 0)
        Py_RETURN_NONE;
    if (lat == Py_None) {
        lat = NULL;
    } else if (!PyLong_Check(lat)) {
        Py_RETURN_NONE;
    }

    PyObject *data = args[0];
    PyObject *result;
    if (PyBytes_Check(data)) {
        result = decode_records((const unsigned char *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data),
                                base_offset, base_ts, lat, base_seq, count);
    } else {
        Py_buffer view;
        if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        result = decode_records((const unsigned char *)view.buf, view.len,
                                base_offset, base_ts, lat, base_seq, count);
        PyBuffer_Release(&view);
    }
    if (result == NULL)
        Py_RETURN_NONE;
    return result;
}

/* ------------------------------------------------------------------------------------ */
/* crc32c                                                                                */
/* ------------------------------------------------------------------------------------ */

static PyObject *
kd_crc32c(PyObject *self, PyObject *args)
{
    Py_buffer view;
    PyObject *value_obj = NULL;
    if (!PyArg_ParseTuple(args, "y*|O:crc32c", &view, &value_obj))
        return NULL;
    uint32_t value = 0;
    if (value_obj != NULL) {
        if (!PyLong_Check(value_obj)) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_TypeError, "crc32c() value must be an int");
            return NULL;
        }
        value = (uint32_t)(PyLong_AsUnsignedLongLongMask(value_obj) & 0xFFFFFFFFu);
        if (PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    uint32_t crc;
    if (view.len >= KD_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        crc = crc32c_value(value, (const unsigned char *)view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = crc32c_value(value, (const unsigned char *)view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

/* The table-driven implementation whatever the CPU, so tests can compare both. */
static PyObject *
kd_crc32c_sw(PyObject *self, PyObject *args)
{
    Py_buffer view;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I:_crc32c_sw", &view, &value))
        return NULL;
    uint32_t crc = ~crc_sw(~(uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

/* ------------------------------------------------------------------------------------ */
/* Module                                                                                */
/* ------------------------------------------------------------------------------------ */

static PyMethodDef kd_methods[] = {
    {"init", kd_init, METH_VARARGS,
     "init(Batch, Record): the classes scan_v2 and decode_v2_records build."},
    {"scan_v2", (PyCFunction)(void (*)(void))kd_scan_v2, METH_FASTCALL,
     "scan_v2(buf, pos, end, max_batches) -> (list of Batch, new_pos): the well-formed v2 "
     "batches from pos on, stopping before the first entry the Python walker must judge."},
    {"decode_v2_records", (PyCFunction)(void (*)(void))kd_decode_v2_records, METH_FASTCALL,
     "decode_v2_records(data, base_offset, base_timestamp, log_append_time, base_sequence, count) "
     "-> list of Record, or None if the data is malformed in any way."},
    {"crc32c", kd_crc32c, METH_VARARGS, "crc32c(data, value=0) -> CRC-32C (Castagnoli) of data."},
    {"_crc32c_sw", kd_crc32c_sw, METH_VARARGS, "crc32c without hardware acceleration (for tests)."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef kd_module = {
    PyModuleDef_HEAD_INIT, "kdump._speedups",
    "Optional C accelerators for kdump's hot loops (the pure-Python code is the reference).",
    -1, kd_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    crc_init();
    PyObject *m = PyModule_Create(&kd_module);
    if (m == NULL)
        return NULL;
    if (empty_tuple == NULL) {
        empty_tuple = PyTuple_New(0);
        int_two = PyLong_FromLong(2);
        if (empty_tuple == NULL || int_two == NULL) {
            Py_DECREF(m);
            return NULL;
        }
    }
    if (PyModule_AddStringConstant(m, "crc32c_impl", crc_impl_name) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
