/*
 * kdump._speedups: optional C versions of kdump's hot loops.
 *
 *   scan_v2(buf, pos, end, max_batches) -> (list[Batch], new_pos)
 *   decode_v2_records(data, base_offset, base_timestamp, log_append_time,
 *                     base_sequence, count) -> list[Record] | None
 *   decode_legacy_set(data, wrapper_offset, wrapper_magic, log_append_time) -> list[Record] | None
 *   crc32c(data, value=0) -> int
 *   scan_plain_run(buf, pos, end, max_batches, hi, max_size, interval, epochs, state)
 *       -> (new_pos, state) | None
 *   json_batch_line(file_json, batch, records, encoding) -> str | None
 *   find_candidate(buf, pos, end, top) -> int
 *   watch_mapping(mapping, path) -> slot | None, unwatch_mapping(slot), catch_sigbus() -> bool
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

/* a - b in int64; returns nonzero on overflow. */
static inline int
sub_overflows(int64_t a, int64_t b, int64_t *out)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_sub_overflow(a, b, out);
#else
    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b))
        return 1;
    *out = a - b;
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
#define CRC32_POLY 0xEDB88320u     /* IEEE CRC-32 (zlib's), for legacy v0/v1 messages */

typedef uint32_t crc_table[8][256];

static crc_table crc_tab;          /* CRC-32C */
static crc_table crc32_tab;        /* CRC-32 */

static void
crc_tables_fill(crc_table tab, uint32_t poly)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        tab[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = tab[0][n];
        for (int t = 1; t < 8; t++) {
            c = tab[0][c & 0xFF] ^ (c >> 8);
            tab[t][n] = c;
        }
    }
}

static void
crc_tables_init(void)
{
    crc_tables_fill(crc_tab, CRC32C_POLY);
    crc_tables_fill(crc32_tab, CRC32_POLY);
}

/* Slicing-by-8 over either table (raw register in and out). */
static inline uint32_t
crc_slice8(const crc_table tab, uint32_t crc, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w = le64(p) ^ (uint64_t)crc;
        uint32_t lo = (uint32_t)w, hi = (uint32_t)(w >> 32);
        crc = tab[7][lo & 0xFF] ^ tab[6][(lo >> 8) & 0xFF] ^
              tab[5][(lo >> 16) & 0xFF] ^ tab[4][lo >> 24] ^
              tab[3][hi & 0xFF] ^ tab[2][(hi >> 8) & 0xFF] ^
              tab[1][(hi >> 16) & 0xFF] ^ tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

static uint32_t
crc_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    return crc_slice8(crc_tab, crc, p, n);
}

/* The IEEE CRC-32 of p[0:n], finished (what zlib.crc32(data) returns). */
static inline uint32_t
crc32_ieee(const unsigned char *p, size_t n)
{
    return ~crc_slice8(crc32_tab, 0xFFFFFFFFu, p, n);
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
    (void)self;
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

/* args[1..3] of the walking functions: pos, end, max_batches; -1 with an exception set. */
static int
span_args(PyObject *const *args, Py_ssize_t *pos, Py_ssize_t *end, Py_ssize_t *max_batches)
{
    Py_ssize_t *out[3] = {pos, end, max_batches};
    for (int i = 0; i < 3; i++) {
        *out[i] = PyLong_AsSsize_t(args[i + 1]);
        if (*out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

static PyObject *
kd_scan_v2(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "scan_v2(buf, pos, end, max_batches)");
        return NULL;
    }
    if (BatchType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "kdump._speedups.init() was not called");
        return NULL;
    }
    Py_ssize_t pos, end, max_batches;
    if (span_args(args, &pos, &end, &max_batches) < 0)
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

/* Varlong: 0 on success; 1 when the raw value needs more than 64 bits (only the lowest bit
 * of the tenth byte fits), ``*out`` then holding junk, which varint.py rejects too; -1
 * where Python raises. */
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
        /* nonzero: malformed, a raw value beyond 64 bits included (varint.py rejects it) */
        if (read_varint64(d, &p, rend, &ts_delta) != 0 || read_varint32(d, &p, rend, &off_delta) < 0)
            goto malformed;
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
    (void)self;
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
/* decode_legacy_set                                                                     */
/* ------------------------------------------------------------------------------------ */

/*
 * The inner message set of a decompressed v0/v1 wrapper as Records: legacy.py's
 * _inner_messages after its decompress() call, check for check. Any malformation, and
 * anything Python would turn into a big int, gives NULL with no exception set, and the
 * Python code reruns to raise its precise error. A bad inner CRC is not a malformation:
 * it is reported in the record's crc_valid, as Python does.
 */

#define LEGACY_OVERHEAD_V0 14
#define LEGACY_OVERHEAD_V1 22

static PyObject *
decode_legacy(const unsigned char *d, Py_ssize_t end, int64_t wrapper_offset, int wrapper_magic,
              PyObject *log_append_ts)
{
    /* pass 1: framing, and the last inner offset (v1 offsets are relative to it) */
    Py_ssize_t p = 0, n = 0;
    int64_t last_inner = 0;
    while (p < end) {
        if (end - p < LOG_OVERHEAD)
            return NULL;
        int64_t size = (int32_t)be32(d + p + 8);
        if (size < LEGACY_OVERHEAD_V0 || size > end - p - LOG_OVERHEAD)
            return NULL;
        last_inner = (int64_t)be64(d + p);
        p += LOG_OVERHEAD + (Py_ssize_t)size;
        n++;
    }
    if (n == 0)
        return NULL;
    int64_t base = 0;                  /* v0 inner offsets are absolute */
    if (wrapper_magic >= 1 && wrapper_offset != 0) {    /* librdkafka's 0 means base 0 */
        if (wrapper_offset < last_inner)
            return NULL;
        base = wrapper_offset - last_inner;
    }
    PyObject *list = PyList_New(n);
    if (list == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *ts_types[3] = {NULL, NULL, NULL};       /* -1, 0, 1 */
    for (int i = 0; i < 3; i++) {
        ts_types[i] = PyLong_FromLong(i - 1);
        if (ts_types[i] == NULL)
            goto error;
    }
    p = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t inner_offset = (int64_t)be64(d + p), offset;
        Py_ssize_t mstart = p + LOG_OVERHEAD, mend = mstart + (Py_ssize_t)(int32_t)be32(d + p + 8);
        p = mend;
        const unsigned char *m = d + mstart;
        uint32_t crc = be32(m);
        int magic = (int8_t)m[4], attributes = (int8_t)m[5];
        if (magic != 0 && magic != 1)
            goto malformed;
        if (magic == 1 && mend - mstart < LEGACY_OVERHEAD_V1)
            goto malformed;
        if (attributes & 0x07)           /* inner messages must not be compressed */
            goto malformed;
        Py_ssize_t q = mstart + 6;
        int64_t ts = -1;
        int ts_type = -1;
        if (magic == 1) {
            ts = (int64_t)be64(d + q);
            ts_type = (attributes & 0x08) ? 1 : 0;
            q += 8;
        }
        int32_t klen, vlen;
        if (mend - q < 4)
            goto malformed;
        klen = (int32_t)be32(d + q);
        q += 4;
        if (klen < -1 || (klen >= 0 && klen > mend - q))
            goto malformed;
        Py_ssize_t kstart = q;
        if (klen > 0)
            q += klen;
        if (mend - q < 4)
            goto malformed;
        vlen = (int32_t)be32(d + q);
        q += 4;
        if (vlen < -1 || (vlen >= 0 && vlen > mend - q))
            goto malformed;
        Py_ssize_t vstart = q;
        if (vlen > 0)
            q += vlen;
        if (q != mend)
            goto malformed;
        if (add_overflows(base, inner_offset, &offset))
            goto malformed;
        int crc_ok = crc32_ieee(m + 4, (size_t)(mend - mstart - 4)) == crc;
        PyObject *items[RECORD_FIELDS];
        items[0] = PyLong_FromLongLong(offset);
        if (log_append_ts != NULL) {
            items[1] = Py_NewRef(log_append_ts);
            items[2] = Py_NewRef(ts_types[2]);
        } else {
            items[1] = PyLong_FromLongLong(ts);
            items[2] = Py_NewRef(ts_types[ts_type + 1]);
        }
        items[3] = klen >= 0 ? PyBytes_FromStringAndSize((const char *)d + kstart, klen) : Py_NewRef(Py_None);
        items[4] = vlen >= 0 ? PyBytes_FromStringAndSize((const char *)d + vstart, vlen) : Py_NewRef(Py_None);
        items[5] = Py_NewRef(empty_tuple);
        items[6] = PyLong_FromLong(-1);
        items[7] = Py_NewRef(Py_None);
        items[8] = PyLong_FromLong(magic);
        items[9] = PyLong_FromUnsignedLong(crc);
        items[10] = Py_NewRef(crc_ok ? Py_True : Py_False);
        PyObject *rec = new_struct(RecordType, items, RECORD_FIELDS);
        if (rec == NULL)
            goto error;
        PyList_SET_ITEM(list, i, rec);
    }
    for (int i = 0; i < 3; i++)
        Py_DECREF(ts_types[i]);
    return list;

malformed:
error:
    for (int i = 0; i < 3; i++)
        Py_XDECREF(ts_types[i]);
    Py_DECREF(list);
    PyErr_Clear();          /* memory errors included: the Python decoder reruns */
    return NULL;
}

static PyObject *
kd_decode_legacy_set(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "decode_legacy_set(data, wrapper_offset, wrapper_magic, log_append_time)");
        return NULL;
    }
    if (RecordType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "kdump._speedups.init() was not called");
        return NULL;
    }
    int64_t wrapper_offset, wrapper_magic;
    PyObject *lat = args[3];
    if (as_int64(args[1], &wrapper_offset) < 0 || as_int64(args[2], &wrapper_magic) < 0 ||
        wrapper_magic < 0 || wrapper_magic > 1)
        Py_RETURN_NONE;
    if (lat == Py_None)
        lat = NULL;
    else if (!PyLong_Check(lat))
        Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *result = decode_legacy((const unsigned char *)view.buf, view.len, wrapper_offset,
                                     (int)wrapper_magic, lat);
    PyBuffer_Release(&view);
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
    (void)self;
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
    (void)self;
    Py_buffer view;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I:_crc32c_sw", &view, &value))
        return NULL;
    uint32_t crc = ~crc_sw(~(uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

/* ------------------------------------------------------------------------------------ */
/* scan_plain_run                                                                        */
/* ------------------------------------------------------------------------------------ */

/*
 * The recovery scanner's fast path (kdump/scan.py, _Scan.walk) over a run of "plain" v2
 * batches, straight from the buffer: no Batch object per batch. The conditions and the
 * state updates are those of the Python fast path, line for line; the run stops, without
 * consuming, at the first entry that is not plain or whose index step is irregular, and
 * Python (Walker + the fast or slow path) takes over there. Anything that does not fit
 * in an int64 makes it consume nothing at all.
 */

#define PLAIN_STATE_FIELDS 10

/* An int64 from a Python int: 0 if it fits, +1 / -1 if it is above / below the int64
 * range, -2 if not an int. No exception is left set. */
static int
int64_or_overflow(PyObject *o, int64_t *out)
{
    if (!PyLong_Check(o))
        return -2;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -2;
    }
    if (overflow) {
        *out = overflow > 0 ? INT64_MAX : INT64_MIN;
        return overflow;
    }
    *out = (int64_t)v;
    return 0;
}

/* A bound only ever compared with int64 values: clamping it keeps every comparison exact. */
static int
int64_clamped(PyObject *o, int64_t *out)
{
    return int64_or_overflow(o, out) == -2 ? -1 : 0;
}

static PyObject *
kd_scan_plain_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError,
                        "scan_plain_run(buf, pos, end, max_batches, hi, max_size, interval, epochs, state)");
        return NULL;
    }
    PyObject *epochs = args[7], *state = args[8];
    if (!PyList_Check(epochs) || !PyTuple_Check(state) || PyTuple_GET_SIZE(state) != PLAIN_STATE_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "scan_plain_run: epochs must be a list and state a tuple of 10");
        return NULL;
    }
    Py_ssize_t pos, end, max_batches;
    if (span_args(args, &pos, &end, &max_batches) < 0)
        return NULL;

    /* The state; any value outside int64 leaves everything to Python. */
    int64_t hi, max_size, interval, valid, last_entry_at, lo, prev_epoch, max_ts, max_ts_off, nb, records;
    int64_t index_last = 0, time_ts = 0, time_off = 0, last_epoch = 0;
    int has_index = 0, has_time = 0, has_epoch = 0, time_changed = 0;
    PyObject *const *s = &PyTuple_GET_ITEM(state, 0);
    int hi_state = int64_or_overflow(args[4], &hi);
    if (hi_state == -2 || hi_state == -1)      /* above int64 clamps exactly; below: no batch fits */
        Py_RETURN_NONE;
    if (int64_clamped(args[5], &max_size) < 0 || int64_clamped(args[6], &interval) < 0)
        Py_RETURN_NONE;
    if (int64_or_overflow(s[0], &valid) || int64_or_overflow(s[1], &last_entry_at) ||
        int64_or_overflow(s[2], &lo) || int64_or_overflow(s[3], &prev_epoch) ||
        int64_or_overflow(s[4], &max_ts) || int64_or_overflow(s[5], &max_ts_off) ||
        int64_or_overflow(s[6], &nb) || int64_or_overflow(s[7], &records))
        Py_RETURN_NONE;
    if (s[8] != Py_None) {
        if (int64_or_overflow(s[8], &index_last))
            Py_RETURN_NONE;
        has_index = 1;
    }
    if (s[9] != Py_None) {
        if (!PyTuple_Check(s[9]) || PyTuple_GET_SIZE(s[9]) != 2 ||
            int64_or_overflow(PyTuple_GET_ITEM(s[9], 0), &time_ts) ||
            int64_or_overflow(PyTuple_GET_ITEM(s[9], 1), &time_off))
            Py_RETURN_NONE;
        has_time = 1;
    }
    Py_ssize_t n_epochs = PyList_GET_SIZE(epochs);
    if (n_epochs > 0) {
        PyObject *e = PyList_GET_ITEM(epochs, n_epochs - 1);
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) < 1 || int64_or_overflow(PyTuple_GET_ITEM(e, 0), &last_epoch))
            Py_RETURN_NONE;
        has_epoch = 1;
    }

    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    if (end > view.len)
        end = view.len;
    const Py_ssize_t start = pos;

    /* Once the run is long, the GIL is let go for the rest of it (the loop touches no
     * Python object but the epochs list, for which it is taken back): the mapping's
     * trimmer thread (kdump/segment.py) keeps running meanwhile. The buffer export keeps
     * the memory valid. Short runs keep it, as most calls in a transactional segment stop
     * at once. */
    PyThreadState *released = NULL;
    Py_ssize_t done = 0;
    while (done < max_batches && pos >= 0 && end - pos > HEADER_UP_TO_MAGIC) {
        if (released == NULL && pos - start >= KD_NOGIL_BYTES)
            released = PyEval_SaveThread();
        /* Framing exactly as scan_v2 (and so the Walker) accepts a v2 entry. */
        const unsigned char *h = buf + pos;
        if (h[16] != 2)
            break;
        int32_t length = (int32_t)be32(h + 8);
        if ((int64_t)length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD ||
            (int64_t)length + LOG_OVERHEAD > (int64_t)(end - pos))
            break;
        int64_t size = (int64_t)length + LOG_OVERHEAD;
        /* Plain: lo < first <= last <= hi, size <= max, neither transactional nor control,
         * a known codec, 0 <= count <= last - first + 1, epoch not going down. */
        int64_t first = (int64_t)be64(h), last;
        int32_t last_delta = (int32_t)be32(h + 23);
        if (add_overflows(first, last_delta, &last))
            break;
        if (!(lo < first && first <= last && last <= hi) || size > max_size)
            break;
        int16_t attributes = be16s(h + 21);
        if ((attributes & 0x30) || (attributes & 7) > 4)
            break;
        int32_t count = (int32_t)be32(h + 57);
        if (count < 0 || (int64_t)count > (int64_t)last_delta + 1)
            break;
        int32_t epoch = (int32_t)be32(h + 12);
        if (epoch < prev_epoch)
            break;
        /* The index step of LogSegment.recover; its irregular cases are Python's. */
        int64_t mts = (int64_t)be64(h + 35);
        int64_t m_ts = max_ts, m_off = max_ts_off, gap, new_valid, new_records;
        if (mts > max_ts) {
            m_ts = mts;
            m_off = last;
        }
        if (sub_overflows(valid, last_entry_at, &gap) || add_overflows(valid, size, &new_valid) ||
            add_overflows(records, count, &new_records) || nb == INT64_MAX)
            break;
        int due = gap > interval;
        if (due && ((has_index && last <= index_last) || (has_time && m_off < time_off)))
            break;
        /* The CRC last: it is the one expensive check. */
        const unsigned char *crc_start = h + ATTRIBUTES_OFFSET;
        size_t crc_len = (size_t)(size - ATTRIBUTES_OFFSET);
        uint32_t computed;
        if (released == NULL && (Py_ssize_t)crc_len >= KD_NOGIL_BYTES) {
            Py_BEGIN_ALLOW_THREADS
            computed = crc32c_value(0, crc_start, crc_len);
            Py_END_ALLOW_THREADS
        } else {
            computed = crc32c_value(0, crc_start, crc_len);
        }
        if (computed != be32(h + 17))
            break;
        /* Taken: the state moves as in Python. */
        max_ts = m_ts;
        max_ts_off = m_off;
        if (due) {
            has_index = 1;
            index_last = last;
            if (max_ts > (has_time ? time_ts : -1)) {
                has_time = time_changed = 1;
                time_ts = max_ts;
                time_off = max_ts_off;
            }
            last_entry_at = valid;
        }
        if (epoch > prev_epoch) {
            if (!has_epoch || epoch > last_epoch) {
                if (released != NULL)
                    PyEval_RestoreThread(released);
                released = NULL;
                PyObject *pair = Py_BuildValue("(iL)", (int)epoch, (long long)first);
                if (pair == NULL || PyList_Append(epochs, pair) < 0) {
                    Py_XDECREF(pair);
                    PyBuffer_Release(&view);
                    return NULL;
                }
                Py_DECREF(pair);
                has_epoch = 1;
                last_epoch = epoch;
            }
            prev_epoch = epoch;
        }
        valid = new_valid;
        nb += 1;
        records = new_records;
        lo = last;
        pos += (Py_ssize_t)size;
        done++;
    }
    if (released != NULL)
        PyEval_RestoreThread(released);
    PyBuffer_Release(&view);
    if (pos == start)
        Py_RETURN_NONE;

    PyObject *time_last;
    if (!has_time)
        time_last = Py_NewRef(Py_None);
    else if (!time_changed)
        time_last = Py_NewRef(s[9]);
    else
        time_last = Py_BuildValue("(LL)", (long long)time_ts, (long long)time_off);
    if (time_last == NULL)
        return NULL;
    PyObject *index_obj = has_index ? PyLong_FromLongLong(index_last) : Py_NewRef(Py_None);
    if (index_obj == NULL) {
        Py_DECREF(time_last);
        return NULL;
    }
    return Py_BuildValue("n(LLLLLLLLNN)", pos, (long long)valid, (long long)last_entry_at, (long long)lo,
                         (long long)prev_epoch, (long long)max_ts, (long long)max_ts_off, (long long)nb,
                         (long long)records, index_obj, time_last);
}

/* ------------------------------------------------------------------------------------ */
/* json_batch_line                                                                       */
/* ------------------------------------------------------------------------------------ */

/*
 * The NDJSON line of kdump/render/jsonout.py batch_line for the plain case (no decoders,
 * no records_error): a batch (v0, v1 or v2) and its non-control records, payloads in
 * base64, hex or utf8. It returns None for anything else (control records, a wrapper
 * whose base offset is unknown, values that are not exact ints or bytes, ints beyond
 * int64), and jsonout's
 * Python code, the reference, writes that line instead.
 */

enum { ENC_BASE64 = 0, ENC_HEX = 1, ENC_UTF8 = 2 };

/* One output buffer, kept between calls (the GIL serialises them); a huge one is freed. */
static char *out_mem = NULL;
static Py_ssize_t out_cap = 0;
#define OUT_KEEP ((Py_ssize_t)4 << 20)

typedef struct {
    char *p;
    Py_ssize_t len;
} outbuf;

/* Room for ``extra`` more bytes; -1 with MemoryError set on failure. */
static int
out_reserve(outbuf *o, Py_ssize_t extra)
{
    if (extra <= out_cap - o->len)
        return 0;
    if (extra > PY_SSIZE_T_MAX / 2 - o->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t cap = out_cap < 4096 ? 4096 : out_cap;
    while (cap - o->len < extra)
        cap *= 2;
    char *p = PyMem_Realloc(out_mem, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out_mem = o->p = p;
    out_cap = cap;
    return 0;
}

/* Callers reserve first: the put_* functions below write without checking. */
static inline void
put_raw(outbuf *o, const char *s, Py_ssize_t n)
{
    memcpy(o->p + o->len, s, (size_t)n);
    o->len += n;
}

#define PUT_LIT(o, s) put_raw((o), (s), (Py_ssize_t)(sizeof(s) - 1))
#define INT_CHARS 21     /* "-9223372036854775808" and one to spare */

static inline void
put_i64(outbuf *o, int64_t v)
{
    char tmp[20];
    int k = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char *w = o->p + o->len;
    if (v < 0)
        *w++ = '-';
    do {
        tmp[k++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    while (k)
        *w++ = tmp[--k];
    o->len = w - o->p;
}

static const char hex_digits[] = "0123456789abcdef";
static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static inline char *
put_u_escape(char *w, unsigned c)
{
    w[0] = '\\';
    w[1] = 'u';
    w[2] = hex_digits[(c >> 12) & 0xF];
    w[3] = hex_digits[(c >> 8) & 0xF];
    w[4] = hex_digits[(c >> 4) & 0xF];
    w[5] = hex_digits[c & 0xF];
    return w + 6;
}

/*
 * json.encoder.encode_basestring_ascii(data.decode("utf-8", "replace")), quotes included.
 * CPython's decoder replaces each maximal invalid subpart (Unicode's recommended
 * practice) by one U+FFFD: a lead byte with the continuation bytes that are valid for it
 * so far, or a lone byte that cannot start a sequence. Non-ASCII characters come out as
 * \uXXXX, astral ones as a surrogate pair; " \ \b \f \n \r \t get their short escapes;
 * other controls and DEL \u00XX.
 */
static int
put_utf8_json(outbuf *o, const unsigned char *s, Py_ssize_t n)
{
    if (n > (PY_SSIZE_T_MAX - 2) / 6 || out_reserve(o, 6 * n + 2) < 0) {   /* \ufffd per byte at worst */
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    char *w = o->p + o->len;
    *w++ = '"';
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7F) {
                *w++ = (char)c;
                continue;
            }
            char e = 0;
            switch (c) {
            case '"': e = '"'; break;
            case '\\': e = '\\'; break;
            case '\b': e = 'b'; break;
            case '\f': e = 'f'; break;
            case '\n': e = 'n'; break;
            case '\r': e = 'r'; break;
            case '\t': e = 't'; break;
            default: break;
            }
            if (e) {
                *w++ = '\\';
                *w++ = e;
            } else {
                w = put_u_escape(w, c);
            }
            continue;
        }
        /* A multi-byte sequence: ``take`` bytes form a valid prefix so far. */
        Py_ssize_t left = n - i;
        uint32_t cp = 0;
        int need, take = 1;
        unsigned lo2 = 0x80, hi2 = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            need = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 3;
            cp = c & 0x0F;
            if (c == 0xE0)
                lo2 = 0xA0;       /* no overlong forms */
            else if (c == 0xED)
                hi2 = 0x9F;       /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 4;
            cp = c & 0x07;
            if (c == 0xF0)
                lo2 = 0x90;       /* no overlong forms */
            else if (c == 0xF4)
                hi2 = 0x8F;       /* nothing above U+10FFFF */
        } else {
            need = 1;             /* 80..C1, F5..FF never start a sequence */
        }
        if (need > 1) {
            while (take < need && take < left) {
                unsigned b = s[i + take];
                if (take == 1 ? (b < lo2 || b > hi2) : (b & 0xC0) != 0x80)
                    break;
                cp = (cp << 6) | (b & 0x3F);
                take++;
            }
        }
        if (take < need || need == 1) {
            w = put_u_escape(w, 0xFFFD);
        } else if (cp >= 0x10000) {
            cp -= 0x10000;
            w = put_u_escape(w, 0xD800 | (cp >> 10));
            w = put_u_escape(w, 0xDC00 | (cp & 0x3FF));
        } else {
            w = put_u_escape(w, cp);
        }
        i += take;
    }
    *w++ = '"';
    o->len = w - o->p;
    return 0;
}

/* A JSON literal for a key, value or header value: null, or a string in the encoding. */
static int
put_payload(outbuf *o, PyObject *d, int encoding)
{
    if (d == Py_None) {
        if (out_reserve(o, 4) < 0)
            return -1;
        PUT_LIT(o, "null");
        return 0;
    }
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(d);
    Py_ssize_t n = PyBytes_GET_SIZE(d);
    if (encoding == ENC_UTF8)
        return put_utf8_json(o, s, n);
    Py_ssize_t need = encoding == ENC_HEX ? 2 * n + 2 : (n + 2) / 3 * 4 + 2;
    if (n > PY_SSIZE_T_MAX / 4 || out_reserve(o, need) < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    char *w = o->p + o->len;
    *w++ = '"';
    if (encoding == ENC_HEX) {
        for (Py_ssize_t i = 0; i < n; i++) {
            *w++ = hex_digits[s[i] >> 4];
            *w++ = hex_digits[s[i] & 0xF];
        }
    } else {
        Py_ssize_t i = 0;
        for (; i + 3 <= n; i += 3) {
            uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
            *w++ = b64_alphabet[v >> 18];
            *w++ = b64_alphabet[(v >> 12) & 0x3F];
            *w++ = b64_alphabet[(v >> 6) & 0x3F];
            *w++ = b64_alphabet[v & 0x3F];
        }
        if (n - i == 1) {
            uint32_t v = (uint32_t)s[i] << 16;
            *w++ = b64_alphabet[v >> 18];
            *w++ = b64_alphabet[(v >> 12) & 0x3F];
            *w++ = '=';
            *w++ = '=';
        } else if (n - i == 2) {
            uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8);
            *w++ = b64_alphabet[v >> 18];
            *w++ = b64_alphabet[(v >> 12) & 0x3F];
            *w++ = b64_alphabet[(v >> 6) & 0x3F];
            *w++ = '=';
        }
    }
    *w++ = '"';
    o->len = w - o->p;
    return 0;
}

/* An exact int within int64 (bool and other subclasses print differently): 0, else -1. */
static inline int
exact_i64(PyObject *x, int64_t *out)
{
    if (!PyLong_CheckExact(x))
        return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

static const char *const codec_names[8] = {"none", "gzip", "snappy", "lz4", "zstd",
                                           "unknown(5)", "unknown(6)", "unknown(7)"};

/* The fields of a batch as batch_prefix writes them (file first, then these). */
static const char *const batch_keys[] = {
    ",\"position\":", ",\"base_offset\":", ",\"last_offset\":", ",\"count\":", ",\"size\":",
    ",\"magic\":", ",\"crc\":",
};

/* 1 written, 0 not ours (fall back to Python), -1 error set. */
static int
put_batch(outbuf *o, PyObject *batch)
{
    if (!PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) != BATCH_FIELDS)
        return 0;
    PyObject *const *f = &PyTuple_GET_ITEM(batch, 0);
    int64_t v[BATCH_FIELDS];
    for (int i = 0; i < BATCH_FIELDS; i++) {
        if (i == 7)
            continue;                             /* crc_valid, a bool */
        if (exact_i64(f[i], &v[i]) < 0)
            return 0;
    }
    if (v[5] < 0 || v[5] > 2 || (f[7] != Py_True && f[7] != Py_False))
        return 0;
    int v2 = v[5] == 2;
    int64_t attributes = v[8];
    if (out_reserve(o, 1024) < 0)                 /* the fixed text plus 12 numbers */
        return -1;
    for (int i = 0; i < 7; i++) {
        put_raw(o, batch_keys[i], (Py_ssize_t)strlen(batch_keys[i]));
        put_i64(o, v[i]);
    }
    if (f[7] == Py_True)
        PUT_LIT(o, ",\"crc_valid\":true");
    else
        PUT_LIT(o, ",\"crc_valid\":false");
    PUT_LIT(o, ",\"compression\":\"");
    const char *codec = codec_names[attributes & 7];
    put_raw(o, codec, (Py_ssize_t)strlen(codec));
    if (v[5] == 0)
        PUT_LIT(o, "\",\"timestamp_type\":\"NoTimestampType\"");
    else if (attributes & 0x08)
        PUT_LIT(o, "\",\"timestamp_type\":\"LogAppendTime\"");
    else
        PUT_LIT(o, "\",\"timestamp_type\":\"CreateTime\"");
    PUT_LIT(o, ",\"base_timestamp\":");
    put_i64(o, v[10]);
    PUT_LIT(o, ",\"max_timestamp\":");
    put_i64(o, v[11]);
    PUT_LIT(o, ",\"partition_leader_epoch\":");
    put_i64(o, v[9]);
    PUT_LIT(o, ",\"producer_id\":");
    put_i64(o, v[12]);
    PUT_LIT(o, ",\"producer_epoch\":");
    put_i64(o, v[13]);
    PUT_LIT(o, ",\"base_sequence\":");
    put_i64(o, v[14]);
    /* legacy messages have none of the v2 flags, whatever their attribute bits say */
    if (v2 && (attributes & 0x10))
        PUT_LIT(o, ",\"is_transactional\":true");
    else
        PUT_LIT(o, ",\"is_transactional\":false");
    if (v2 && (attributes & 0x20))
        PUT_LIT(o, ",\"is_control\":true");
    else
        PUT_LIT(o, ",\"is_control\":false");
    PUT_LIT(o, ",\"delete_horizon_ms\":");
    if (v2 && (attributes & 0x40))
        put_i64(o, v[10]);
    else
        PUT_LIT(o, "null");
    return 1;
}

/* One record object; same return convention as put_batch. */
static int
put_record(outbuf *o, PyObject *rec, int encoding)
{
    if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) != RECORD_FIELDS)
        return 0;
    PyObject *const *f = &PyTuple_GET_ITEM(rec, 0);
    int64_t offset, timestamp, sequence, magic, crc = 0;
    PyObject *key = f[3], *value = f[4], *headers = f[5];
    if (exact_i64(f[0], &offset) < 0 || exact_i64(f[1], &timestamp) < 0 || exact_i64(f[6], &sequence) < 0 ||
        exact_i64(f[8], &magic) < 0 || magic < 0 || magic > 2 || f[7] != Py_None)
        return 0;
    /* a legacy record also carries its own crc and crc_valid */
    if (magic < 2 && (exact_i64(f[9], &crc) < 0 || (f[10] != Py_True && f[10] != Py_False)))
        return 0;
    if ((key != Py_None && !PyBytes_CheckExact(key)) || (value != Py_None && !PyBytes_CheckExact(value)))
        return 0;
    if (!PyTuple_Check(headers) && !PyList_Check(headers))
        return 0;
    Py_ssize_t nh = PySequence_Fast_GET_SIZE(headers);
    PyObject **hs = PySequence_Fast_ITEMS(headers);
    for (Py_ssize_t i = 0; i < nh; i++) {
        PyObject *h = hs[i];
        if (!PyTuple_CheckExact(h) || PyTuple_GET_SIZE(h) != 2 || !PyBytes_CheckExact(PyTuple_GET_ITEM(h, 0)))
            return 0;
        PyObject *hv = PyTuple_GET_ITEM(h, 1);
        if (hv != Py_None && !PyBytes_CheckExact(hv))
            return 0;
    }
    if (out_reserve(o, 128 + 5 * INT_CHARS) < 0)
        return -1;
    PUT_LIT(o, "{\"offset\":");
    put_i64(o, offset);
    PUT_LIT(o, ",\"timestamp\":");
    put_i64(o, timestamp);
    PUT_LIT(o, ",\"key_size\":");
    put_i64(o, key == Py_None ? -1 : (int64_t)PyBytes_GET_SIZE(key));
    PUT_LIT(o, ",\"value_size\":");
    put_i64(o, value == Py_None ? -1 : (int64_t)PyBytes_GET_SIZE(value));
    PUT_LIT(o, ",\"sequence\":");
    put_i64(o, sequence);
    PUT_LIT(o, ",\"key\":");
    if (put_payload(o, key, encoding) < 0 || out_reserve(o, 16) < 0)
        return -1;
    PUT_LIT(o, ",\"value\":");
    if (put_payload(o, value, encoding) < 0 || out_reserve(o, 16) < 0)
        return -1;
    PUT_LIT(o, ",\"headers\":[");
    for (Py_ssize_t i = 0; i < nh; i++) {
        PyObject *hk = PyTuple_GET_ITEM(hs[i], 0);
        if (out_reserve(o, 16) < 0)
            return -1;
        if (i)
            PUT_LIT(o, ",");
        PUT_LIT(o, "{\"key\":");
        /* header keys are text whatever the encoding */
        if (put_utf8_json(o, (const unsigned char *)PyBytes_AS_STRING(hk), PyBytes_GET_SIZE(hk)) < 0 ||
            out_reserve(o, 16) < 0)
            return -1;
        PUT_LIT(o, ",\"value\":");
        if (put_payload(o, PyTuple_GET_ITEM(hs[i], 1), encoding) < 0 || out_reserve(o, 4) < 0)
            return -1;
        PUT_LIT(o, "}");
    }
    if (out_reserve(o, 48 + INT_CHARS) < 0)
        return -1;
    PUT_LIT(o, "]");
    if (magic < 2) {
        PUT_LIT(o, ",\"crc\":");
        put_i64(o, crc);
        if (f[10] == Py_True)
            PUT_LIT(o, ",\"crc_valid\":true");
        else
            PUT_LIT(o, ",\"crc_valid\":false");
    }
    PUT_LIT(o, "}");
    return 1;
}

static PyObject *
kd_json_batch_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "json_batch_line(file_json, batch, records, encoding)");
        return NULL;
    }
    PyObject *file_json = args[0], *batch = args[1], *records = args[2];
    long encoding = PyLong_AsLong(args[3]);
    if (encoding == -1 && PyErr_Occurred())
        return NULL;
    if (!PyUnicode_CheckExact(file_json) || (encoding != ENC_BASE64 && encoding != ENC_HEX && encoding != ENC_UTF8))
        Py_RETURN_NONE;
    if (records != Py_None && !PyList_Check(records) && !PyTuple_Check(records))
        Py_RETURN_NONE;
    PyObject *result = NULL;
    outbuf o = {out_mem, 0};
    Py_ssize_t head;
    int rc = -1;
    /* An ASCII file name goes straight into the buffer; any other is joined at the end. */
    int ascii_file = PyUnicode_IS_ASCII(file_json);
    if (out_reserve(&o, 16) < 0)
        goto done;
    PUT_LIT(&o, "{\"file\":");
    if (ascii_file) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(file_json);
        if (out_reserve(&o, n) < 0)
            goto done;
        put_raw(&o, (const char *)PyUnicode_DATA(file_json), n);
    }
    head = o.len;
    rc = put_batch(&o, batch);
    if (rc <= 0)
        goto done;
    rc = -1;
    if (records != Py_None) {
        Py_ssize_t nr = PySequence_Fast_GET_SIZE(records);
        PyObject **rs = PySequence_Fast_ITEMS(records);
        if (out_reserve(&o, 16) < 0)
            goto done;
        PUT_LIT(&o, ",\"records\":[");
        for (Py_ssize_t i = 0; i < nr; i++) {
            if (i) {
                if (out_reserve(&o, 1) < 0)
                    goto done;
                PUT_LIT(&o, ",");
            }
            rc = put_record(&o, rs[i], (int)encoding);
            if (rc <= 0)
                goto done;
        }
        rc = -1;
        if (out_reserve(&o, 1) < 0)
            goto done;
        PUT_LIT(&o, "]");
    }
    if (out_reserve(&o, 1) < 0)
        goto done;
    PUT_LIT(&o, "}");
    rc = 1;
    if (ascii_file) {
        result = PyUnicode_New(o.len, 127);
        if (result != NULL)
            memcpy(PyUnicode_1BYTE_DATA(result), o.p, (size_t)o.len);
    } else {
        PyObject *start = PyUnicode_FromStringAndSize(o.p, head);
        PyObject *rest = PyUnicode_FromStringAndSize(o.p + head, o.len - head);
        PyObject *part = (start && rest) ? PyUnicode_Concat(start, file_json) : NULL;
        result = part ? PyUnicode_Concat(part, rest) : NULL;
        Py_XDECREF(start);
        Py_XDECREF(rest);
        Py_XDECREF(part);
    }
done:
    if (out_cap > OUT_KEEP) {
        PyMem_Free(out_mem);
        out_mem = NULL;
        out_cap = 0;
    }
    if (rc == 0)
        Py_RETURN_NONE;     /* not ours: the Python writer does this line */
    return result;          /* NULL with an exception set when rc < 0 */
}

/* ------------------------------------------------------------------------------------ */
/* find_candidate                                                                        */
/* ------------------------------------------------------------------------------------ */

/*
 * The resync's search (kdump/scan.py next_candidate): the first position p >= pos with
 * p + 8 < end where buf[p] <= top (the high byte of a plausible length) and buf[p + 8] <= 2
 * (a magic), the match of the regular expression [\x00-top].{7}[\x00-\x02] that Python
 * uses without the accelerator; -1 if there is none. Random bytes are read at memchr
 * speed when top is 0 (a maximum size below 16 MiB), byte by byte otherwise.
 */
static PyObject *
kd_find_candidate(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "find_candidate(buf, pos, end, top)");
        return NULL;
    }
    Py_ssize_t pos, end, top;
    if (span_args(args, &pos, &end, &top) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    if (end > view.len)
        end = view.len;
    if (pos < 0)
        pos = 0;
    Py_ssize_t found = -1;
    if (top >= 0 && end - pos > 8) {
        const Py_ssize_t last = end - 9;       /* the last p with p + 8 < end */
        unsigned char hi = top > 255 ? 255 : (unsigned char)top;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t p = pos;
        while (p <= last) {
            if (hi == 0) {
                const unsigned char *z = memchr(b + p, 0, (size_t)(last - p + 1));
                if (z == NULL)
                    break;
                p = z - b;
            } else if (b[p] > hi) {
                p++;
                continue;
            }
            if (b[p + 8] <= 2) {
                found = p;
                break;
            }
            p++;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(found);
}

/* ------------------------------------------------------------------------------------ */
/* A file truncated under a mapping                                                      */
/* ------------------------------------------------------------------------------------ */

/*
 * kdump reads segments through read-only mappings. If another process truncates a file
 * while it is mapped (a broker truncating a follower's log after a leader change), a read
 * past the new end raises SIGBUS, and the process would die with "Bus error". The CLI asks
 * for catch_sigbus(): the handler finds the mapping the faulting address is in (files are
 * registered with watch_mapping while mapped), writes one located line to stderr and
 * exits with 3, "could not complete". Only async-signal-safe calls are made in it.
 */
#include <signal.h>
#if defined(SIGBUS) && (defined(__unix__) || defined(__APPLE__))
#  include <sys/stat.h>
#  include <unistd.h>
#  define KD_HAVE_SIGBUS 1
#else
#  define KD_HAVE_SIGBUS 0
#endif

#define WATCH_SLOTS 64
#define WATCH_PATH 4096

static struct {
    volatile sig_atomic_t used;
    const char *base;
    size_t len;
    char path[WATCH_PATH];
} watched[WATCH_SLOTS];

static PyObject *
kd_watch_mapping(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    const char *path;
    Py_ssize_t path_len;
    if (!PyArg_ParseTuple(args, "y*y#:watch_mapping", &view, &path, &path_len))
        return NULL;
    const char *base = (const char *)view.buf;
    size_t len = (size_t)view.len;
    PyBuffer_Release(&view);        /* the mapping stays; its owner unwatches it before closing */
    for (int i = 0; i < WATCH_SLOTS; i++) {
        if (watched[i].used)
            continue;
        watched[i].base = base;
        watched[i].len = len;
        size_t n = (size_t)path_len < WATCH_PATH - 1 ? (size_t)path_len : WATCH_PATH - 1;
        memcpy(watched[i].path, path, n);
        watched[i].path[n] = '\0';
        watched[i].used = 1;
        return PyLong_FromLong(i);
    }
    Py_RETURN_NONE;                 /* all slots taken: the handler reports no file name */
}

static PyObject *
kd_unwatch_mapping(PyObject *self, PyObject *arg)
{
    (void)self;
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i >= 0 && i < WATCH_SLOTS)
        watched[i].used = 0;
    Py_RETURN_NONE;
}

#if KD_HAVE_SIGBUS
static size_t
put(char *out, size_t at, size_t cap, const char *s)
{
    while (*s && at < cap)
        out[at++] = *s++;
    return at;
}

static void
on_sigbus(int sig, siginfo_t *info, void *context)
{
    (void)sig, (void)context;
    char line[WATCH_PATH + 256];
    size_t at = put(line, 0, sizeof line, "kdump: error: ");
    const char *addr = (const char *)info->si_addr;
    int found = 0;
    for (int i = 0; i < WATCH_SLOTS && !found; i++) {
        if (!watched[i].used || addr < watched[i].base || addr >= watched[i].base + watched[i].len)
            continue;
        found = i + 1;
        char digits[24];
        size_t n = 0, position = (size_t)(addr - watched[i].base);
        do {
            digits[n++] = (char)('0' + position % 10);
            position /= 10;
        } while (position && n < sizeof digits);
        at = put(line, at, sizeof line, watched[i].path);
        at = put(line, at, sizeof line, ":");
        while (n && at < sizeof line)
            line[at++] = digits[--n];
        at = put(line, at, sizeof line, ": ");
    }
    at = put(line, at, sizeof line, found ? "the file was truncated by another process while kdump read it"
                                          : "a file was truncated by another process while kdump read it (SIGBUS)");
    struct stat st;
    if (found && stat(watched[found - 1].path, &st) == 0 && st.st_size >= 0) {
        char digits[24];
        size_t n = 0, size = (size_t)st.st_size;
        do {
            digits[n++] = (char)('0' + size % 10);
            size /= 10;
        } while (size && n < sizeof digits);
        at = put(line, at, sizeof line, " (it now has ");
        while (n && at < sizeof line)
            line[at++] = digits[--n];
        at = put(line, at, sizeof line, " bytes)");
    }
    at = put(line, at, sizeof line, "; run again once it is stable\n");
    ssize_t ignored = write(2, line, at);
    (void)ignored;
    _exit(3);
}
#endif

static PyObject *
kd_catch_sigbus(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
#if KD_HAVE_SIGBUS
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, NULL) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
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
    {"decode_legacy_set", (PyCFunction)(void (*)(void))kd_decode_legacy_set, METH_FASTCALL,
     "decode_legacy_set(data, wrapper_offset, wrapper_magic, log_append_time) -> list of Record, or None "
     "if the decompressed inner message set is malformed in any way."},
    {"scan_plain_run", (PyCFunction)(void (*)(void))kd_scan_plain_run, METH_FASTCALL,
     "scan_plain_run(buf, pos, end, max_batches, hi, max_size, interval, epochs, state) -> None | "
     "(new_pos, state): the recovery scanner's fast path over the plain v2 batches from pos on; "
     "state = (valid, last_entry_at, lo, prev_epoch, max_ts, max_ts_offset, batches, records, "
     "index_last, time_last); epochs is appended to in place. None: nothing consumed."},
    {"json_batch_line", (PyCFunction)(void (*)(void))kd_json_batch_line, METH_FASTCALL,
     "json_batch_line(file_json, batch, records, encoding) -> str | None: jsonout.batch_line for a plain "
     "view (encoding 0 base64, 1 hex, 2 utf8); None when the Python writer must do it."},
    {"crc32c", kd_crc32c, METH_VARARGS, "crc32c(data, value=0) -> CRC-32C (Castagnoli) of data."},
    {"find_candidate", (PyCFunction)(void (*)(void))kd_find_candidate, METH_FASTCALL,
     "find_candidate(buf, pos, end, top) -> int: the resync's next candidate position, or -1."},
    {"watch_mapping", kd_watch_mapping, METH_VARARGS,
     "watch_mapping(mapping, path_bytes) -> slot | None: name the file if a read of the mapping raises SIGBUS."},
    {"unwatch_mapping", kd_unwatch_mapping, METH_O, "unwatch_mapping(slot): the mapping is about to close."},
    {"catch_sigbus", kd_catch_sigbus, METH_NOARGS,
     "catch_sigbus() -> bool: on SIGBUS, write one located error line and exit with status 3."},
    {"_crc32c_sw", kd_crc32c_sw, METH_VARARGS, "crc32c without hardware acceleration (for tests)."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef kd_module = {
    PyModuleDef_HEAD_INIT, "kdump._speedups",
    "Optional C accelerators for kdump's hot loops (the pure-Python code is the reference).",
    -1, kd_methods, NULL, NULL, NULL, NULL,
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
