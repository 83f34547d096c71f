/* text_item, text_v2_run, text_legacy_set: the twin of TextDump.item's lines in
 * kdump/render/text.py (item_lines: batch_line, record_line; check/gaps.py follow) with the
 * plain payload views of kdump/decoders/views.py (utf8 as kdump/format/javautf8.py decodes
 * it, in javautf8.c; hex, base64, int, long; escaped or not).
 *
 * One renderer (draw_batch: the batch line, then put_record_line for each record the one
 * record iterator, kd_records, gives), whatever the records are read from: Record objects,
 * a v2 records section, a legacy inner set. It appends one batch's lines, each ended by
 * "\n", as UTF-8 to a bytearray, and follows the record offsets as kdump.check.gaps.follow
 * does. It returns None, leaving the bytearray and the gap list as they were, for anything it
 * does not write: a control record, a field that is not an exact int within int64 where
 * Python formats an int, a timestamp type without a name. The caller then takes the Python
 * path.
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


#define PUT KD_PUT

/* A key or value as PayloadView._one_text shows it (IntegerDecoder and LongDecoder: the
 * first 4 or 8 bytes, big-endian; fewer is kdump's "<decode failed: ...>"). */
static char *
put_payload(char *w, const unsigned char *s, Py_ssize_t n, int kind, int escape)
{
    switch (kind) {
    case K_HEX:
        return kd_put_hex(w, s, n);
    case K_BASE64:
        return kd_put_base64(w, s, n);
    case K_INT:
    case K_LONG: {
        int size = kind == K_INT ? 4 : 8;
        if (n < size) {
            w = kd_put_str(w, kind == K_INT ? "<decode failed: int decoder needs 4 bytes, got "
                                            : "<decode failed: long decoder needs 8 bytes, got ");
            w = kd_put_i64(w, n);
            *w++ = '>';
            return w;
        }
        return kd_put_i64(w, kind == K_INT ? (int64_t)(int32_t)be32(s) : (int64_t)be64(s));
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

/* Room a record's line may take: its payloads, its header keys (4 bytes a byte and 4), the rest. */
static inline Py_ssize_t
record_room(const kd_record *r)
{
    return 400 + payload_room(r->klen) + payload_room(r->vlen) + 4 * r->hbytes + 5 * r->hcount;
}

/* ------------------------------------------------------------------------------------ */
/* Lines                                                                                 */
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

/* ``label`` and f"{x}" of a field Python formats as it is: an exact int64 here, None as
 * "None"; NULL (not ours). */
static inline char *
put_field(char *w, const char *label, PyObject *x)
{
    int64_t v;
    w = kd_put_str(w, label);
    if (x == Py_None) {
        PUT(w, "None");
        return w;
    }
    return exact_i64(x, &v) < 0 ? NULL : kd_put_i64(w, v);
}

/* The integer fields that open a v2 batch's line, in DumpLogSegments' order. */
#define V2_INT_FIELDS 8
#define LABEL(s) {s, sizeof(s) - 1}
static const struct { const char *text; size_t len; } v2_int_labels[V2_INT_FIELDS] = {
    LABEL("baseOffset: "), LABEL(" lastOffset: "), LABEL(" count: "), LABEL(" baseSequence: "),
    LABEL(" lastSequence: "), LABEL(" producerId: "), LABEL(" producerEpoch: "), LABEL(" partitionLeaderEpoch: "),
};

/* A v2 batch's line from its Batch fields ``v`` (v[BF_CRC_VALID] 0 or 1),
 * "\n" included; NULL where Python's int would pass int64 (the last sequence). Room: 640 bytes. */
static char *
put_v2_batch_line(char *w, const int64_t *v)
{
    int64_t base_offset = v[BF_BASE_OFFSET], last_offset = v[BF_LAST_OFFSET], base_seq = v[BF_BASE_SEQUENCE],
            attributes = v[BF_ATTRIBUTES];
    int64_t last_seq = -1;
    if (base_seq >= 0) {
        int64_t delta;
        if (sub_overflows(last_offset, base_offset, &delta) || sequence_at(base_seq, delta, &last_seq))
            return NULL;
    }
    const int64_t ints[V2_INT_FIELDS] = {base_offset, last_offset, v[BF_COUNT], base_seq, last_seq,
                                         v[BF_PRODUCER_ID], v[BF_PRODUCER_EPOCH], v[BF_PARTITION_LEADER_EPOCH]};
    for (int i = 0; i < V2_INT_FIELDS; i++) {
        memcpy(w, v2_int_labels[i].text, v2_int_labels[i].len);
        w = kd_put_i64(w + v2_int_labels[i].len, ints[i]);
    }
    w = kd_put_str(w, attributes & TRANSACTIONAL_FLAG ? " isTransactional: true" : " isTransactional: false");
    w = kd_put_str(w, attributes & CONTROL_FLAG ? " isControl: true" : " isControl: false");
    PUT(w, " deleteHorizonMs: ");
    if (attributes & DELETE_HORIZON_FLAG) {
        PUT(w, "OptionalLong[");
        w = kd_put_i64(w, v[BF_BASE_TIMESTAMP]);
        *w++ = ']';
    } else {
        PUT(w, "OptionalLong.empty");
    }
    PUT(w, " position: ");
    w = kd_put_i64(w, v[BF_POSITION]);
    w = kd_put_str(w, attributes & TIMESTAMP_TYPE_MASK ? " LogAppendTime: " : " CreateTime: ");
    w = kd_put_i64(w, v[BF_MAX_TIMESTAMP]);
    PUT(w, " size: ");
    w = kd_put_i64(w, v[BF_SIZE]);
    PUT(w, " magic: 2 compresscodec: ");
    w = kd_put_str(w, kd_codec_names[attributes & COMPRESSION_MASK]);
    PUT(w, " crc: ");
    w = kd_put_i64(w, v[BF_CRC]);
    w = kd_put_str(w, v[BF_CRC_VALID] ? " isvalid: true\n" : " isvalid: false\n");
    return w;
}

/* The batch line of a Batch (text.batch_line), "\n" included; NULL: not ours. Room: 640 bytes. */
static char *
put_batch_line(char *w, PyObject *b)
{
    if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != BATCH_FIELDS)
        return NULL;
    PyObject *const *f = ((PyTupleObject *)b)->ob_item;
    int64_t magic, attributes;
    PyObject *valid = f[BF_CRC_VALID];
    if (exact_i64(f[BF_MAGIC], &magic) < 0 || exact_i64(f[BF_ATTRIBUTES], &attributes) < 0 ||
        (valid != Py_True && valid != Py_False))
        return NULL;
    if (magic >= 2) {
        int64_t v[BATCH_FIELDS];
        return batch_values(b, v) < 0 ? NULL : put_v2_batch_line(w, v);    /* a field None: Python's line */
    }
    const char *ts = magic == 0 ? " NoTimestampType: " : attributes & TIMESTAMP_TYPE_MASK ? " LogAppendTime: " : " CreateTime: ";
    if ((w = put_field(w, "offset: ", f[BF_LAST_OFFSET])) == NULL || (w = put_field(w, " position: ", f[BF_POSITION])) == NULL ||
        (w = put_field(w, ts, f[BF_MAX_TIMESTAMP])) == NULL || (w = put_field(w, " size: ", f[BF_SIZE])) == NULL)
        return NULL;
    PUT(w, " magic: ");
    w = kd_put_i64(w, magic);
    PUT(w, " compresscodec: ");
    w = kd_put_str(w, kd_codec_names[attributes & COMPRESSION_MASK]);
    if ((w = put_field(w, " crc: ", f[BF_CRC])) == NULL)
        return NULL;
    w = kd_put_str(w, valid == Py_True ? " isvalid: true\n" : " isvalid: false\n");
    return w;
}

/* One record's line (text.record_line with PayloadView.text's key and payload): the one text
 * record renderer. Room: record_room's. */
static char *
put_record_line(char *w, const kd_record *r, int mode)
{
    int escape = (mode & M_ESCAPE) != 0;
    if (mode & M_METADATA) {
        PUT(w, "| offset: ");
        w = kd_put_i64(w, r->offset);
        w = kd_put_str(w, r->ts_type == 1 ? " LogAppendTime: " : r->ts_type == 0 ? " CreateTime: " : " NoTimestampType: ");
        w = kd_put_i64(w, r->timestamp);
        PUT(w, " keySize: ");
        w = kd_put_i64(w, r->key == NULL ? -1 : r->klen);
        PUT(w, " valueSize: ");
        w = kd_put_i64(w, r->value == NULL ? -1 : r->vlen);
        if (r->magic >= 2) {
            PUT(w, " sequence: ");
            w = kd_put_i64(w, r->sequence);
            PUT(w, " headerKeys: [");
            kd_header h = {r->headers, -1, NULL, NULL, 0, 0};
            while (kd_next_header(r, &h)) {
                if (h.index)
                    *w++ = ',';
                /* header keys are a client's names: escaped as keys and values are (text.py record_line) */
                w = put_java_utf8(w, h.key, h.klen, escape);
            }
            *w++ = ']';
        } else {
            w = kd_put_str(w, r->crc_ok ? " isValid: true crc: " : " isValid: false crc: ");
            w = kd_put_i64(w, r->crc);
        }
    }
    if (mode & M_DATA) {
        const char *prefix = mode & M_METADATA ? " " : "| ";
        if (r->key != NULL) {
            w = kd_put_str(w, prefix);
            PUT(w, "key: ");
            w = put_payload(w, r->key, r->klen, (mode >> KIND_SHIFT_KEY) & KIND_MASK, escape);
            prefix = " ";
        }
        if (r->value != NULL) {
            w = kd_put_str(w, prefix);
            PUT(w, "payload: ");
            w = put_payload(w, r->value, r->vlen, (mode >> KIND_SHIFT_VALUE) & KIND_MASK, escape);
        }
    }
    *w++ = '\n';
    return w;
}

/* ------------------------------------------------------------------------------------ */
/* The renderer                                                                          */
/* ------------------------------------------------------------------------------------ */

/* One batch drawn at the end of ``o``: its line (from its fields ``v``, else from the Batch
 * ``batch``) unless M_RECORDS_ONLY, then a line for each record ``it`` gives (none: NULL), the
 * offsets taken by ``f``. 1 drawn, 0 not ours (the caller goes back), -1 error set. */
static int
draw_batch(kd_out *o, PyObject *batch, const int64_t *v, kd_records *it, int mode, kd_offsets *f)
{
    if (!(mode & M_RECORDS_ONLY)) {
        if (kd_out_reserve(o, 640) < 0)
            return -1;
        char *w = v != NULL ? put_v2_batch_line(o->p + o->len, v) : put_batch_line(o->p + o->len, batch);
        if (w == NULL)
            return 0;
        o->len = w - o->p;
    }
    if (it == NULL)
        return 1;
    kd_record r;
    int rc;
    while ((rc = kd_records_next(it, &r)) > 0) {
        if ((mode & M_METADATA) && r.ts_type > 1)
            return 0;           /* a timestamp type without a name: Python's */
        int taken = kd_offsets_take(f, r.offset);
        if (taken != 0)
            return taken < 0 ? -1 : 0;
        if (kd_out_reserve(o, record_room(&r)) < 0)
            return -1;
        o->len = put_record_line(o->p + o->len, &r, mode) - o->p;
    }
    return rc < 0 ? 0 : 1;
}

/* ------------------------------------------------------------------------------------ */
/* The entry points: where the records come from                                        */
/* ------------------------------------------------------------------------------------ */

/* The offsets a text writer takes: into ``gaps`` (a list) from ``last``; None: ``stop`` or not. */
static kd_offsets
text_offsets(PyObject *gaps, int64_t last, int stop)
{
    kd_offsets f = {gaps == Py_None ? NULL : gaps, gaps == Py_None && stop, 0, 0, last};
    return f;
}

/* Ends a call: o's lines appended to ``out`` if ``rc`` says drawn (1), else the offsets
 * taken since ``m`` given back; the buffer returned. Returns rc, -1 if the append failed. */
static int
finish(kd_out *o, PyObject *out, int rc, kd_offsets *f, const kd_offsets_mark *m)
{
    if (rc > 0 && kd_out_append_to(o, out) < 0)
        rc = -1;
    if (rc <= 0)
        kd_offsets_undo(f, m);
    kd_out_end(o);
    return rc;
}

PyObject *
kd_text_item(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    PyObject *out, *batch, *records, *last_obj, *gaps;
    long mode;
    if (kd_args(args, nargs, "text_item(out: bytearray, batch, records, mode, last, gaps)", "AOOlOO", &out, &batch,
                &records, &mode, &last_obj, &gaps) < 0)
        return NULL;
    int64_t last;
    if (text_args(mode, gaps, last_obj, &last) < 0 || (records != Py_None && !PyList_Check(records)))
        Py_RETURN_NONE;
    kd_records it;
    if (records != Py_None)
        kd_records_of_objects(&it, ((PyListObject *)records)->ob_item, PyList_GET_SIZE(records));
    kd_offsets f = text_offsets(gaps, last, 0);
    kd_offsets_mark m = kd_offsets_here(&f);
    kd_out o;
    kd_out_begin(&o);
    int rc = finish(&o, out, draw_batch(&o, batch, NULL, records == Py_None ? NULL : &it, (int)mode, &f), &f, &m);
    if (rc < 0)
        return NULL;
    if (rc == 0)
        Py_RETURN_NONE;
    return gaps == Py_None ? Py_NewRef(last_obj) : PyLong_FromLongLong(f.prev);
}

/* (first, last) of the offsets a call took, None for none. */
static PyObject *
taken(const kd_offsets *f, Py_ssize_t pos, int with_pos)
{
    if (with_pos)
        return f->seen ? Py_BuildValue("(nLL)", pos, (long long)f->first, (long long)f->prev)
                       : Py_BuildValue("(nOO)", pos, Py_None, Py_None);
    return f->seen ? Py_BuildValue("(LL)", (long long)f->first, (long long)f->prev) : Py_NewRef(Py_None);
}

/* draw_batch as kd_run_write calls it, ``ctx`` the mode. */
static int
run_batch(kd_out *o, const int64_t *v, kd_records *it, kd_offsets *f, void *ctx)
{
    return draw_batch(o, NULL, v, it, *(const int *)ctx, f);
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
    PyObject *out, *last_obj, *gaps;
    long mode;
    Py_ssize_t max_batches, max_out;
    kd_run r = {.max_section = PY_SSIZE_T_MAX};
    int got = kd_args(args, nargs, "text_v2_run(out: bytearray, buf, pos, end, max_batches, max_records, mode, last, "
                      "gaps, max_out)", "AynnnLlOOn", &out, &r.view, &r.pos, &r.end, &max_batches, &r.max_records,
                      &mode, &last_obj, &gaps, &max_out);
    if (got < 0)
        return NULL;
    int64_t last;
    if (got > 0 || text_args(mode, gaps, last_obj, &last) < 0) {
        PyBuffer_Release(&r.view);
        return Py_BuildValue("(nOO)", r.pos, Py_None, Py_None);
    }
    r.end = kd_end(&r.view, r.end);
    kd_offsets f = text_offsets(gaps, last, 1);
    kd_offsets_mark run = kd_offsets_here(&f);
    kd_out o;
    kd_out_begin(&o);
    int draw_mode = (int)mode;
    int rc = kd_run_write(&r, &o, &f, max_batches, max_out, 0, run_batch, &draw_mode);
    PyBuffer_Release(&r.view);
    if (finish(&o, out, rc, &f, &run) < 0)
        return NULL;
    PyObject *result = taken(&f, r.pos, 1);
    if (result == NULL)
        kd_offsets_undo(&f, &run);
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
    PyObject *out, *batch, *data, *lat_obj, *last_obj, *gaps;
    long mode;
    if (kd_args(args, nargs, "text_legacy_set(out: bytearray, batch, data, log_append_ts, mode, last, gaps)",
                "AOOOlOO", &out, &batch, &data, &lat_obj, &mode, &last_obj, &gaps) < 0)
        return NULL;
    int64_t last;
    Py_buffer view;
    kd_records it;
    if (text_args(mode, gaps, last_obj, &last) < 0 || kd_records_of_legacy_set(&it, &view, batch, data, lat_obj) < 0)
        Py_RETURN_NONE;
    kd_offsets f = text_offsets(gaps, last, 1);
    kd_offsets_mark m = kd_offsets_here(&f);
    kd_out o;
    kd_out_begin(&o);
    int rc = draw_batch(&o, batch, NULL, &it, (int)(mode & ~M_RECORDS_ONLY), &f);
    rc = finish(&o, out, rc, &f, &m);
    PyBuffer_Release(&view);
    if (rc < 0)
        return NULL;
    if (rc == 0)
        Py_RETURN_NONE;
    PyObject *result = taken(&f, 0, 0);
    if (result == NULL)
        kd_offsets_undo(&f, &m);
    return result;
}
