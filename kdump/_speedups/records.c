/* decode_v2_records, decode_v2_span: the twins of decode_v2_payload and decode_v2_span in
 * kdump/format/records.py; kd_next_record, the v2 record loop's one step, and kd_records,
 * the one record iterator the writers (text.c, jsonout.c) draw from */

#include "speedups.h"

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

/* A key or value: varint length (-1: null), then the bytes, all before ``end``. *at is
 * where they start (NULL for null) and *p moves past them; -1 if malformed. */
static inline int
read_bytes_field(const unsigned char *d, Py_ssize_t *p, Py_ssize_t end, int32_t *len, const unsigned char **at)
{
    if (read_varint32(d, p, end, len) < 0 || *len < -1 || (*len >= 0 && *len > end - *p))
        return -1;
    *at = NULL;
    if (*len >= 0) {
        *at = d + *p;
        *p += *len;
    }
    return 0;
}

/* Records ``first`` .. ``first + take - 1`` of a batch of ``count``, the first of them at
 * ``d[start]``, the records section ending at ``end``; ``*pos_out`` is where the next one
 * starts. The last of the batch must end exactly at ``end``. NULL with no exception set
 * means "malformed". */
static PyObject *
decode_records(const unsigned char *d, Py_ssize_t start, Py_ssize_t end, int64_t base_offset, int64_t base_ts,
               PyObject *log_append_ts, int64_t base_seq, int64_t first, int64_t take, int64_t count,
               Py_ssize_t *pos_out)
{
    /* every record takes 7 bytes or more: those left must fit */
    if (count < 0 || first < 0 || take < 0 || first > count || take > count - first || start < 0 || start > end ||
        count - first > (end - start) / 7)
        return NULL;
    PyObject *ts_type = PyLong_FromLong(log_append_ts != NULL ? 1 : 0);
    if (ts_type == NULL)
        return NULL;
    PyObject *list = PyList_New((Py_ssize_t)take);
    if (list == NULL) {
        Py_DECREF(ts_type);
        return NULL;
    }
    /* (LogAppendTime: each record's timestamp is the object given, not this) */
    const int64_t no_ts = 0, *lat = log_append_ts != NULL ? &no_ts : NULL;
    Py_ssize_t p = start;
    for (Py_ssize_t n = 0; n < (Py_ssize_t)take; n++) {
        kd_record r;
        if (kd_next_record(d, &p, end, base_offset, base_ts, lat, base_seq, &r) < 0)
            goto malformed;
        PyObject *headers;
        if (r.hcount == 0) {
            headers = Py_NewRef(empty_tuple);
        } else {
            headers = PyTuple_New(r.hcount);
            if (headers == NULL)
                goto error;
            kd_header h = {r.headers, -1, NULL, NULL, 0, 0};
            while (kd_next_header(&r, &h)) {
                PyObject *pair = PyTuple_New(2);
                if (pair == NULL) {
                    Py_DECREF(headers);
                    goto error;
                }
                PyTuple_SET_ITEM(headers, h.index, pair);
                PyObject *hkey = PyBytes_FromStringAndSize((const char *)h.key, h.klen);
                PyObject *hval = h.value != NULL ? PyBytes_FromStringAndSize((const char *)h.value, h.vlen)
                                                 : Py_NewRef(Py_None);
                PyTuple_SET_ITEM(pair, 0, hkey);
                PyTuple_SET_ITEM(pair, 1, hval);
                if (hkey == NULL || hval == NULL) {
                    Py_DECREF(headers);
                    goto error;
                }
                PyObject_GC_UnTrack(pair);
            }
            PyObject_GC_UnTrack(headers);
        }
        PyObject *items[RECORD_FIELDS];
        items[RF_OFFSET] = PyLong_FromLongLong(r.offset);
        items[RF_TIMESTAMP] = log_append_ts != NULL ? Py_NewRef(log_append_ts) : PyLong_FromLongLong(r.timestamp);
        items[RF_TIMESTAMP_TYPE] = Py_NewRef(ts_type);
        items[RF_KEY] = r.key != NULL ? PyBytes_FromStringAndSize((const char *)r.key, r.klen) : Py_NewRef(Py_None);
        items[RF_VALUE] = r.value != NULL ? PyBytes_FromStringAndSize((const char *)r.value, r.vlen)
                                          : Py_NewRef(Py_None);
        items[RF_HEADERS] = headers;
        items[RF_SEQUENCE] = PyLong_FromLongLong(r.sequence);
        items[RF_CONTROL] = Py_NewRef(Py_None);
        items[RF_MAGIC] = Py_NewRef(int_two);
        items[RF_CRC] = Py_NewRef(Py_None);
        items[RF_CRC_VALID] = Py_NewRef(Py_None);
        PyObject *rec = new_struct(RecordType, items, RECORD_FIELDS);
        if (rec == NULL)
            goto error;
        PyList_SET_ITEM(list, n, rec);
    }
    if (first + take == count && p != end)
        goto malformed;
    Py_DECREF(ts_type);
    *pos_out = p;
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

static PyObject *decode_buffer(PyObject *data, Py_ssize_t start, int64_t base_offset, int64_t base_ts,
                               PyObject *lat, int64_t base_seq, int64_t first, int64_t take, int64_t count,
                               Py_ssize_t *pos);

PyObject *
kd_decode_v2_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6 && nargs != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "decode_v2_records(data, batch) or decode_v2_records(data, base_offset, base_timestamp, "
                        "log_append_time, base_sequence, count)");
        return NULL;
    }
    if (kd_initialised(RecordType) < 0)
        return NULL;
    int64_t base_offset, base_ts, base_seq, count;
    PyObject *lat;
    if (nargs == 2) {
        /* The batch's own fields, as decode_v2_payload takes them: the one place they are picked. */
        PyObject *b = args[1];
        int64_t attributes;
        if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != BATCH_FIELDS)
            Py_RETURN_NONE;
        PyObject *const *f = &PyTuple_GET_ITEM(b, 0);
        if (as_int64(f[BF_BASE_OFFSET], &base_offset) < 0 || as_int64(f[BF_BASE_TIMESTAMP], &base_ts) < 0 ||
            as_int64(f[BF_BASE_SEQUENCE], &base_seq) < 0 || as_int64(f[BF_COUNT], &count) < 0 ||
            as_int64(f[BF_ATTRIBUTES], &attributes) < 0)
            Py_RETURN_NONE;
        lat = (attributes & TIMESTAMP_TYPE_MASK) ? f[BF_MAX_TIMESTAMP] : Py_None;     /* LogAppendTime */
    } else {
        lat = args[3];
        if (as_int64(args[1], &base_offset) < 0 || as_int64(args[2], &base_ts) < 0 ||
            as_int64(args[4], &base_seq) < 0 || as_int64(args[5], &count) < 0)
            Py_RETURN_NONE;
    }
    if (kd_lat_arg(&lat) < 0)
        Py_RETURN_NONE;

    Py_ssize_t pos;
    return decode_buffer(args[0], 0, base_offset, base_ts, lat, base_seq, 0, count, count, &pos);
}

/* decode_records over any buffer; None for "malformed" (or a buffer it cannot read). */
static PyObject *
decode_buffer(PyObject *data, Py_ssize_t start, int64_t base_offset, int64_t base_ts, PyObject *lat,
              int64_t base_seq, int64_t first, int64_t take, int64_t count, Py_ssize_t *pos)
{
    PyObject *result;
    if (PyBytes_Check(data)) {
        result = decode_records((const unsigned char *)PyBytes_AS_STRING(data), start, PyBytes_GET_SIZE(data),
                                base_offset, base_ts, lat, base_seq, first, take, count, pos);
    } else {
        Py_buffer view;
        if (kd_buffer(data, &view) != 0)
            Py_RETURN_NONE;
        result = decode_records((const unsigned char *)view.buf, start, view.len,
                                base_offset, base_ts, lat, base_seq, first, take, count, pos);
        PyBuffer_Release(&view);
    }
    if (result == NULL)
        Py_RETURN_NONE;
    return result;
}

/* decode_v2_span(data, start, base_offset, base_timestamp, log_append_time, base_sequence,
 * first, take, count) -> (records, next_start) | None: ``take`` records of the batch from
 * record ``first`` on, the first at byte ``start`` of ``data`` (the whole records section):
 * a batch of millions of records decoded a slice at a time (records.py decode_v2_span). */
PyObject *
kd_decode_v2_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError,
                        "decode_v2_span(data, start, base_offset, base_timestamp, log_append_time, "
                        "base_sequence, first, take, count)");
        return NULL;
    }
    if (kd_initialised(RecordType) < 0)
        return NULL;
    int64_t start, base_offset, base_ts, base_seq, first, take, count;
    PyObject *lat = args[4];
    if (as_int64(args[1], &start) < 0 || as_int64(args[2], &base_offset) < 0 || as_int64(args[3], &base_ts) < 0 ||
        as_int64(args[5], &base_seq) < 0 || as_int64(args[6], &first) < 0 || as_int64(args[7], &take) < 0 ||
        as_int64(args[8], &count) < 0 || start < 0 || start > PY_SSIZE_T_MAX)
        Py_RETURN_NONE;
    if (kd_lat_arg(&lat) < 0)
        Py_RETURN_NONE;
    Py_ssize_t pos = 0;
    PyObject *records = decode_buffer(args[0], (Py_ssize_t)start, base_offset, base_ts, lat, base_seq,
                                      first, take, count, &pos);
    if (records == NULL || records == Py_None)
        return records;
    PyObject *result = Py_BuildValue("(Nn)", records, pos);
    return result;
}


/* The v2 record loop's one step (speedups.h): decode_records above, the run writers and
 * json_v2_line all read records through it. */
int
kd_next_record(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, int64_t base_offset, int64_t base_ts,
               const int64_t *log_append_ts, int64_t base_seq, kd_record *r)
{
    Py_ssize_t p = *pos;
    int32_t length, off_delta, klen, vlen, hcount;
    int64_t ts_delta;
    if (read_varint32(d, &p, end, &length) < 0 || length < 6 || length > end - p)
        return -1;
    Py_ssize_t rend = p + length;
    p += 1;                                  /* attributes, unused */
    /* nonzero: malformed, a raw value beyond 64 bits included (varint.py rejects it) */
    if (read_varint64(d, &p, rend, &ts_delta) != 0 || read_varint32(d, &p, rend, &off_delta) < 0)
        return -1;
    if (add_overflows(base_offset, off_delta, &r->offset))
        return -1;
    /* Java's long: the timestamp wraps (format/javalong.py long_add, as records.py does) */
    r->timestamp = log_append_ts != NULL ? *log_append_ts : long_add(base_ts, ts_delta);
    r->ts_type = log_append_ts != NULL;
    if (sequence_at(base_seq, off_delta, &r->sequence))
        return -1;
    if (read_bytes_field(d, &p, rend, &klen, &r->key) < 0 || read_bytes_field(d, &p, rend, &vlen, &r->value) < 0)
        return -1;
    if (read_varint32(d, &p, rend, &hcount) < 0 || hcount < 0 || hcount > rend - p)
        return -1;
    r->klen = klen < 0 ? 0 : klen;
    r->vlen = vlen < 0 ? 0 : vlen;
    r->hcount = hcount;
    r->headers = d + p;
    r->hbytes = rend - p;
    r->header_pairs = NULL;
    r->magic = 2;
    r->crc = 0;
    r->crc_ok = 0;
    for (int32_t i = 0; i < hcount; i++) {
        int32_t hk, hv;
        if (read_varint32(d, &p, rend, &hk) < 0 || hk < 0 || hk > rend - p)
            return -1;
        p += hk;
        if (read_varint32(d, &p, rend, &hv) < 0 || hv < -1 || (hv >= 0 && hv > rend - p))
            return -1;
        if (hv > 0)
            p += hv;
    }
    if (p != rend)
        return -1;
    *pos = p;
    return 0;
}

int
kd_next_header(const kd_record *r, kd_header *h)
{
    if (++h->index >= r->hcount)
        return 0;
    if (r->header_pairs != NULL) {
        PyObject *pair = r->header_pairs[h->index], *k = PyTuple_GET_ITEM(pair, 0), *v = PyTuple_GET_ITEM(pair, 1);
        h->key = (const unsigned char *)PyBytes_AS_STRING(k);
        h->klen = PyBytes_GET_SIZE(k);
        h->value = v == Py_None ? NULL : (const unsigned char *)PyBytes_AS_STRING(v);
        h->vlen = v == Py_None ? 0 : PyBytes_GET_SIZE(v);
        return 1;
    }
    /* a header kd_next_record has checked */
    Py_ssize_t p = 0, e = r->headers + r->hbytes - h->p;
    int32_t kl = 0, vl = -1;
    read_varint32(h->p, &p, e, &kl);
    h->key = h->p + p;
    p += kl;
    read_varint32(h->p, &p, e, &vl);
    h->value = vl >= 0 ? h->p + p : NULL;
    if (vl > 0)
        p += vl;
    h->klen = kl;
    h->vlen = vl < 0 ? 0 : vl;
    h->p += p;
    return 1;
}

/* A Record object as the writers take it: exact ints within int64, bytes or None, headers
 * of (bytes, bytes or None); 0, or -1 (a control record, anything else: Python writes it). */
static int
record_of_object(PyObject *rec, kd_record *r)
{
    if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) != RECORD_FIELDS)
        return -1;
    PyObject *const *f = &PyTuple_GET_ITEM(rec, 0);
    PyObject *key = f[RF_KEY], *value = f[RF_VALUE], *headers = f[RF_HEADERS];
    int64_t magic, ts_type;
    if (f[RF_CONTROL] != Py_None || exact_i64(f[RF_OFFSET], &r->offset) < 0 ||
        exact_i64(f[RF_TIMESTAMP], &r->timestamp) < 0 || exact_i64(f[RF_SEQUENCE], &r->sequence) < 0 ||
        exact_i64(f[RF_MAGIC], &magic) < 0 || magic < 0 || magic > 2)
        return -1;
    r->magic = (int)magic;
    /* a timestamp type without a name: 2 (the text view leaves such a record to Python) */
    r->ts_type = exact_i64(f[RF_TIMESTAMP_TYPE], &ts_type) == 0 && ts_type >= -1 && ts_type <= 1 ? (int)ts_type : 2;
    r->crc = 0;
    r->crc_ok = 0;
    if (magic < 2) {        /* a legacy record carries its own crc and crc_valid */
        if (exact_i64(f[RF_CRC], &r->crc) < 0 || (f[RF_CRC_VALID] != Py_True && f[RF_CRC_VALID] != Py_False))
            return -1;
        r->crc_ok = f[RF_CRC_VALID] == Py_True;
    }
    if ((key != Py_None && !PyBytes_CheckExact(key)) || (value != Py_None && !PyBytes_CheckExact(value)))
        return -1;
    r->key = key == Py_None ? NULL : (const unsigned char *)PyBytes_AS_STRING(key);
    r->klen = key == Py_None ? 0 : PyBytes_GET_SIZE(key);
    r->value = value == Py_None ? NULL : (const unsigned char *)PyBytes_AS_STRING(value);
    r->vlen = value == Py_None ? 0 : PyBytes_GET_SIZE(value);
    if (!PyTuple_Check(headers) && !PyList_Check(headers))
        return -1;
    r->hcount = PySequence_Fast_GET_SIZE(headers);
    r->header_pairs = PySequence_Fast_ITEMS(headers);
    r->headers = NULL;
    r->hbytes = 0;
    for (Py_ssize_t i = 0; i < r->hcount; i++) {
        PyObject *h = r->header_pairs[i];
        if (!PyTuple_CheckExact(h) || PyTuple_GET_SIZE(h) != 2 || !PyBytes_CheckExact(PyTuple_GET_ITEM(h, 0)))
            return -1;
        PyObject *hv = PyTuple_GET_ITEM(h, 1);
        if (hv != Py_None && !PyBytes_CheckExact(hv))
            return -1;
        r->hbytes += PyBytes_GET_SIZE(PyTuple_GET_ITEM(h, 0)) + (hv == Py_None ? 0 : PyBytes_GET_SIZE(hv));
    }
    return 0;
}

void
kd_records_of_objects(kd_records *it, PyObject *const *items, Py_ssize_t n)
{
    memset(it, 0, sizeof(*it));
    it->kind = KD_FROM_OBJECTS;
    it->objects = items;
    it->left = n;
}

int
kd_records_of_v2(kd_records *it, const unsigned char *d, Py_ssize_t end, const int64_t *v)
{
    memset(it, 0, sizeof(*it));
    it->kind = KD_FROM_V2;
    it->d = d;
    it->end = end;
    it->left = v[BF_COUNT];
    it->base_offset = v[BF_BASE_OFFSET];
    it->base_ts = v[BF_BASE_TIMESTAMP];
    it->base_seq = v[BF_BASE_SEQUENCE];
    it->has_lat = (v[BF_ATTRIBUTES] & TIMESTAMP_TYPE_MASK) != 0;
    it->lat = v[BF_MAX_TIMESTAMP];
    /* every record takes 7 bytes or more (as decode_records checks) */
    return v[BF_COUNT] < 0 || v[BF_COUNT] > end / 7 ? -1 : 0;
}

void
kd_records_of_legacy(kd_records *it, const unsigned char *d, int64_t base, Py_ssize_t n, const int64_t *lat)
{
    memset(it, 0, sizeof(*it));
    it->kind = KD_FROM_LEGACY;
    it->d = d;
    it->left = n;
    it->base_offset = base;
    it->has_lat = lat != NULL;
    it->lat = lat != NULL ? *lat : 0;
}

int
kd_records_of_legacy_set(kd_records *it, Py_buffer *view, PyObject *batch, PyObject *data, PyObject *lat_obj)
{
    int64_t wrapper_offset, magic, lat = 0, base;
    Py_ssize_t n;
    if (!PyTuple_Check(batch) || PyTuple_GET_SIZE(batch) != BATCH_FIELDS ||
        exact_i64(PyTuple_GET_ITEM(batch, BF_LAST_OFFSET), &wrapper_offset) < 0 ||
        exact_i64(PyTuple_GET_ITEM(batch, BF_MAGIC), &magic) < 0 || magic < 0 || magic > 1 ||
        (lat_obj != Py_None && exact_i64(lat_obj, &lat) < 0))
        return -1;
    if (kd_buffer(data, view) != 0)
        return -1;
    const unsigned char *d = (const unsigned char *)view->buf;
    if (kd_legacy_check(d, view->len, wrapper_offset, (int)magic, &base, &n) < 0) {
        PyBuffer_Release(view);
        return -1;
    }
    kd_records_of_legacy(it, d, base, n, lat_obj != Py_None ? &lat : NULL);
    return 0;
}

int
kd_run_next(kd_run *r, kd_records *it)
{
    const unsigned char *buf = (const unsigned char *)r->view.buf;
    Py_ssize_t section;
    return buf != NULL && kd_plain_v2_at(buf, r->pos, r->end, r->max_records, r->v) &&
           (section = (Py_ssize_t)r->v[BF_SIZE] - RECORD_BATCH_OVERHEAD) <= r->max_section &&
           kd_records_of_v2(it, buf + r->pos + RECORD_BATCH_OVERHEAD, section, r->v) == 0;
}

int
kd_records_next(kd_records *it, kd_record *r)
{
    if (it->left <= 0)
        return it->kind == KD_FROM_V2 && it->p != it->end ? -1 : 0;
    it->left--;
    switch (it->kind) {
    case KD_FROM_V2:
        return kd_next_record(it->d, &it->p, it->end, it->base_offset, it->base_ts, it->has_lat ? &it->lat : NULL,
                              it->base_seq, r) < 0 ? -1 : 1;
    case KD_FROM_LEGACY:
        kd_legacy_next(it->d, &it->p, it->base_offset, it->has_lat ? &it->lat : NULL, r);
        return 1;
    default:
        return record_of_object(*it->objects++, r) < 0 ? -1 : 1;
    }
}
