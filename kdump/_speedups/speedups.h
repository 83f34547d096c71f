/*
 * kdump._speedups.native: optional C versions of kdump's hot loops, one file per Python
 * module it twins (kdump/_accel.py is the switch; module.c lists every function):
 *
 *   crc.c      kdump/format/crc.py       crc32c(data, value=0) -> int, crc32(data) -> int
 *   walk.c     kdump/format/walk.py      scan_v2(buf, pos, end, max_batches) -> (list[Batch], new_pos);
 *                                        v2_hop(buf, pos, end, target) -> pos (entry_at_or_after)
 *   records.c  kdump/format/records.py   decode_v2_records(data, base_offset, base_timestamp,
 *                                          log_append_time, base_sequence, count) -> list[Record] | None,
 *                                        decode_v2_span(data, start, ..., first, take, count)
 *                                          -> (list[Record], next_start) | None
 *                                        (and kd_next_record, the v2 record loop written once, and
 *                                        kd_records, the one record iterator the writers draw from)
 *   legacy.c   kdump/format/legacy.py    decode_legacy_set(data, wrapper_offset, wrapper_magic,
 *                                          log_append_time) -> list[Record] | None,
 *                                        legacy_set_span(data, wrapper_offset, wrapper_magic)
 *                                          -> (first_offset, count) | None,
 *                                        legacy_scan(data, start, end) -> (next, count, first, last) | None
 *              kdump/format/legacy_stream.py legacy_decode_span(data, start, end, base, take,
 *                                          log_append_time) -> (list[Record], next) | None
 *   scan.c     kdump/check/scan.py       scan_plain_run(buf, pos, end, max_batches, hi, max_size,
 *                                          interval, epochs, state) -> (new_pos, state) | None
 *              kdump/check/resync.py     find_candidate(buf, pos, end, top) -> int
 *   segfiles.c kdump/check/clean_segment.py clean_segment_files(log, index, timeindex, base, max_size,
 *                                          interval, max_log, max_side) -> (size, index_size,
 *                                          timeindex_size, first_offset, state, epochs) | None
 *                                        (scan.c's plain run and indexcheck.c's proof over the
 *                                        files it reads: the scan and index checks of a clean segment)
 *   indexcheck.c kdump/check/indexes/offset_index.py index_clean(log, end, base, index, timeindex)
 *                                          -> bool (True: neither file has a finding; False: Python checks)
 *              kdump/check/indexes/time_index.py (the same call: both files against one walk)
 *   info.c     kdump/survey/summary.py             summarize_v2(buf, pos, end, max_batches, size_buckets,
 *                                          producers) -> (new_pos, batches, records, ...)
 *   jsonout.c  kdump/render/jsonout.py   json_batch_line(file_json, batch, records, encoding) -> str | None,
 *                                        json_records(records, encoding) -> str | None,
 *                                        json_v2_line(file_json, batch, data, encoding)
 *                                          -> (str, first_offset, last_offset) | None,
 *                                        json_v2_run(file_json, buf, pos, end, ...)
 *                                          -> (str, new_pos, first, last)
 *                                        json_legacy_line(file_json, batch, data, log_append_ts, encoding)
 *                                          -> (str, first, last) | None
 *   flatout.c  kdump/render/records.py  flat_records(head, tail, batch, records, log_append_ts, encoding,
 *                                          limit) -> (str, count) | None,
 *                                        flat_v2_run(head, file_json, buf, pos, end, max_batches, max_records,
 *                                          encoding, max_out, limit, markers, lso, committed_only)
 *                                          -> (text, new_pos, count)
 *                                        (kdump records' flat objects; the txn of a batch as
 *                                        state/txn_status.py Outcomes.status says it)
 *   avrojson.c kdump/schemas/avro_text.py avro_json(program, data, pos, limit) -> (json_text, end) | None
 *   text.c     kdump/render/text.py      text_item(out, batch, records, mode, last, gaps) -> int | None,
 *                                        text_v2_run(out, buf, pos, end, ...) -> (new_pos, first, last),
 *                                        text_legacy_set(out, batch, data, ...) -> (first, last) | None
 *   javautf8.c kdump/format/javautf8.py  put_java_utf8 (for text.c; no Python function of its own)
 *   textout.c  (no Python module)        what the writers share: their output buffer (kd_out), the
 *                                        base64 table; the kd_put_* helpers are below
 *   sigbus.c   kdump/storage/mapped.py  watch_mapping(mapping, path) -> slot | None,
 *                                        unwatch_mapping(slot), catch_sigbus() -> bool
 *   module.c   the module itself         init(Batch, Record), and this header's shared state
 *
 * The pure-Python code is the reference: these functions must produce exactly what it
 * produces, and hand everything unusual back to it. scan_v2 stops, without consuming, at
 * the first entry it does not like (legacy magic, bad sizes, torn tails, values Python
 * would turn into big ints); the decoders return None on any malformation so that the
 * Python decoder reruns and raises its precise error. Every read is bounds-checked
 * against the buffer length. tests/speedups/ proves each function equal to its twin.
 */
#ifndef KDUMP_SPEEDUPS_H
#define KDUMP_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* The producer sequence delta records on from seq, wrapping within 0..2^31-1; -1 stays -1
 * (the twin of kdump/model.py sequence_at). Nonzero: the sum is beyond int64 (not ours). */
static inline int
sequence_at(int64_t seq, int64_t delta, int64_t *out)
{
    if (seq < 0) {
        *out = -1;
        return 0;
    }
    if (add_overflows(seq, delta, out))
        return 1;
    *out &= 0x7FFFFFFF;
    return 0;
}

/* a + b as a Java long: wraps past int64 (the twin of kdump/format/javalong.py long_add). */
static inline int64_t
long_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
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
/* The v2 batch layout (kdump/format/batch.py)                                          */
/* ------------------------------------------------------------------------------------ */

#define LOG_OVERHEAD 12
#define HEADER_UP_TO_MAGIC 17
#define RECORD_BATCH_OVERHEAD 61
#define ATTRIBUTES_OFFSET 21

/* Batch attributes (kdump/model.py); magic 0/1 messages share the low four bits. */
#define COMPRESSION_MASK 0x07
#define TIMESTAMP_TYPE_MASK 0x08
#define TRANSACTIONAL_FLAG 0x10
#define CONTROL_FLAG 0x20
#define DELETE_HORIZON_FLAG 0x40

/* Every entry point's arguments, one letter of ``format`` each (module.c): O an object,
 * A a bytearray, n a Py_ssize_t, L a long long, l a long, Y a flat buffer (a Py_buffer *),
 * y one that may not be: then it is left empty (obj and buf NULL, safe to release) and 1 is
 * returned, the caller's "not mine". A count or kind that is off raises TypeError with
 * ``usage``. 0 or 1, or -1 with an exception set and no buffer held. */
int kd_args(PyObject *const *args, Py_ssize_t nargs, const char *usage, const char *format, ...);
/* kd_args's y alone: ``o``'s flat buffer held in ``view`` (0), or, if it has none, the view
 * left empty (obj and buf NULL, safe to release) and 1, no exception set. */
int kd_buffer(PyObject *o, Py_buffer *view);

/* 0, or -1 with an exception set when init() has not given the C code the class ``t``. */
static inline int
kd_initialised(const PyTypeObject *t)
{
    if (t != NULL)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "kdump._speedups.init() was not called");
    return -1;
}

/* A log_append_time argument: None (made NULL: the records' own times) or an int; -1 (no
 * exception set) for anything else. */
static inline int
kd_lat_arg(PyObject **lat)
{
    if (*lat == Py_None)
        *lat = NULL;
    return *lat == NULL || PyLong_Check(*lat) ? 0 : -1;
}

/* Where a walk over a buffer may read to: ``end`` clamped to the buffer. */
static inline Py_ssize_t
kd_end(const Py_buffer *view, Py_ssize_t end)
{
    return end > view->len ? view->len : end;
}

/* An int64 from a Python int; 0 on success, -1 (no exception set) if not an int64. */
static inline int
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

/* An exact int within int64 (bool and other subclasses print differently): 0, else -1 with
 * no exception set. */
static inline int
exact_i64(PyObject *x, int64_t *out)
{
    if (!PyLong_CheckExact(x))
        return -1;
#if PY_VERSION_HEX < 0x030C0000 && !defined(Py_LIMITED_API)
    /* Before 3.12 an int of one 30-bit digit (most fields) is its size and that digit:
     * read it without the general conversion's call. */
    Py_ssize_t size = Py_SIZE(x);
    if (size >= -1 && size <= 1) {
        *out = size * (int64_t)((PyLongObject *)x)->ob_digit[0];
        return 0;
    }
#endif
    return as_int64(x, out);
}

/* ------------------------------------------------------------------------------------ */
/* CRCs (crc.c)                                                                          */
/* ------------------------------------------------------------------------------------ */

/* The raw CRC-32C register update, software or SSE4.2 (chosen by crc_init). */
extern uint32_t (*crc_raw)(uint32_t, const unsigned char *, size_t);
extern const char *crc_impl_name;
void crc_init(void);

static inline uint32_t
crc32c_value(uint32_t value, const unsigned char *p, size_t n)
{
    return ~crc_raw(~value, p, n);
}

/* The IEEE CRC-32 of p[0:n], finished (what zlib.crc32(data) returns). */
uint32_t crc32_ieee(const unsigned char *p, size_t n);

/* ------------------------------------------------------------------------------------ */
/* The Batch and Record classes, and building their instances                            */
/* ------------------------------------------------------------------------------------ */

/* The fields of kdump.model.Batch and Record, in their order: init() (module.c) refuses
 * classes whose _fields differ from the names module.c gives these. */
enum {
    BF_POSITION, BF_BASE_OFFSET, BF_LAST_OFFSET, BF_COUNT, BF_SIZE, BF_MAGIC, BF_CRC, BF_CRC_VALID,
    BF_ATTRIBUTES, BF_PARTITION_LEADER_EPOCH, BF_BASE_TIMESTAMP, BF_MAX_TIMESTAMP, BF_PRODUCER_ID,
    BF_PRODUCER_EPOCH, BF_BASE_SEQUENCE, BATCH_FIELDS
};
enum {
    RF_OFFSET, RF_TIMESTAMP, RF_TIMESTAMP_TYPE, RF_KEY, RF_VALUE, RF_HEADERS, RF_SEQUENCE, RF_CONTROL,
    RF_MAGIC, RF_CRC, RF_CRC_VALID, RECORD_FIELDS
};

/*
 * The v2 entry at pos as the Walker frames it (kdump/format/walk.py, the one framing every
 * C walk shares: scan_v2, summarize_v2, scan_plain_run, the run writers): 1 when a header
 * with magic 2 starts there, its length covers at least a batch header and the entry ends
 * within end, and base offset + last offset delta stays in int64; ``v`` then holds its
 * Batch fields but crc_valid (kd_v2_crc_valid). 0 for anything else: Python decides.
 */
static inline int
kd_v2_at(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, int64_t *v)
{
    if (pos < 0 || end - pos <= HEADER_UP_TO_MAGIC)
        return 0;
    const unsigned char *h = buf + pos;
    int32_t length = (int32_t)be32(h + 8);
    if (h[16] != 2 || (int64_t)length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD ||
        (int64_t)length + LOG_OVERHEAD > (int64_t)(end - pos))
        return 0;
    /* From here the whole entry, header included, lies inside [pos, end). */
    if (add_overflows((int64_t)be64(h), (int32_t)be32(h + 23), &v[BF_LAST_OFFSET]))
        return 0;
    v[BF_POSITION] = pos;
    v[BF_BASE_OFFSET] = (int64_t)be64(h);
    v[BF_COUNT] = (int32_t)be32(h + 57);
    v[BF_SIZE] = (int64_t)length + LOG_OVERHEAD;
    v[BF_MAGIC] = 2;
    v[BF_CRC] = be32(h + 17);
    v[BF_ATTRIBUTES] = be16s(h + 21);
    v[BF_PARTITION_LEADER_EPOCH] = (int32_t)be32(h + 12);
    v[BF_BASE_TIMESTAMP] = (int64_t)be64(h + 27);
    v[BF_MAX_TIMESTAMP] = (int64_t)be64(h + 35);
    v[BF_PRODUCER_ID] = (int64_t)be64(h + 43);
    v[BF_PRODUCER_EPOCH] = be16s(h + 51);
    v[BF_BASE_SEQUENCE] = (int32_t)be32(h + 53);
    return 1;
}

/* Whether the CRC-32C over attributes..end of the entry kd_v2_at framed is its stored one.
 * With ``may_release``, the GIL is let go around a long one (the caller holds it). */
static inline int
kd_v2_crc_valid(const unsigned char *buf, const int64_t *v, int may_release)
{
    const unsigned char *start = buf + v[BF_POSITION] + ATTRIBUTES_OFFSET;
    size_t n = (size_t)(v[BF_SIZE] - ATTRIBUTES_OFFSET);
    uint32_t computed;
    if (may_release && (Py_ssize_t)n >= KD_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        computed = crc32c_value(0, start, n);
        Py_END_ALLOW_THREADS
    } else {
        computed = crc32c_value(0, start, n);
    }
    return computed == (uint32_t)v[BF_CRC];
}

/* The plain v2 batch at pos for the run writers (walk.c): 1 and its Batch fields in v, or 0. */
int kd_plain_v2_at(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, int64_t max_records, int64_t *v);

/* A Batch's fields as int64s in v (crc_valid 0 or 1): 0, or -1 (no exception set) when it
 * is not a Batch-sized tuple of exact ints and a bool (Python writes that one). */
static inline int
batch_values(PyObject *batch, int64_t *v)
{
    if (!PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) != BATCH_FIELDS)
        return -1;
    PyObject *const *f = &PyTuple_GET_ITEM(batch, 0);
    for (int i = 0; i < BATCH_FIELDS; i++) {
        if (i != BF_CRC_VALID && exact_i64(f[i], &v[i]) < 0)
            return -1;
    }
    if (f[BF_CRC_VALID] != Py_True && f[BF_CRC_VALID] != Py_False)
        return -1;
    v[BF_CRC_VALID] = f[BF_CRC_VALID] == Py_True;
    return 0;
}

extern PyTypeObject *BatchType;     /* kdump.model.Batch, given by init() */
extern PyTypeObject *RecordType;    /* kdump.model.Record */
extern PyObject *empty_tuple;
extern PyObject *int_two;           /* the magic of every v2 record */

/*
 * An instance of the tuple subclass ``tp`` holding ``items`` (references stolen, also on
 * failure): what ``tuple.__new__(tp, items)`` builds. Every item is an int, bool, bytes, None
 * or a tuple of those, so the result can never be part of a cycle: it is untracked at once, as
 * the collector would do on its first pass anyway.
 *
 * Up to Python 3.13 it is filled in place, as tuple's own subclass constructor does (the
 * type's tp_alloc, then PyTuple_SET_ITEM): through tuple.__new__, which builds a plain tuple
 * first and copies it, the text listing of 64 MB of 1-record batches took 6% more CPU
 * (0.624 s against 0.579 s) and the NDJSON dump 3% more (A/B, interleaved, 2026-11-27). From
 * 3.14 a tuple caches its hash in a field tp_alloc leaves at 0, so there it goes through
 * tuple.__new__, writing no field of the tuple itself.
 */
static inline PyObject *
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
#if PY_VERSION_HEX < 0x030E0000
    PyObject *obj = tp->tp_alloc(tp, n);
    if (obj == NULL) {
        for (i = 0; i < n; i++)
            Py_DECREF(items[i]);
        return NULL;
    }
    for (i = 0; i < n; i++)
        PyTuple_SET_ITEM(obj, i, items[i]);
#else
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
    if (obj == NULL)
        return NULL;
#endif
    if (PyObject_GC_IsTracked(obj))
        PyObject_GC_UnTrack(obj);
    return obj;
}

/* ------------------------------------------------------------------------------------ */
/* The one record iterator the writers draw from (records.c)                             */
/* ------------------------------------------------------------------------------------ */

/* A record as the writers see it, whatever it was read from: a Record object, a v2 record
 * read in place, a legacy message read in place. Keys, values and headers point into the
 * source (NULL: null). */
typedef struct {
    int64_t offset, timestamp, sequence, crc;
    int ts_type, magic, crc_ok;             /* ts_type -1, 0 or 1; crc and crc_ok: magic 0 and 1 */
    const unsigned char *key, *value;
    Py_ssize_t klen, vlen;
    Py_ssize_t hcount, hbytes;              /* headers, and the bytes of all their keys and values */
    const unsigned char *headers;           /* read in place: the first header's bytes */
    PyObject *const *header_pairs;          /* a Record's: its (key, value) tuples */
} kd_record;

/* A record's headers one after another: start with {r->headers, -1}; each kd_next_header
 * call gives the next (its index, key and value, NULL: null) and 1, or 0 after the last. */
typedef struct {
    const unsigned char *p;
    Py_ssize_t index;
    const unsigned char *key, *value;
    Py_ssize_t klen, vlen;
} kd_header;

int kd_next_header(const kd_record *r, kd_header *h);

/* The records of one batch, or of a slice of one, from one of three sources. */
typedef struct {
    int kind;                               /* KD_FROM_OBJECTS, KD_FROM_V2, KD_FROM_LEGACY */
    PyObject *const *objects;               /* Record objects */
    const unsigned char *d;                 /* v2 records section or legacy inner set */
    Py_ssize_t p, end;
    int64_t left;                           /* records still to give */
    int64_t base_offset, base_ts, base_seq, lat;
    int has_lat;                            /* LogAppendTime: every timestamp is ``lat`` */
} kd_records;

enum { KD_FROM_OBJECTS, KD_FROM_V2, KD_FROM_LEGACY };

/* The records of a list or tuple of Record objects. */
void kd_records_of_objects(kd_records *it, PyObject *const *items, Py_ssize_t n);
/* The records of the v2 batch of Batch fields ``v`` from its records section d[0:end]
 * (decompressed if it was): 0, or -1 when its count cannot be (each record takes 7 bytes). */
int kd_records_of_v2(kd_records *it, const unsigned char *d, Py_ssize_t end, const int64_t *v);
/* The ``n`` messages of a legacy inner set kd_legacy_check passed (``base`` its offsets' base). */
void kd_records_of_legacy(kd_records *it, const unsigned char *d, int64_t base, Py_ssize_t n, const int64_t *lat);
/* The writers' legacy entry points: the records a legacy wrapper ``batch`` (a Batch) holds in
 * its decompressed inner set ``data``, held in ``view`` (``lat_obj``: the wrapper's
 * LogAppendTime, None: the messages' own). 0, or -1 (no exception set, nothing held) when
 * they are not what the writers take. */
int kd_records_of_legacy_set(kd_records *it, Py_buffer *view, PyObject *batch, PyObject *data, PyObject *lat_obj);

/* The run writers' walk (text_v2_run, json_v2_run): the plain v2 batches (kd_plain_v2_at)
 * from ``pos`` of ``view`` on, one after another, whose records section is at most
 * ``max_section`` bytes. */
typedef struct {
    Py_buffer view;
    Py_ssize_t pos, end, max_section;
    long long max_records;
    int64_t v[BATCH_FIELDS];                /* the batch at pos, once kd_run_next said 1 */
} kd_run;

/* The batch at r->pos (r->v) and its records (``it``): 1, or 0 where the run stops. The
 * caller steps r->pos past a batch it took. */
int kd_run_next(kd_run *r, kd_records *it);
/* The next record: 1 with ``r`` filled in, 0 at the end (a v2 section consumed exactly), -1
 * when the rest is not the writers' (malformed, or an object only Python writes). */
int kd_records_next(kd_records *it, kd_record *r);

/* One v2 record read in place from d[*pos], ``end`` the section's end, as decode_v2_records
 * would make it (the v2 record loop: every C reader of records goes through it): 0, or -1
 * where the Python decoder raises (or would make an int beyond int64). */
int kd_next_record(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, int64_t base_offset, int64_t base_ts,
                   const int64_t *log_append_ts, int64_t base_seq, kd_record *r);

/* A message of a legacy wrapper's inner set read in place (legacy.c): kd_legacy_check the
 * whole set first, then kd_legacy_next message by message. */
int kd_legacy_check(const unsigned char *d, Py_ssize_t end, int64_t wrapper_offset, int wrapper_magic,
                    int64_t *base, Py_ssize_t *count);
void kd_legacy_next(const unsigned char *d, Py_ssize_t *p, int64_t base, const int64_t *log_append_ts,
                    kd_record *r);

/* A UTF-8 lead byte's sequence, by Unicode's table of well-formed byte sequences: how many
 * bytes it takes (1: the byte starts none, 80..C1 and F5..FF) and the range of its second
 * byte, which rules out overlong forms, surrogates and anything above U+10FFFF. */
static inline int
kd_utf8_lead(unsigned c, unsigned *lo2, unsigned *hi2)
{
    *lo2 = 0x80;
    *hi2 = 0xBF;
    if (c < 0xC2 || c > 0xF4)
        return 1;
    if (c == 0xE0)
        *lo2 = 0xA0;
    else if (c == 0xED)
        *hi2 = 0x9F;
    else if (c == 0xF0)
        *lo2 = 0x90;
    else if (c == 0xF4)
        *hi2 = 0x8F;
    return c <= 0xDF ? 2 : c <= 0xEF ? 3 : 4;
}

/* Whether ``offset`` follows ``prev`` (check/gaps.py follow; nothing follows int64's end). */
static inline int
kd_follows(int64_t prev, int64_t offset)
{
    return prev != INT64_MAX && offset == prev + 1;
}

/* The offsets a writer takes, one after another (check/gaps.py follow): with a ``gaps`` list,
 * each that does not follow the one before goes into it as (prev, offset); without one, such
 * an offset ``stop``s the writer (the caller's gap report sees it), or (stop 0) is let be. */
typedef struct {
    PyObject *gaps;                         /* a list, or NULL */
    int stop;
    int seen;                               /* whether an offset was taken: ``first`` .. ``prev`` */
    int64_t first, prev;                    /* prev: the last taken, at first the one before (gaps) */
} kd_offsets;

/* (prev, offset) appended to f->gaps: 0, or -1 with an exception set. */
int kd_offsets_gap(kd_offsets *f, int64_t offset);

/* Takes ``offset``: 0, 1 when it stops the writer (nothing taken), -1 with an exception set. */
static inline int
kd_offsets_take(kd_offsets *f, int64_t offset)
{
    if (f->gaps != NULL) {
        if (!kd_follows(f->prev, offset) && kd_offsets_gap(f, offset) < 0)
            return -1;
    } else if (f->stop && f->seen && !kd_follows(f->prev, offset)) {
        return 1;
    }
    if (!f->seen) {
        f->seen = 1;
        f->first = offset;
    }
    f->prev = offset;
    return 0;
}

/* A writer's state to go back to (kd_offsets_undo) when what it began to write is not its own. */
typedef struct {
    kd_offsets saved;
    Py_ssize_t gaps_len;
} kd_offsets_mark;

static inline kd_offsets_mark
kd_offsets_here(const kd_offsets *f)
{
    kd_offsets_mark m = {*f, f->gaps != NULL ? PyList_GET_SIZE(f->gaps) : 0};
    return m;
}

static inline void
kd_offsets_undo(kd_offsets *f, const kd_offsets_mark *m)
{
    *f = m->saved;
    if (f->gaps != NULL && PyList_GET_SIZE(f->gaps) > m->gaps_len) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);      /* (the list is ours: this cannot fail) */
        PyList_SetSlice(f->gaps, m->gaps_len, PyList_GET_SIZE(f->gaps), NULL);
        PyErr_Restore(type, value, tb);
    }
}

/* ------------------------------------------------------------------------------------ */
/* Writing text (text.c, jsonout.c, avrojson.c): callers make room first                  */
/* ------------------------------------------------------------------------------------ */

extern const char kd_hex_digits[];          /* "0123456789abcdef" */
extern const char kd_base64_alphabet[];
extern const char *const kd_codec_names[8]; /* by the compression bits: "none", "gzip", ... */
extern uint16_t kd_base64_pairs[4096];      /* base64's two characters for each 12 bits */
void kd_text_init(void);

/* The writers' one growing buffer, kept between calls (the GIL serialises them). */
typedef struct {
    char *p;
    Py_ssize_t len, cap;
} kd_out;

void kd_out_begin(kd_out *o);               /* empty, on the kept memory */
int kd_out_reserve(kd_out *o, Py_ssize_t extra);   /* room for extra more bytes; -1 with MemoryError set */
void kd_out_end(kd_out *o);                 /* gives the memory back (freed when a call made it huge) */

/* Copies o's bytes to the end of the bytearray ``out``: 0, or -1 with an exception set. */
int kd_out_append_to(const kd_out *o, PyObject *out);

/* A run writer's hand for one batch (text.c draw_batch, jsonout.c put_line): > 0 written,
 * 0 not its own, -1 with an exception set. */
typedef int (*kd_batch_writer)(kd_out *o, const int64_t *v, kd_records *it, kd_offsets *f, void *ctx);

/* The run writers' one loop (text_v2_run, json_v2_run): the batches kd_run_next offers from
 * r->pos on, each written by ``write`` (``sep``, unless 0, between two), until one is not
 * taken, after ``max_batches`` or once ``max_out`` bytes are in ``o``. A batch not taken
 * leaves ``o`` and ``f`` as they were before it and r->pos at it (Python takes it from
 * there). 1, or -1 with an exception set. */
int kd_run_write(kd_run *r, kd_out *o, kd_offsets *f, Py_ssize_t max_batches, Py_ssize_t max_out, char sep,
                 kd_batch_writer write, void *ctx);

static inline char *
kd_put_i64(char *w, int64_t v)
{
    char tmp[20];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (v < 0)
        *w++ = '-';
    while (n)
        *w++ = tmp[--n];
    return w;
}

#define KD_PUT(w, lit) (memcpy((w), (lit), sizeof(lit) - 1), (w) += sizeof(lit) - 1)

static inline char *
kd_put_str(char *w, const char *s)
{
    size_t n = strlen(s);
    memcpy(w, s, n);
    return w + n;
}

static inline char *
kd_put_hex(char *w, const unsigned char *s, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        *w++ = kd_hex_digits[s[i] >> 4];
        *w++ = kd_hex_digits[s[i] & 15];
    }
    return w;
}

/* Base64 (RFC 4648, padded) of s[0:n]: 4 characters for each 3 bytes or part of 3. */
static inline char *
kd_put_base64(char *w, const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {        /* two characters a table lookup */
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        memcpy(w, &kd_base64_pairs[v >> 12], 2);
        memcpy(w + 2, &kd_base64_pairs[v & 0xFFF], 2);
        w += 4;
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *w++ = kd_base64_alphabet[v >> 18];
        *w++ = kd_base64_alphabet[(v >> 12) & 63];
        *w++ = '=';
        *w++ = '=';
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8);
        *w++ = kd_base64_alphabet[v >> 18];
        *w++ = kd_base64_alphabet[(v >> 12) & 63];
        *w++ = kd_base64_alphabet[(v >> 6) & 63];
        *w++ = '=';
    }
    return w;
}

/* ------------------------------------------------------------------------------------ */
/* The module's functions, one file each (see the table at the top)                     */
/* ------------------------------------------------------------------------------------ */

PyObject *kd_crc32c(PyObject *self, PyObject *args);
PyObject *kd_crc32c_sw(PyObject *self, PyObject *args);
PyObject *kd_crc32_sw(PyObject *self, PyObject *arg);
PyObject *kd_crc32(PyObject *self, PyObject *arg);
PyObject *kd_scan_v2(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_v2_hop(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_decode_v2_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_decode_v2_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_decode_legacy_set(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_legacy_set_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_legacy_scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_legacy_decode_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_text_legacy_set(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_json_legacy_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_scan_plain_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_clean_segment_files(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* The recovery scanner's state over a run of plain batches (scan.c; _Scan.plain_state's
 * tuple, unpacked): the bounds a plain batch keeps to, IndexStep's fields, the counts. */
struct kd_plain_state {
    int64_t lo, hi, max_size, interval;
    int64_t valid, last_entry_at, prev_epoch, max_ts, max_ts_off, batches, records;
    int64_t index_last, time_ts, time_off, last_epoch;
    int has_index, has_time, has_epoch, time_changed;
};
void kd_plain_state_init(struct kd_plain_state *st, int64_t lo, int64_t hi, int64_t max_size, int64_t interval);
int kd_plain_walk(const unsigned char *buf, Py_ssize_t *at, Py_ssize_t end, Py_ssize_t max_batches,
                  struct kd_plain_state *st, PyObject *epochs);
/* The state as _Scan.plain_state's tuple (``time_before``: the time_last handed in, kept when
 * unchanged; NULL: none). */
PyObject *kd_plain_state_tuple(const struct kd_plain_state *st, PyObject *time_before);
/* indexcheck.c: neither index file (NULL: not there) has a finding against log[0:end]. */
int kd_indexes_clean(const unsigned char *log, Py_ssize_t end, int64_t base, const unsigned char *ix,
                     Py_ssize_t ix_len, const unsigned char *tx, Py_ssize_t tx_len);
PyObject *kd_find_candidate(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_index_clean(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_summarize_v2(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_json_batch_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_avro_json(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

PyObject *kd_text_item(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_text_v2_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_json_v2_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* Java's UTF-8 decoding of s[0:n] written at w as UTF-8, the text view's escapes applied or
 * not; returns the end. Room: 4 bytes a byte, plus 4. java_utf8_init() fills its tables. */
char *put_java_utf8(char *w, const unsigned char *s, Py_ssize_t n, int escape);
void java_utf8_init(void);

PyObject *kd_json_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_flat_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_flat_v2_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_json_v2_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *kd_watch_mapping(PyObject *self, PyObject *args);
PyObject *kd_unwatch_mapping(PyObject *self, PyObject *arg);
PyObject *kd_catch_sigbus(PyObject *self, PyObject *unused);

#endif /* KDUMP_SPEEDUPS_H */
