/* flat_records, flat_v2_run: the twins of render/records.py's record objects, ``kdump
 * records``' flat stream (one JSON object a record, its batch's fields and its transaction's
 * outcome beside it). The record's payload fields and sizes are jsonout.c's (jsonput.h). */

#include "jsonput.h"

/* Room a flat record object takes besides its head and tail (flat_record's). */
static inline Py_ssize_t
flat_room(const kd_record *r)
{
    return 160 + json_room(r->klen) + json_room(r->vlen) + 6 * r->hbytes + 40 * r->hcount;
}

/* One record's flat object: ``head`` (up to "offset":), the record's own fields, ``tail`` (txn,
 * the batch's fields, "}}\n"): record_objects' text for one record. Header keys are kd_json_written as
 * dumps writes them (UTF-8, *wide set if any is not ASCII). Room: hn + tn + flat_room(r). */
static char *
put_flat_record(char *w, const kd_record *r, const char *head, Py_ssize_t hn, const char *tail, Py_ssize_t tn,
                int encoding, int *wide)
{
    memcpy(w, head, (size_t)hn);
    w = kd_put_i64(w + hn, r->offset);
    PUT(w, ",\"timestamp\":");
    w = kd_put_i64(w, r->timestamp);
    w = kd_json_key_value_headers(w, r, encoding, 0, wide);
    w = kd_json_sizes_sequence(w, r);
    memcpy(w, tail, (size_t)tn);
    return w + tn;
}

/* The flat objects of the first ``limit`` (-1: every) records ``it`` gives, at the end of ``o``;
 * ``*count`` says how many. The rest are read too: Python writes none of a batch whose records
 * do not all decode. 1 kd_json_written, 0 not ours (o as it was), -1 error set. */
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
    return wide ? PyUnicode_DecodeUTF8(o->p + from, o->len - from, "strict") : kd_json_ascii_text(o, from);
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
 * ``max_batches``, or once ``max_out`` bytes are kd_json_written; text None: nothing kd_json_written.
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
