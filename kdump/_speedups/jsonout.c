/* json_batch_line, json_records: the twins of batch_line and records_text in kdump/render/jsonout.py */

#include "speedups.h"

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

/* Base64's characters for each 12 bits, in output order (filled at first use). */
static uint16_t b64_pairs[4096];
static int b64_pairs_ready = 0;

/* A JSON literal for ``n`` bytes at ``s`` (NULL: null) in the encoding. */
static int
put_payload_raw(outbuf *o, const unsigned char *s, Py_ssize_t n, int encoding)
{
    if (s == NULL) {
        if (out_reserve(o, 4) < 0)
            return -1;
        PUT_LIT(o, "null");
        return 0;
    }
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
        if (!b64_pairs_ready) {
            for (int x = 0; x < 4096; x++) {
                char pair[2] = {b64_alphabet[x >> 6], b64_alphabet[x & 0x3F]};
                memcpy(&b64_pairs[x], pair, 2);
            }
            b64_pairs_ready = 1;
        }
        for (; i + 3 <= n; i += 3) {      /* two characters a table lookup */
            uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
            memcpy(w, &b64_pairs[v >> 12], 2);
            memcpy(w + 2, &b64_pairs[v & 0xFFF], 2);
            w += 4;
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

/* A JSON literal for a key, value or header value: null, or a string in the encoding. */
static int
put_payload(outbuf *o, PyObject *d, int encoding)
{
    if (d == Py_None)
        return put_payload_raw(o, NULL, 0, encoding);
    return put_payload_raw(o, (const unsigned char *)PyBytes_AS_STRING(d), PyBytes_GET_SIZE(d), encoding);
}

/* The JSON writers' common arguments: an ASCII str for the file's JSON, an encoding of ours. */
static inline int
json_args_ok(PyObject *file_json, long encoding)
{
    return PyUnicode_CheckExact(file_json) && PyUnicode_IS_ASCII(file_json) &&
           (encoding == ENC_BASE64 || encoding == ENC_HEX || encoding == ENC_UTF8);
}

static const char *const codec_names[8] = {"none", "gzip", "snappy", "lz4", "zstd",
                                           "unknown(5)", "unknown(6)", "unknown(7)"};

/* The fields of a batch as batch_prefix writes them (file first, then these). */
static const char *const batch_keys[] = {
    ",\"position\":", ",\"base_offset\":", ",\"last_offset\":", ",\"count\":", ",\"size\":",
    ",\"magic\":", ",\"crc\":",
};

static int put_batch_values(outbuf *o, const int64_t *v);

/* 1 written, 0 not ours (fall back to Python), -1 error set. */
static int
put_batch(outbuf *o, PyObject *batch)
{
    int64_t v[BATCH_FIELDS];
    if (batch_values(batch, v) < 0 || v[BF_MAGIC] < 0 || v[BF_MAGIC] > 2)
        return 0;
    return put_batch_values(o, v);
}

/* put_batch from the Batch fields ``v`` (v[BF_CRC_VALID] 0 or 1): 1, or -1. */
static int
put_batch_values(outbuf *o, const int64_t *v)
{
    int v2 = v[BF_MAGIC] == 2;
    int64_t attributes = v[BF_ATTRIBUTES];
    if (out_reserve(o, 1024) < 0)                 /* the fixed text plus 12 numbers */
        return -1;
    for (int i = 0; i < 7; i++) {
        put_raw(o, batch_keys[i], (Py_ssize_t)strlen(batch_keys[i]));
        put_i64(o, v[i]);
    }
    if (v[BF_CRC_VALID])
        PUT_LIT(o, ",\"crc_valid\":true");
    else
        PUT_LIT(o, ",\"crc_valid\":false");
    PUT_LIT(o, ",\"compression\":\"");
    const char *codec = codec_names[attributes & COMPRESSION_MASK];
    put_raw(o, codec, (Py_ssize_t)strlen(codec));
    if (v[BF_MAGIC] == 0)
        PUT_LIT(o, "\",\"timestamp_type\":\"NoTimestampType\"");
    else if (attributes & TIMESTAMP_TYPE_MASK)
        PUT_LIT(o, "\",\"timestamp_type\":\"LogAppendTime\"");
    else
        PUT_LIT(o, "\",\"timestamp_type\":\"CreateTime\"");
    PUT_LIT(o, ",\"base_timestamp\":");
    put_i64(o, v[BF_BASE_TIMESTAMP]);
    PUT_LIT(o, ",\"max_timestamp\":");
    put_i64(o, v[BF_MAX_TIMESTAMP]);
    PUT_LIT(o, ",\"partition_leader_epoch\":");
    put_i64(o, v[BF_PARTITION_LEADER_EPOCH]);
    PUT_LIT(o, ",\"producer_id\":");
    put_i64(o, v[BF_PRODUCER_ID]);
    PUT_LIT(o, ",\"producer_epoch\":");
    put_i64(o, v[BF_PRODUCER_EPOCH]);
    PUT_LIT(o, ",\"base_sequence\":");
    put_i64(o, v[BF_BASE_SEQUENCE]);
    /* legacy messages have none of the v2 flags, whatever their attribute bits say */
    if (v2 && (attributes & TRANSACTIONAL_FLAG))
        PUT_LIT(o, ",\"is_transactional\":true");
    else
        PUT_LIT(o, ",\"is_transactional\":false");
    if (v2 && (attributes & CONTROL_FLAG))
        PUT_LIT(o, ",\"is_control\":true");
    else
        PUT_LIT(o, ",\"is_control\":false");
    PUT_LIT(o, ",\"delete_horizon_ms\":");
    if (v2 && (attributes & DELETE_HORIZON_FLAG))
        put_i64(o, v[BF_BASE_TIMESTAMP]);
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
    PyObject *key = f[RF_KEY], *value = f[RF_VALUE], *headers = f[RF_HEADERS];
    if (exact_i64(f[RF_OFFSET], &offset) < 0 || exact_i64(f[RF_TIMESTAMP], &timestamp) < 0 || exact_i64(f[RF_SEQUENCE], &sequence) < 0 ||
        exact_i64(f[RF_MAGIC], &magic) < 0 || magic < 0 || magic > 2 || f[RF_CONTROL] != Py_None)
        return 0;
    /* a legacy record also carries its own crc and crc_valid */
    if (magic < 2 && (exact_i64(f[RF_CRC], &crc) < 0 || (f[RF_CRC_VALID] != Py_True && f[RF_CRC_VALID] != Py_False)))
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
        if (f[RF_CRC_VALID] == Py_True)
            PUT_LIT(o, ",\"crc_valid\":true");
        else
            PUT_LIT(o, ",\"crc_valid\":false");
    }
    PUT_LIT(o, "}");
    return 1;
}

/* The record objects of a list or tuple, comma-separated; same return convention as put_batch. */
static int
put_records(outbuf *o, PyObject *records, int encoding)
{
    Py_ssize_t nr = PySequence_Fast_GET_SIZE(records);
    PyObject **rs = PySequence_Fast_ITEMS(records);
    for (Py_ssize_t i = 0; i < nr; i++) {
        if (i) {
            if (out_reserve(o, 1) < 0)
                return -1;
            PUT_LIT(o, ",");
        }
        int rc = put_record(o, rs[i], encoding);
        if (rc <= 0)
            return rc;
    }
    return 1;
}

/* Frees the shared buffer once a call has made it huge. */
static void
out_trim(void)
{
    if (out_cap > OUT_KEEP) {
        PyMem_Free(out_mem);
        out_mem = NULL;
        out_cap = 0;
    }
}

/* json_records(records, encoding) -> str | None: the "records" array's members without the
 * brackets, for a batch written a slice of records at a time (render/dump.py JsonDump). The
 * text is ASCII: every payload is base64, hex or \u-escaped. */
PyObject *
kd_json_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "json_records(records, encoding)");
        return NULL;
    }
    PyObject *records = args[0];
    long encoding = PyLong_AsLong(args[1]);
    if (encoding == -1 && PyErr_Occurred())
        return NULL;
    if ((encoding != ENC_BASE64 && encoding != ENC_HEX && encoding != ENC_UTF8) ||
        (!PyList_Check(records) && !PyTuple_Check(records)))
        Py_RETURN_NONE;
    outbuf o = {out_mem, 0};
    PyObject *result = NULL;
    int rc = put_records(&o, records, (int)encoding);
    if (rc > 0) {
        result = PyUnicode_New(o.len, 127);
        if (result != NULL)
            memcpy(PyUnicode_1BYTE_DATA(result), o.p, (size_t)o.len);
    }
    out_trim();
    if (rc == 0)
        Py_RETURN_NONE;
    return result;
}

PyObject *
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
        if (out_reserve(&o, 16) < 0)
            goto done;
        PUT_LIT(&o, ",\"records\":[");
        rc = put_records(&o, records, (int)encoding);
        if (rc <= 0)
            goto done;
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
    out_trim();
    if (rc == 0)
        Py_RETURN_NONE;     /* not ours: the Python writer does this line */
    return result;          /* NULL with an exception set when rc < 0 */
}


/* A v2 record read in place (kd_next_record), written as put_record writes its object. */
static int
put_raw_record(outbuf *o, const kd_record *r, int encoding)
{
    if (out_reserve(o, 128 + 5 * INT_CHARS) < 0)
        return -1;
    PUT_LIT(o, "{\"offset\":");
    put_i64(o, r->offset);
    PUT_LIT(o, ",\"timestamp\":");
    put_i64(o, r->timestamp);
    PUT_LIT(o, ",\"key_size\":");
    put_i64(o, r->key == NULL ? -1 : r->klen);
    PUT_LIT(o, ",\"value_size\":");
    put_i64(o, r->value == NULL ? -1 : r->vlen);
    PUT_LIT(o, ",\"sequence\":");
    put_i64(o, r->sequence);
    PUT_LIT(o, ",\"key\":");
    if (put_payload_raw(o, r->key, r->klen, encoding) < 0 || out_reserve(o, 16) < 0)
        return -1;
    PUT_LIT(o, ",\"value\":");
    if (put_payload_raw(o, r->value, r->vlen, encoding) < 0 || out_reserve(o, 16) < 0)
        return -1;
    PUT_LIT(o, ",\"headers\":[");
    const unsigned char *h = r->headers;
    for (int32_t i = 0; i < r->hcount; i++) {
        const unsigned char *hk, *hv;
        int32_t hkl, hvl;
        kd_next_header(&h, r->headers_end, &hk, &hkl, &hv, &hvl);
        if (out_reserve(o, 16) < 0)
            return -1;
        if (i)
            PUT_LIT(o, ",");
        PUT_LIT(o, "{\"key\":");
        if (put_utf8_json(o, hk, hkl) < 0 || out_reserve(o, 16) < 0)
            return -1;
        PUT_LIT(o, ",\"value\":");
        if (put_payload_raw(o, hv, hvl, encoding) < 0 || out_reserve(o, 4) < 0)
            return -1;
        PUT_LIT(o, "}");
    }
    if (out_reserve(o, 2) < 0)
        return -1;
    PUT_LIT(o, "]}");
    return 0;
}

/* ``,"records":[...]}``: the records of a v2 batch (Batch fields ``v``) from its records section
 * ``d[0:end]``, decompressed if it was; ``*first`` and ``*last`` their offsets, which must follow
 * one another (none: *first > *last). 1 written, 0 not ours (malformed, a gap), -1 error set. */
static int
put_v2_records(outbuf *o, const unsigned char *d, Py_ssize_t end, const int64_t *v, int encoding, int64_t *first,
               int64_t *last)
{
    if (out_reserve(o, 16) < 0)
        return -1;
    PUT_LIT(o, ",\"records\":[");
    const int64_t *lat = (v[BF_ATTRIBUTES] & TIMESTAMP_TYPE_MASK) ? &v[BF_MAX_TIMESTAMP] : NULL;
    Py_ssize_t p = 0;
    *first = 1;
    *last = 0;
    for (int64_t i = 0; i < v[BF_COUNT]; i++) {
        kd_record r;
        if (kd_next_record(d, &p, end, v[BF_BASE_OFFSET], v[BF_BASE_TIMESTAMP], lat, v[BF_BASE_SEQUENCE], &r) < 0 || (i > 0 && r.offset != *last + 1))
            return 0;           /* malformed, or a gap: the usual path */
        if (i == 0)
            *first = r.offset;
        *last = r.offset;
        if (i) {
            if (out_reserve(o, 1) < 0)
                return -1;
            PUT_LIT(o, ",");
        }
        if (put_raw_record(o, &r, encoding) < 0)
            return -1;
    }
    if (p != end)
        return 0;
    if (out_reserve(o, 2) < 0)
        return -1;
    PUT_LIT(o, "]}");
    return 1;
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
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "json_v2_line(file_json, batch, data, encoding)");
        return NULL;
    }
    PyObject *file_json = args[0], *batch = args[1];
    long encoding = PyLong_AsLong(args[3]);
    if (encoding == -1 && PyErr_Occurred())
        return NULL;
    if (!json_args_ok(file_json, encoding) || !PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) != BATCH_FIELDS)
        Py_RETURN_NONE;
    int64_t magic, count, attributes, base_offset, base_ts, max_ts, base_seq;
    PyObject *const *f = &PyTuple_GET_ITEM(batch, 0);
    if (exact_i64(f[BF_MAGIC], &magic) < 0 || magic != 2 || exact_i64(f[BF_COUNT], &count) < 0 ||
        exact_i64(f[BF_ATTRIBUTES], &attributes) < 0 || (attributes & CONTROL_FLAG) || exact_i64(f[BF_BASE_OFFSET], &base_offset) < 0 ||
        exact_i64(f[BF_BASE_TIMESTAMP], &base_ts) < 0 || exact_i64(f[BF_MAX_TIMESTAMP], &max_ts) < 0 || exact_i64(f[BF_BASE_SEQUENCE], &base_seq) < 0)
        Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[2], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const unsigned char *d = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    PyObject *result = NULL;
    int rc = 0;
    outbuf o = {out_mem, 0};
    int64_t first = 0, last = 0;
    if (count < 0 || count > end / 7)
        goto done;
    rc = -1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(file_json);
    if (out_reserve(&o, n + 16) < 0)
        goto done;
    PUT_LIT(&o, "{\"file\":");
    put_raw(&o, (const char *)PyUnicode_DATA(file_json), n);
    rc = put_batch(&o, batch);
    if (rc <= 0)
        goto done;
    const int64_t fields[BATCH_FIELDS] = {0, base_offset, 0, count, 0, 2, 0, 0, attributes, 0, base_ts, max_ts,
                                          0, 0, base_seq};
    rc = put_v2_records(&o, d, end, fields, (int)encoding, &first, &last);
    if (rc <= 0)
        goto done;
    PyObject *line = PyUnicode_New(o.len, 127);
    if (line == NULL)
        goto done;
    memcpy(PyUnicode_1BYTE_DATA(line), o.p, (size_t)o.len);
    if (count > 0)
        result = Py_BuildValue("(NLL)", line, (long long)first, (long long)last);
    else
        result = Py_BuildValue("(NOO)", line, Py_None, Py_None);
    rc = 1;
done:
    PyBuffer_Release(&view);
    out_trim();
    if (rc == 0)
        Py_RETURN_NONE;
    return result;
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
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "json_v2_run(file_json, buf, pos, end, max_batches, max_records, "
                                         "max_section, encoding, max_out)");
        return NULL;
    }
    PyObject *file_json = args[0];
    Py_ssize_t pos, end, max_batches;
    if (span_args(args + 1, &pos, &end, &max_batches) < 0)
        return NULL;
    long long max_records = PyLong_AsLongLong(args[5]);
    Py_ssize_t max_section = PyLong_AsSsize_t(args[6]);
    long encoding = PyLong_AsLong(args[7]);
    Py_ssize_t max_out = PyLong_AsSsize_t(args[8]);
    if (PyErr_Occurred())
        return NULL;
    if (!json_args_ok(file_json, encoding))
        return Py_BuildValue("(OnOO)", Py_None, pos, Py_None, Py_None);
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return Py_BuildValue("(OnOO)", Py_None, pos, Py_None, Py_None);
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    if (end > view.len)
        end = view.len;
    outbuf o = {out_mem, 0};
    Py_ssize_t name_len = PyUnicode_GET_LENGTH(file_json);
    int has_first = 0, rc = 1;
    int64_t first = 0, prev = 0;
    for (Py_ssize_t n = 0; n < max_batches && o.len < max_out; n++) {
        int64_t v[BATCH_FIELDS];
        if (!kd_plain_v2_at(buf, pos, end, max_records, v) || v[BF_SIZE] - RECORD_BATCH_OVERHEAD > max_section)
            break;
        Py_ssize_t mark = o.len;
        if (out_reserve(&o, name_len + 16) < 0) {
            rc = -1;
            break;
        }
        if (n)
            PUT_LIT(&o, "\n");
        PUT_LIT(&o, "{\"file\":");
        put_raw(&o, (const char *)PyUnicode_DATA(file_json), name_len);
        int64_t bfirst, blast;
        rc = put_batch_values(&o, v);
        if (rc > 0)
            rc = put_v2_records(&o, buf + pos + RECORD_BATCH_OVERHEAD, (Py_ssize_t)v[BF_SIZE] - RECORD_BATCH_OVERHEAD, v,
                                (int)encoding, &bfirst, &blast);
        if (rc > 0 && bfirst <= blast && has_first && (prev == INT64_MAX || bfirst != prev + 1))
            rc = 0;             /* a gap between batches: the caller's report sees it */
        if (rc <= 0) {
            o.len = mark;
            break;
        }
        if (bfirst <= blast) {
            if (!has_first)
                first = bfirst;
            has_first = 1;
            prev = blast;
        }
        pos += (Py_ssize_t)v[BF_SIZE];
    }
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (rc >= 0) {
        PyObject *text = Py_None;
        if (o.len > 0) {
            text = PyUnicode_New(o.len, 127);
            if (text != NULL)
                memcpy(PyUnicode_1BYTE_DATA(text), o.p, (size_t)o.len);
        } else {
            Py_INCREF(text);
        }
        if (text != NULL) {
            if (has_first)
                result = Py_BuildValue("(NnLL)", text, pos, (long long)first, (long long)prev);
            else
                result = Py_BuildValue("(NnOO)", text, pos, Py_None, Py_None);
        }
    }
    out_trim();
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
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "json_legacy_line(file_json, batch, data, log_append_ts, encoding)");
        return NULL;
    }
    PyObject *file_json = args[0], *batch = args[1];
    long encoding = PyLong_AsLong(args[4]);
    if (encoding == -1 && PyErr_Occurred())
        return NULL;
    int64_t wrapper_offset, magic, lat;
    if (!json_args_ok(file_json, encoding) || legacy_wrapper_args(batch, args[3], &wrapper_offset, &magic, &lat) < 0)
        Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[2], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const unsigned char *d = (const unsigned char *)view.buf;
    outbuf o = {out_mem, 0};
    PyObject *result = NULL;
    int rc = 0;
    int64_t base, first = 0, prev = 0;
    Py_ssize_t n;
    if (kd_legacy_check(d, view.len, wrapper_offset, (int)magic, &base, &n) < 0)
        goto done;
    rc = -1;
    Py_ssize_t name_len = PyUnicode_GET_LENGTH(file_json);
    if (out_reserve(&o, name_len + 16) < 0)
        goto done;
    PUT_LIT(&o, "{\"file\":");
    put_raw(&o, (const char *)PyUnicode_DATA(file_json), name_len);
    rc = put_batch(&o, batch);
    if (rc <= 0)
        goto done;
    rc = -1;
    if (out_reserve(&o, 16) < 0)
        goto done;
    PUT_LIT(&o, ",\"records\":[");
    const int64_t *lap = args[3] != Py_None ? &lat : NULL;
    Py_ssize_t p = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        kd_legacy_msg r;
        kd_legacy_next(d, &p, base, lap, &r);
        if (i && (prev == INT64_MAX || r.offset != prev + 1)) {
            rc = 0;             /* a gap: the usual path */
            goto done;
        }
        if (i == 0)
            first = r.offset;
        prev = r.offset;
        if (out_reserve(&o, 128 + 5 * INT_CHARS) < 0)
            goto done;
        if (i)
            PUT_LIT(&o, ",");
        PUT_LIT(&o, "{\"offset\":");
        put_i64(&o, r.offset);
        PUT_LIT(&o, ",\"timestamp\":");
        put_i64(&o, r.timestamp);
        PUT_LIT(&o, ",\"key_size\":");
        put_i64(&o, r.key == NULL ? -1 : r.klen);
        PUT_LIT(&o, ",\"value_size\":");
        put_i64(&o, r.value == NULL ? -1 : r.vlen);
        PUT_LIT(&o, ",\"sequence\":-1,\"key\":");
        if (put_payload_raw(&o, r.key, r.klen, (int)encoding) < 0 || out_reserve(&o, 16) < 0)
            goto done;
        PUT_LIT(&o, ",\"value\":");
        if (put_payload_raw(&o, r.value, r.vlen, (int)encoding) < 0 || out_reserve(&o, 48 + INT_CHARS) < 0)
            goto done;
        PUT_LIT(&o, ",\"headers\":[],\"crc\":");
        put_i64(&o, r.crc);
        if (r.crc_ok)
            PUT_LIT(&o, ",\"crc_valid\":true}");
        else
            PUT_LIT(&o, ",\"crc_valid\":false}");
    }
    if (out_reserve(&o, 2) < 0)
        goto done;
    PUT_LIT(&o, "]}");
    PyObject *line = PyUnicode_New(o.len, 127);
    if (line == NULL)
        goto done;
    memcpy(PyUnicode_1BYTE_DATA(line), o.p, (size_t)o.len);
    result = Py_BuildValue("(NLL)", line, (long long)first, (long long)prev);
    rc = 1;
done:
    PyBuffer_Release(&view);
    out_trim();
    if (rc == 0)
        Py_RETURN_NONE;
    return result;
}
