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

#include "speedups.h"

enum { ENC_BASE64 = 0, ENC_HEX = 1, ENC_UTF8 = 2 };

#define PUT KD_PUT

/* Room a JSON string of n bytes may take in any encoding (utf8: \ufffd a byte at worst). */
static inline Py_ssize_t
json_room(Py_ssize_t n)
{
    return 6 * n + 6;
}

static inline char *
put_u_escape(char *w, unsigned c)
{
    w[0] = '\\';
    w[1] = 'u';
    w[2] = kd_hex_digits[(c >> 12) & 0xF];
    w[3] = kd_hex_digits[(c >> 8) & 0xF];
    w[4] = kd_hex_digits[(c >> 4) & 0xF];
    w[5] = kd_hex_digits[c & 0xF];
    return w + 6;
}

/*
 * json.encoder.encode_basestring_ascii(data.decode("utf-8", "replace")), quotes included.
 * CPython's decoder replaces each maximal invalid subpart (Unicode's recommended
 * practice) by one U+FFFD: a lead byte with the continuation bytes that are valid for it
 * so far, or a lone byte that cannot start a sequence. Non-ASCII characters come out as
 * \uXXXX, astral ones as a surrogate pair; " \ \b \f \n \r \t get their short escapes;
 * other controls and DEL \u00XX (``ascii``; else as json.dumps(..., ensure_ascii=False):
 * characters beyond ASCII, and DEL, stay as they are, in UTF-8, ``*wide`` set when there is
 * one). Room: json_room(n).
 */
static inline char *
put_utf8_string(char *w, const unsigned char *s, Py_ssize_t n, int ascii, int *wide)
{
    *w++ = '"';
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            if (c >= 0x20 && c != '"' && c != '\\' && (c != 0x7F || !ascii)) {
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
        int take = 1;
        unsigned lo2, hi2;
        int need = kd_utf8_lead(c, &lo2, &hi2);
        cp = c & (0x7Fu >> need);     /* the lead's own bits */
        if (need > 1) {
            while (take < need && take < left) {
                unsigned b = s[i + take];
                if (take == 1 ? (b < lo2 || b > hi2) : (b & 0xC0) != 0x80)
                    break;
                cp = (cp << 6) | (b & 0x3F);
                take++;
            }
        }
        if (!ascii) {               /* the valid sequence as it is, else U+FFFD in UTF-8 */
            *wide = 1;
            if (take < need || need == 1) {
                PUT(w, "\xEF\xBF\xBD");
            } else {
                memcpy(w, s + i, (size_t)take);
                w += take;
            }
        } else if (take < need || need == 1) {
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
    return w;
}

static char *
put_utf8_json(char *w, const unsigned char *s, Py_ssize_t n)
{
    return put_utf8_string(w, s, n, 1, NULL);
}

/* A JSON literal for ``n`` bytes at ``s`` (NULL: null) in the encoding. Room: json_room(n). */
static char *
put_payload(char *w, const unsigned char *s, Py_ssize_t n, int encoding)
{
    if (s == NULL) {
        PUT(w, "null");
        return w;
    }
    if (encoding == ENC_UTF8)
        return put_utf8_json(w, s, n);
    *w++ = '"';
    w = encoding == ENC_HEX ? kd_put_hex(w, s, n) : kd_put_base64(w, s, n);
    *w++ = '"';
    return w;
}

/* An encoding of ours. */
static inline int
encoding_ok(long encoding)
{
    return encoding == ENC_BASE64 || encoding == ENC_HEX || encoding == ENC_UTF8;
}

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

/* A record's ``,"key":…,"value":…,"headers":[…]``, the payloads in the encoding; header keys
 * are text whatever the encoding: all ASCII (``ascii``: dump's objects), or as dumps writes them
 * with ensure_ascii=False (``*wide`` set if one is not ASCII: the flat record objects). */
static char *
put_key_value_headers(char *w, const kd_record *r, int encoding, int ascii, int *wide)
{
    PUT(w, ",\"key\":");
    w = put_payload(w, r->key, r->klen, encoding);
    PUT(w, ",\"value\":");
    w = put_payload(w, r->value, r->vlen, encoding);
    PUT(w, ",\"headers\":[");
    kd_header h = {r->headers, -1, NULL, NULL, 0, 0};
    while (kd_next_header(r, &h)) {
        w = kd_put_str(w, h.index ? ",{\"key\":" : "{\"key\":");
        w = put_utf8_string(w, h.key, h.klen, ascii, wide);
        PUT(w, ",\"value\":");
        w = put_payload(w, h.value, h.vlen, encoding);
        *w++ = '}';
    }
    *w++ = ']';
    return w;
}

/* Room a record's object may take (record_room's headers: 40 bytes each besides their strings). */
static inline Py_ssize_t
record_room(const kd_record *r)
{
    return 256 + json_room(r->klen) + json_room(r->vlen) + 6 * r->hbytes + 40 * r->hcount;
}

/* A record's ,"key_size":…,"value_size":…,"sequence":… (-1 for a null key or value), in both
 * of its objects. */
static char *
put_sizes_sequence(char *w, const kd_record *r)
{
    PUT(w, ",\"key_size\":");
    w = kd_put_i64(w, r->key == NULL ? -1 : r->klen);
    PUT(w, ",\"value_size\":");
    w = kd_put_i64(w, r->value == NULL ? -1 : r->vlen);
    PUT(w, ",\"sequence\":");
    w = kd_put_i64(w, r->sequence);
    return w;
}

/* One record's object: the one JSON record renderer. Room: record_room's. */
static char *
put_record(char *w, const kd_record *r, int encoding)
{
    PUT(w, "{\"offset\":");
    w = kd_put_i64(w, r->offset);
    PUT(w, ",\"timestamp\":");
    w = kd_put_i64(w, r->timestamp);
    w = put_sizes_sequence(w, r);
    w = put_key_value_headers(w, r, encoding, 1, NULL);
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
 * taken by ``f``: 1 written, 0 not ours (the caller goes back), -1 error set. */
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
 * the ``"records"`` ``it`` gives (none: no such key), ``}``. 1 written, 0 not ours, -1 error set. */
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

/* A Batch's values as put_line takes them (magic 0, 1 or 2): 0, or -1 (not ours). */
static inline int
line_batch(PyObject *batch, int64_t *v)
{
    return batch_values(batch, v) < 0 || v[BF_MAGIC] < 0 || v[BF_MAGIC] > 2 ? -1 : 0;
}

/* o's bytes as an ASCII str (NULL with an exception set). */
static PyObject *
ascii_text(const kd_out *o, Py_ssize_t from)
{
    PyObject *text = PyUnicode_New(o->len - from, 127);
    if (text != NULL)
        memcpy(PyUnicode_1BYTE_DATA(text), o->p + from, (size_t)(o->len - from));
    return text;
}

/* What a writer's ``rc`` makes of ``o``, which it ends: its text (rc > 0), None (0: not
 * ours, the Python writer does it), or NULL with the exception set (rc < 0). */
static PyObject *
written(kd_out *o, int rc)
{
    PyObject *result = rc > 0 ? ascii_text(o, 0) : rc == 0 ? Py_NewRef(Py_None) : NULL;
    kd_out_end(o);
    return result;
}

/* ------------------------------------------------------------------------------------ */
/* The entry points: where the records come from                                        */
/* ------------------------------------------------------------------------------------ */

/* json_records(records, encoding) -> str | None: the "records" array's members without the
 * brackets, for a batch written a slice of records at a time (render/dump.py JsonDump). The
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
    return written(&o, put_records(&o, &it, (int)encoding, &f));
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
        return written(&o, rc);
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
        PyObject *line = ascii_text(o, 0);
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
 * would make of its records section ``data`` (decompressed, if it was), written from the bytes
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
 * or once ``max_out`` bytes are written.
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
        PyObject *text = o.len > 0 ? ascii_text(&o, 0) : Py_NewRef(Py_None);
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
 * None), written from the bytes without making them; only where their offsets follow one
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

/* ------------------------------------------------------------------------------------ */
/* kdump records: the flat record objects (render/records.py record_objects)             */
/* ------------------------------------------------------------------------------------ */

/* Room a flat record object takes besides its head and tail (flat_record's). */
static inline Py_ssize_t
flat_room(const kd_record *r)
{
    return 160 + json_room(r->klen) + json_room(r->vlen) + 6 * r->hbytes + 40 * r->hcount;
}

/* One record's flat object: ``head`` (up to "offset":), the record's own fields, ``tail`` (txn,
 * the batch's fields, "}}\n"): record_objects' text for one record. Header keys are written as
 * dumps writes them (UTF-8, *wide set if any is not ASCII). Room: hn + tn + flat_room(r). */
static char *
put_flat_record(char *w, const kd_record *r, const char *head, Py_ssize_t hn, const char *tail, Py_ssize_t tn,
                int encoding, int *wide)
{
    memcpy(w, head, (size_t)hn);
    w = kd_put_i64(w + hn, r->offset);
    PUT(w, ",\"timestamp\":");
    w = kd_put_i64(w, r->timestamp);
    w = put_key_value_headers(w, r, encoding, 0, wide);
    w = put_sizes_sequence(w, r);
    memcpy(w, tail, (size_t)tn);
    return w + tn;
}

/* The flat objects of the first ``limit`` (-1: every) records ``it`` gives, at the end of ``o``;
 * ``*count`` says how many. The rest are read too: Python writes none of a batch whose records
 * do not all decode. 1 written, 0 not ours (o as it was), -1 error set. */
static int
put_flat_records(kd_out *o, kd_records *it, const char *head, Py_ssize_t hn, const char *tail, Py_ssize_t tn,
                 int encoding, int64_t limit, int64_t *count, int *wide)
{
    Py_ssize_t mark = o->len;
    int64_t n = 0;
    kd_record r;
    int rc;
    while ((rc = kd_records_next(it, &r)) > 0) {
        if (limit >= 0 && n >= limit)
            continue;
        if (kd_out_reserve(o, hn + tn + flat_room(&r)) < 0)
            return -1;
        o->len = put_flat_record(o->p + o->len, &r, head, hn, tail, tn, encoding, wide) - o->p;
        n++;
    }
    if (rc < 0) {
        o->len = mark;
        return 0;
    }
    *count += n;
    return 1;
}

/* o's bytes from ``from`` as a str: ASCII, or UTF-8 when ``wide`` (NULL with an exception set). */
static PyObject *
flat_text(const kd_out *o, Py_ssize_t from, int wide)
{
    return wide ? PyUnicode_DecodeUTF8(o->p + from, o->len - from, "strict") : ascii_text(o, from);
}

/* An ASCII str's characters and length, or NULL. */
static inline const char *
ascii_of(PyObject *s, Py_ssize_t *n)
{
    if (!PyUnicode_CheckExact(s) || !PyUnicode_IS_ASCII(s))
        return NULL;
    *n = PyUnicode_GET_LENGTH(s);
    return (const char *)PyUnicode_DATA(s);
}

/*
 * flat_records(head, tail, batch, records, log_append_ts, encoding, limit) -> (text, count) | None:
 * record_objects(head, tail, records) for the first ``limit`` (-1: all) of ``records``: a list
 * or tuple of Record objects (batch unused), or a buffer, the decompressed v2 records section of
 * the non-control v2 ``batch`` or the inner set of the legacy wrapper ``batch`` (log_append_ts:
 * its LogAppendTime, or None), read in place. head and tail (batch_parts') must be ASCII. None
 * for anything else (a malformed section, a record only Python writes): Python writes those.
 */
PyObject *
kd_flat_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "flat_records(head, tail, batch, records, log_append_ts, encoding, limit)");
        return NULL;
    }
    PyObject *records = args[3];
    long encoding = PyLong_AsLong(args[5]);
    long long limit = PyLong_AsLongLong(args[6]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t hn = 0, tn = 0;
    const char *head = ascii_of(args[0], &hn), *tail = ascii_of(args[1], &tn);
    if (head == NULL || tail == NULL || !encoding_ok(encoding))
        Py_RETURN_NONE;
    kd_records it;
    Py_buffer view;
    int have_view = 0, ok = 1;
    if (PyList_Check(records) || PyTuple_Check(records)) {
        kd_records_of_objects(&it, PySequence_Fast_ITEMS(records), PySequence_Fast_GET_SIZE(records));
    } else {
        int64_t v[BATCH_FIELDS];
        if (line_batch(args[2], v) < 0) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (v[BF_MAGIC] == 2) {
            if (kd_buffer(records, &view) != 0)
                Py_RETURN_NONE;
            have_view = 1;
            ok = !(v[BF_ATTRIBUTES] & CONTROL_FLAG) &&
                 kd_records_of_v2(&it, (const unsigned char *)view.buf, view.len, v) == 0;
        } else {        /* the wrapper's inner set (its buffer held only when it is one) */
            ok = have_view = kd_records_of_legacy_set(&it, &view, args[2], records, args[4]) == 0;
        }
    }
    kd_out o;
    kd_out_begin(&o);
    int64_t count = 0;
    int wide = 0, rc = ok ? put_flat_records(&o, &it, head, hn, tail, tn, (int)encoding, limit, &count, &wide) : 0;
    if (have_view)
        PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (rc > 0) {
        PyObject *text = flat_text(&o, 0, wide);
        if (text != NULL)
            result = Py_BuildValue("(NL)", text, (long long)count);
    }
    kd_out_end(&o);
    if (rc == 0)
        Py_RETURN_NONE;
    return result;
}

enum { TXN_NONE, TXN_COMMITTED, TXN_ABORTED, TXN_OPEN };
static const char *const txn_json[] = {"null", "\"committed\"", "\"aborted\"", "\"open\""};

/* How the transaction of the transactional batch of producer ``pid`` ending at ``last`` ended
 * (state/txn_status.py Outcomes.status): the first marker of ``m`` (``n`` (producer id, offset,
 * commit) triples sorted by producer id, then offset: Outcomes.table) of that producer after
 * ``last``, or none (open). */
static int
txn_outcome(const int64_t *m, Py_ssize_t n, int64_t pid, int64_t last)
{
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        const int64_t *e = m + 3 * mid;
        if (e[0] < pid || (e[0] == pid && e[1] <= last))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && m[3 * lo] == pid)
        return m[3 * lo + 2] ? TXN_COMMITTED : TXN_ABORTED;
    return TXN_OPEN;
}

#define TAIL_ROOM 512             /* batch_parts' tail besides the file */

/* batch_parts' tail for the plain v2 batch ``v`` (uncompressed) of file ``file`` (n bytes of
 * JSON). Room: n + TAIL_ROOM. */
static char *
put_flat_tail(char *w, const char *file, Py_ssize_t n, const int64_t *v, int txn)
{
    PUT(w, ",\"txn\":");
    w = kd_put_str(w, txn_json[txn]);
    PUT(w, ",\"batch\":{\"file\":");
    memcpy(w, file, (size_t)n);
    w += n;
    PUT(w, ",\"position\":");
    w = kd_put_i64(w, v[BF_POSITION]);
    PUT(w, ",\"base_offset\":");
    w = kd_put_i64(w, v[BF_BASE_OFFSET]);
    PUT(w, ",\"magic\":2,\"compression\":\"");
    w = kd_put_str(w, kd_codec_names[v[BF_ATTRIBUTES] & COMPRESSION_MASK]);
    w = kd_put_str(w, v[BF_ATTRIBUTES] & TIMESTAMP_TYPE_MASK ? "\",\"timestamp_type\":\"LogAppendTime\""
                                                             : "\",\"timestamp_type\":\"CreateTime\"");
    PUT(w, ",\"producer_id\":");
    w = kd_put_i64(w, v[BF_PRODUCER_ID]);
    PUT(w, ",\"producer_epoch\":");
    w = kd_put_i64(w, v[BF_PRODUCER_EPOCH]);
    w = kd_put_str(w, v[BF_ATTRIBUTES] & TRANSACTIONAL_FLAG ? ",\"is_transactional\":true"
                                                            : ",\"is_transactional\":false");
    PUT(w, ",\"partition_leader_epoch\":");
    w = kd_put_i64(w, v[BF_PARTITION_LEADER_EPOCH]);
    PUT(w, "}}\n");
    return w;
}

/*
 * flat_v2_run(head, file_json, buf, pos, end, max_batches, max_records, encoding, max_out, limit,
 *             markers, lso, committed_only) -> (text, new_pos, count):
 * the flat objects of the records of the plain v2 batches (kd_plain_v2_at) from ``pos`` on,
 * straight from the segment's bytes, as run/records.py writes them through record_objects:
 * each batch's txn from ``markers`` (Outcomes.table: an int64 buffer of (producer id, offset,
 * commit) triples), and with ``committed_only`` the batches a read_committed consumer is not
 * served left out (Outcomes.read_committed: from ``lso`` on (None: none), or aborted). At most
 * ``limit`` records (-1: no limit): the batch where it is reached is the last taken. It stops
 * before the first batch it does not take (Python takes that one), at ``end``, after
 * ``max_batches``, or once ``max_out`` bytes are written; text None: nothing written.
 */
PyObject *
kd_flat_v2_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "flat_v2_run(head, file_json, buf, pos, end, max_batches, max_records, "
                                         "encoding, max_out, limit, markers, lso, committed_only)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[3]), end = PyLong_AsSsize_t(args[4]),
               max_batches = PyLong_AsSsize_t(args[5]);
    long long max_records = PyLong_AsLongLong(args[6]);
    long encoding = PyLong_AsLong(args[7]);
    Py_ssize_t max_out = PyLong_AsSsize_t(args[8]);
    long long limit = PyLong_AsLongLong(args[9]);
    int committed_only = PyObject_IsTrue(args[12]);
    int64_t lso = 0;
    int has_lso = args[11] != Py_None;
    if (PyErr_Occurred() || committed_only < 0)
        return NULL;
    Py_ssize_t hn = 0, fn = 0;
    const char *head = ascii_of(args[0], &hn), *file = ascii_of(args[1], &fn);
    if (head == NULL || file == NULL || !encoding_ok(encoding) || (has_lso && exact_i64(args[11], &lso) < 0))
        return Py_BuildValue("(OnL)", Py_None, pos, 0LL);
    Py_buffer view, marks;
    if (PyObject_GetBuffer(args[2], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return Py_BuildValue("(OnL)", Py_None, pos, 0LL);
    }
    if (PyObject_GetBuffer(args[10], &marks, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&view);
        return Py_BuildValue("(OnL)", Py_None, pos, 0LL);
    }
    /* (an empty array's buffer may be any address: only a table of entries must be aligned) */
    if (marks.len % (Py_ssize_t)(3 * sizeof(int64_t)) != 0 ||
        (marks.len > 0 && (uintptr_t)marks.buf % sizeof(int64_t) != 0)) {
        PyBuffer_Release(&marks);       /* not an int64 table: Python writes every batch */
        PyBuffer_Release(&view);
        return Py_BuildValue("(OnL)", Py_None, pos, 0LL);
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    const int64_t *m = (const int64_t *)marks.buf;
    Py_ssize_t nm = marks.len / (Py_ssize_t)(3 * sizeof(int64_t));
    if (end > view.len)
        end = view.len;
    char *tail = PyMem_Malloc((size_t)(fn + TAIL_ROOM));
    kd_out o;
    kd_out_begin(&o);
    int64_t count = 0;
    int wide = 0, rc = tail != NULL ? 1 : -1;
    if (tail == NULL)
        PyErr_NoMemory();
    for (Py_ssize_t b = 0; rc > 0 && b < max_batches && o.len < max_out && (limit < 0 || count < limit); b++) {
        int64_t v[BATCH_FIELDS];
        kd_records it;
        if (!kd_plain_v2_at(buf, pos, end, max_records, v) ||
            kd_records_of_v2(&it, buf + pos + RECORD_BATCH_OVERHEAD, (Py_ssize_t)v[BF_SIZE] - RECORD_BATCH_OVERHEAD,
                             v) < 0)
            break;
        int txn = v[BF_ATTRIBUTES] & TRANSACTIONAL_FLAG
                      ? txn_outcome(m, nm, v[BF_PRODUCER_ID], v[BF_LAST_OFFSET]) : TXN_NONE;
        if (!committed_only || !((has_lso && v[BF_BASE_OFFSET] >= lso) || txn == TXN_ABORTED)) {
            Py_ssize_t tn = put_flat_tail(tail, file, fn, v, txn) - tail;
            rc = put_flat_records(&o, &it, head, hn, tail, tn, (int)encoding, limit < 0 ? -1 : limit - count,
                                  &count, &wide);
            if (rc <= 0)        /* not ours: Python takes this batch */
                break;
        }
        pos += (Py_ssize_t)v[BF_SIZE];
    }
    PyMem_Free(tail);
    PyBuffer_Release(&marks);
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (rc >= 0) {
        PyObject *text = o.len > 0 ? flat_text(&o, 0, wide) : Py_NewRef(Py_None);
        if (text != NULL)
            result = Py_BuildValue("(NnL)", text, pos, (long long)count);
    }
    kd_out_end(&o);
    return result;
}
