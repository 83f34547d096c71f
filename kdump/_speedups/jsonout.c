/* json_batch_line, json_records, json_v2_line, json_v2_run, json_legacy_line: the twins of
 * batch_line and records_text in kdump/render/jsonout.py (export/ndjson.py's py_batch_line).
 *
 * The NDJSON line of a batch (v0, v1 or v2) for the plain case (no decoders, no
 * records_error) and its non-control records, payloads in base64, hex or utf8. One renderer
 * (put_line: the batch's fields, then put_record for each record the one record iterator,
 * kd_records, gives), whatever the records are read from: Record objects, a v2 records
 * section, a legacy inner set. It returns None for anything else (control records, a wrapper
 * whose base offset is unknown, values that are not exact ints or bytes, ints beyond int64),
 * and jsonout's Python code, the reference, writes that line instead.
 */

#include "jsonput.h"

/* The JSON writers' common arguments: an ASCII str for the file's JSON, an encoding of ours. */
static inline int
json_args_ok(PyObject *file_json, long encoding)
{
    return PyUnicode_CheckExact(file_json) && PyUnicode_IS_ASCII(file_json) && encoding_ok(encoding);
}

/* The fields of a batch as batch_prefix writes them (file first, then these ...). */
static const char *const batch_keys[] = {
    ",\"position\":", ",\"base_offset\":", ",\"last_offset\":", ",\"count\":", ",\"size\":",
    ",\"magic\":", ",\"crc\":",
};
/* (... crc_valid, compression and timestamp_type, then these) */
static const struct {
    const char *key;
    int field;
} tail_keys[] = {
    {",\"base_timestamp\":", BF_BASE_TIMESTAMP}, {",\"max_timestamp\":", BF_MAX_TIMESTAMP},
    {",\"partition_leader_epoch\":", BF_PARTITION_LEADER_EPOCH}, {",\"producer_id\":", BF_PRODUCER_ID},
    {",\"producer_epoch\":", BF_PRODUCER_EPOCH}, {",\"base_sequence\":", BF_BASE_SEQUENCE},
};

#define BATCH_ROOM 1024           /* the fixed text plus 12 numbers */

/* A batch's fields from its values ``v`` (v[BF_CRC_VALID] 0 or 1). Room: BATCH_ROOM. */
static char *
put_batch_values(char *w, const int64_t *v)
{
    int v2 = v[BF_MAGIC] == 2;
    int64_t attributes = v[BF_ATTRIBUTES];
    for (int i = 0; i < 7; i++) {
        w = kd_put_str(w, batch_keys[i]);
        w = kd_put_i64(w, v[i]);
    }
    w = kd_put_str(w, v[BF_CRC_VALID] ? ",\"crc_valid\":true" : ",\"crc_valid\":false");
    PUT(w, ",\"compression\":\"");
    w = kd_put_str(w, kd_codec_names[attributes & COMPRESSION_MASK]);
    if (v[BF_MAGIC] == 0)
        PUT(w, "\",\"timestamp_type\":\"NoTimestampType\"");
    else if (attributes & TIMESTAMP_TYPE_MASK)
        PUT(w, "\",\"timestamp_type\":\"LogAppendTime\"");
    else
        PUT(w, "\",\"timestamp_type\":\"CreateTime\"");
    for (size_t i = 0; i < sizeof(tail_keys) / sizeof(tail_keys[0]); i++) {
        w = kd_put_str(w, tail_keys[i].key);
        w = kd_put_i64(w, v[tail_keys[i].field]);
    }
    /* legacy messages have none of the v2 flags, whatever their attribute bits say */
    w = kd_put_str(w, v2 && (attributes & TRANSACTIONAL_FLAG) ? ",\"is_transactional\":true" : ",\"is_transactional\":false");
    w = kd_put_str(w, v2 && (attributes & CONTROL_FLAG) ? ",\"is_control\":true" : ",\"is_control\":false");
    PUT(w, ",\"delete_horizon_ms\":");
    if (v2 && (attributes & DELETE_HORIZON_FLAG))
        w = kd_put_i64(w, v[BF_BASE_TIMESTAMP]);
    else
        PUT(w, "null");
    return w;
}

/* Room a record's object may take (record_room's headers: 40 bytes each besides their strings). */
static inline Py_ssize_t
record_room(const kd_record *r)
{
    return 256 + json_room(r->klen) + json_room(r->vlen) + 6 * r->hbytes + 40 * r->hcount;
}

/* One record's object: the one JSON record renderer. Room: record_room's. */
static char *
put_record(char *w, const kd_record *r, int encoding)
{
    PUT(w, "{\"offset\":");
    w = kd_put_i64(w, r->offset);
    PUT(w, ",\"timestamp\":");
    w = kd_put_i64(w, r->timestamp);
    w = kd_json_sizes_sequence(w, r);
    w = kd_json_key_value_headers(w, r, encoding, 1, NULL);
    if (r->magic < 2) {                         /* a legacy record also carries its own crc and crc_valid */
        PUT(w, ",\"crc\":");
        w = kd_put_i64(w, r->crc);
        w = kd_put_str(w, r->crc_ok ? ",\"crc_valid\":true" : ",\"crc_valid\":false");
    }
    *w++ = '}';
    return w;
}

/* ------------------------------------------------------------------------------------ */
/* The renderer                                                                          */
/* ------------------------------------------------------------------------------------ */

/* The objects of the records ``it`` gives, comma-separated, at the end of ``o``, their offsets
 * taken by ``f``: 1 kd_json_written, 0 not ours (the caller goes back), -1 error set. */
static int
put_records(kd_out *o, kd_records *it, int encoding, kd_offsets *f)
{
    kd_record r;
    int rc;
    for (int64_t i = 0; (rc = kd_records_next(it, &r)) > 0; i++) {
        int took = kd_offsets_take(f, r.offset);
        if (took != 0)
            return took < 0 ? -1 : 0;
        if (kd_out_reserve(o, record_room(&r) + 1) < 0)
            return -1;
        char *w = o->p + o->len;
        if (i)
            *w++ = ',';
        o->len = put_record(w, &r, encoding) - o->p;
    }
    return rc < 0 ? 0 : 1;
}

/* A batch line's start, before the file name (export/ndjson.py's _BATCH). */
#define LINE_HEAD "{\"object\":\"batch\",\"file\":"
#define LINE_HEAD_LEN ((Py_ssize_t)sizeof(LINE_HEAD) - 1)

/* One batch's line at the end of ``o``: LINE_HEAD and ``file`` (n bytes), the fields ``v``,
 * the ``"records"`` ``it`` gives (none: no such key), ``}``. 1 kd_json_written, 0 not ours, -1 error set. */
static int
put_line(kd_out *o, const char *file, Py_ssize_t n, const int64_t *v, kd_records *it, int encoding, kd_offsets *f)
{
    if (kd_out_reserve(o, n + BATCH_ROOM + LINE_HEAD_LEN + 16) < 0)
        return -1;
    char *w = o->p + o->len;
    PUT(w, LINE_HEAD);
    memcpy(w, file, (size_t)n);
    w = put_batch_values(w + n, v);
    if (it != NULL) {
        PUT(w, ",\"records\":[");
        o->len = w - o->p;
        int rc = put_records(o, it, encoding, f);
        if (rc <= 0 || kd_out_reserve(o, 2) < 0)
            return rc <= 0 ? rc : -1;
        w = o->p + o->len;
        *w++ = ']';
    }
    *w++ = '}';
    o->len = w - o->p;
    return 1;
}

/* o's bytes as an ASCII str (NULL with an exception set). */
PyObject *
kd_json_ascii_text(const kd_out *o, Py_ssize_t from)
{
    PyObject *text = PyUnicode_New(o->len - from, 127);
    if (text != NULL)
        memcpy(PyUnicode_1BYTE_DATA(text), o->p + from, (size_t)(o->len - from));
    return text;
}

/* What a writer's ``rc`` makes of ``o``, which it ends: its text (rc > 0), None (0: not
 * ours, the Python writer does it), or NULL with the exception set (rc < 0). */
PyObject *
kd_json_written(kd_out *o, int rc)
{
    PyObject *result = rc > 0 ? kd_json_ascii_text(o, 0) : rc == 0 ? Py_NewRef(Py_None) : NULL;
    kd_out_end(o);
    return result;
}

/* ------------------------------------------------------------------------------------ */
/* The entry points: where the records come from                                        */
/* ------------------------------------------------------------------------------------ */

/* json_records(records, encoding) -> str | None: the "records" array's members without the
 * brackets, for a batch kd_json_written a slice of records at a time (render/dump.py JsonDump). The
 * text is ASCII: every payload is base64, hex or \u-escaped. */
PyObject *
kd_json_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    PyObject *records;
    long encoding;
    if (kd_args(args, nargs, "json_records(records, encoding)", "Ol", &records, &encoding) < 0)
        return NULL;
    if (!encoding_ok(encoding) || (!PyList_Check(records) && !PyTuple_Check(records)))
        Py_RETURN_NONE;
    kd_records it;
    kd_records_of_objects(&it, PySequence_Fast_ITEMS(records), PySequence_Fast_GET_SIZE(records));
    kd_offsets f = {NULL, 0, 0, 0, 0};
    kd_out o;
    kd_out_begin(&o);
    return kd_json_written(&o, put_records(&o, &it, (int)encoding, &f));
}

/* json_batch_line(file_json, batch, records, encoding) -> str | None: the line of a batch
 * and its records (None: no "records" key). */
PyObject *
kd_json_batch_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    PyObject *file_json, *batch, *records;
    long encoding;
    if (kd_args(args, nargs, "json_batch_line(file_json, batch, records, encoding)", "OOOl", &file_json, &batch,
                &records, &encoding) < 0)
        return NULL;
    int64_t v[BATCH_FIELDS];
    if (!PyUnicode_CheckExact(file_json) || !encoding_ok(encoding) || line_batch(batch, v) < 0 ||
        (records != Py_None && !PyList_Check(records) && !PyTuple_Check(records)))
        Py_RETURN_NONE;
    kd_records it;
    if (records != Py_None)
        kd_records_of_objects(&it, PySequence_Fast_ITEMS(records), PySequence_Fast_GET_SIZE(records));
    kd_offsets f = {NULL, 0, 0, 0, 0};
    /* An ASCII file name goes straight into the line; any other is joined at the end. */
    int ascii_file = PyUnicode_IS_ASCII(file_json);
    Py_ssize_t n = ascii_file ? PyUnicode_GET_LENGTH(file_json) : 0;
    kd_out o;
    kd_out_begin(&o);
    int rc = put_line(&o, ascii_file ? (const char *)PyUnicode_DATA(file_json) : "", n, v,
                      records == Py_None ? NULL : &it, (int)encoding, &f);
    if (rc <= 0 || ascii_file)
        return kd_json_written(&o, rc);
    PyObject *start = PyUnicode_FromStringAndSize(o.p, LINE_HEAD_LEN);
    PyObject *rest = PyUnicode_FromStringAndSize(o.p + LINE_HEAD_LEN, o.len - LINE_HEAD_LEN);
    PyObject *part = (start && rest) ? PyUnicode_Concat(start, file_json) : NULL;
    PyObject *result = part ? PyUnicode_Concat(part, rest) : NULL;
    Py_XDECREF(start);
    Py_XDECREF(rest);
    Py_XDECREF(part);
    kd_out_end(&o);
    return result;
}

/* The (line, first, last) a line writer returns (first and last None: no record), or None
 * for ``rc`` 0; NULL with an exception set. */
static PyObject *
line_result(kd_out *o, int rc, const kd_offsets *f)
{
    PyObject *result = NULL;
    if (rc > 0) {
        PyObject *line = kd_json_ascii_text(o, 0);
        if (line != NULL)
            result = f->seen ? Py_BuildValue("(NLL)", line, (long long)f->first, (long long)f->prev)
                             : Py_BuildValue("(NOO)", line, Py_None, Py_None);
    }
    kd_out_end(o);
    if (rc == 0)
        Py_RETURN_NONE;
    return result;
}

/*
 * json_v2_line(file_json, batch, data, encoding) -> (line, first_offset, last_offset) | None:
 * the line json_batch_line writes for a non-control v2 batch and the records decode_v2_records
 * would make of its records section ``data`` (decompressed, if it was), kd_json_written from the bytes
 * without making those records (render/dump.py JsonDump). Only where the records' offsets
 * follow one another (first and last then say them all, for the gap report; (None, None):
 * no record); None for anything else, and the usual path writes the line.
 */
PyObject *
kd_json_v2_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    PyObject *file_json, *batch;
    Py_buffer view;
    long encoding;
    int got = kd_args(args, nargs, "json_v2_line(file_json, batch, data, encoding)", "OOyl", &file_json, &batch,
                      &view, &encoding);
    if (got < 0)
        return NULL;
    int64_t v[BATCH_FIELDS];
    kd_records it;
    kd_offsets f = {NULL, 1, 0, 0, 0};
    kd_out o;
    kd_out_begin(&o);
    int rc = 0;
    if (got == 0 && json_args_ok(file_json, encoding) && line_batch(batch, v) == 0 && v[BF_MAGIC] == 2 &&
        !(v[BF_ATTRIBUTES] & CONTROL_FLAG) && kd_records_of_v2(&it, (const unsigned char *)view.buf, view.len, v) == 0)
        rc = put_line(&o, (const char *)PyUnicode_DATA(file_json), PyUnicode_GET_LENGTH(file_json), v, &it,
                      (int)encoding, &f);
    PyBuffer_Release(&view);
    return line_result(&o, rc, &f);
}

/* put_line as kd_run_write calls it, for the file and encoding of ``ctx``. */
typedef struct {
    const char *file;
    Py_ssize_t file_len;
    int encoding;
} line_ctx;

static int
run_line(kd_out *o, const int64_t *v, kd_records *it, kd_offsets *f, void *ctx)
{
    const line_ctx *c = ctx;
    return put_line(o, c->file, c->file_len, v, it, c->encoding, f);
}

/*
 * json_v2_run(file_json, buf, pos, end, max_batches, max_records, max_section, encoding, max_out)
 *   -> (text, new_pos, first, last):
 * the lines json_v2_line writes for the batches the walk and the reader would offer it from
 * ``pos`` on, taken straight from the segment's bytes (no Batch objects), joined by "\n"
 * (text None: none), as long as each is a plain v2 batch (kd_plain_v2_at) of a records section
 * of at most ``max_section`` bytes whose records decode and follow the run's offsets one
 * after another (``first`` .. ``last``: all of them; None: no record). It stops before the
 * first batch it does not take (Python takes that one), at ``end``, after ``max_batches``,
 * or once ``max_out`` bytes are kd_json_written.
 */
PyObject *
kd_json_v2_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    PyObject *file_json;
    Py_ssize_t max_batches, max_out;
    long encoding;
    kd_run r;
    int got = kd_args(args, nargs, "json_v2_run(file_json, buf, pos, end, max_batches, max_records, max_section, "
                      "encoding, max_out)", "OynnnLnln", &file_json, &r.view, &r.pos, &r.end, &max_batches,
                      &r.max_records, &r.max_section, &encoding, &max_out);
    if (got < 0)
        return NULL;
    if (got > 0 || !json_args_ok(file_json, encoding)) {
        PyBuffer_Release(&r.view);
        return Py_BuildValue("(OnOO)", Py_None, r.pos, Py_None, Py_None);
    }
    r.end = kd_end(&r.view, r.end);
    kd_offsets f = {NULL, 1, 0, 0, 0};
    kd_out o;
    kd_out_begin(&o);
    line_ctx ctx = {(const char *)PyUnicode_DATA(file_json), PyUnicode_GET_LENGTH(file_json), (int)encoding};
    int rc = kd_run_write(&r, &o, &f, max_batches, max_out, '\n', run_line, &ctx);
    PyBuffer_Release(&r.view);
    PyObject *result = NULL;
    if (rc >= 0) {
        PyObject *text = o.len > 0 ? kd_json_ascii_text(&o, 0) : Py_NewRef(Py_None);
        if (text != NULL)
            result = f.seen ? Py_BuildValue("(NnLL)", text, r.pos, (long long)f.first, (long long)f.prev)
                            : Py_BuildValue("(NnOO)", text, r.pos, Py_None, Py_None);
    }
    kd_out_end(&o);
    return result;
}

/*
 * json_legacy_line(file_json, batch, data, log_append_ts, encoding) -> (line, first, last) | None:
 * json_batch_line's line for a legacy wrapper ``batch`` and the records decode_legacy_set would
 * make of its decompressed inner set ``data`` (log_append_ts: the wrapper's LogAppendTime, or
 * None), kd_json_written from the bytes without making them; only where their offsets follow one
 * another. None for anything else: the usual path writes the line.
 */
PyObject *
kd_json_legacy_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    PyObject *file_json, *batch, *data, *lat_obj;
    long encoding;
    if (kd_args(args, nargs, "json_legacy_line(file_json, batch, data, log_append_ts, encoding)", "OOOOl", &file_json,
                &batch, &data, &lat_obj, &encoding) < 0)
        return NULL;
    int64_t v[BATCH_FIELDS];
    Py_buffer view;
    kd_records it;
    if (!json_args_ok(file_json, encoding) || line_batch(batch, v) < 0 ||
        kd_records_of_legacy_set(&it, &view, batch, data, lat_obj) < 0)
        Py_RETURN_NONE;
    kd_offsets f = {NULL, 1, 0, 0, 0};
    kd_out o;
    kd_out_begin(&o);
    int rc = put_line(&o, (const char *)PyUnicode_DATA(file_json), PyUnicode_GET_LENGTH(file_json), v, &it,
                      (int)encoding, &f);
    PyBuffer_Release(&view);
    return line_result(&o, rc, &f);
}
