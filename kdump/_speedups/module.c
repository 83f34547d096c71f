/* The module kdump._speedups.native: its function table, init(Batch, Record), and the
 * shared state speedups.h declares */

#include "speedups.h"

#include <stdarg.h>
#include <string.h>

PyTypeObject *BatchType = NULL;
PyTypeObject *RecordType = NULL;
PyObject *empty_tuple = NULL;
PyObject *int_two = NULL;

/* The names of the BF_* and RF_* places (speedups.h), checked against the classes' _fields. */
static const char *const batch_field_names[BATCH_FIELDS] = {
    [BF_POSITION] = "position", [BF_BASE_OFFSET] = "base_offset", [BF_LAST_OFFSET] = "last_offset",
    [BF_COUNT] = "count", [BF_SIZE] = "size", [BF_MAGIC] = "magic", [BF_CRC] = "crc",
    [BF_CRC_VALID] = "crc_valid", [BF_ATTRIBUTES] = "attributes",
    [BF_PARTITION_LEADER_EPOCH] = "partition_leader_epoch", [BF_BASE_TIMESTAMP] = "base_timestamp",
    [BF_MAX_TIMESTAMP] = "max_timestamp", [BF_PRODUCER_ID] = "producer_id",
    [BF_PRODUCER_EPOCH] = "producer_epoch", [BF_BASE_SEQUENCE] = "base_sequence",
};
static const char *const record_field_names[RECORD_FIELDS] = {
    [RF_OFFSET] = "offset", [RF_TIMESTAMP] = "timestamp", [RF_TIMESTAMP_TYPE] = "timestamp_type",
    [RF_KEY] = "key", [RF_VALUE] = "value", [RF_HEADERS] = "headers", [RF_SEQUENCE] = "sequence",
    [RF_CONTROL] = "control", [RF_MAGIC] = "magic", [RF_CRC] = "crc", [RF_CRC_VALID] = "crc_valid",
};

static PyObject *
names_tuple(const char *const *names, Py_ssize_t n)
{
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t != NULL && i < n; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (s == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

static PyObject *
kd_init(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *batch, *record;
    if (!PyArg_ParseTuple(args, "OO:init", &batch, &record))
        return NULL;
    const char *const *names[2] = {batch_field_names, record_field_names};
    Py_ssize_t want[2] = {BATCH_FIELDS, RECORD_FIELDS};
    PyObject *types[2] = {batch, record};
    for (int i = 0; i < 2; i++) {
        PyObject *t = types[i];
        if (!PyType_Check(t) || !PyType_IsSubtype((PyTypeObject *)t, &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "init() wants two tuple subclasses (Batch, Record)");
            return NULL;
        }
        PyObject *fields = PyObject_GetAttrString(t, "_fields");
        PyObject *expected = names_tuple(names[i], want[i]);
        int same = fields != NULL && expected != NULL ? PyObject_RichCompareBool(fields, expected, Py_EQ) : -1;
        Py_XDECREF(fields);
        Py_XDECREF(expected);
        if (same != 1) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s's fields are not those the C code was built for, in that order "
                         "(speedups.h BF_*/RF_*)", ((PyTypeObject *)t)->tp_name);
            return NULL;
        }
    }
    Py_INCREF(batch);
    Py_INCREF(record);
    Py_XSETREF(BatchType, (PyTypeObject *)batch);
    Py_XSETREF(RecordType, (PyTypeObject *)record);
    Py_RETURN_NONE;
}

int
kd_buffer(PyObject *o, Py_buffer *view)
{
    if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) == 0)
        return 0;
    PyErr_Clear();          /* not a flat buffer: the Python path takes it */
    view->obj = NULL;
    view->buf = NULL;
    view->len = 0;
    return 1;
}

int
kd_args(PyObject *const *args, Py_ssize_t nargs, const char *usage, const char *format, ...)
{
    Py_buffer *held[16];
    int n_held = 0, rc = 0;
    if (nargs != (Py_ssize_t)strlen(format) || nargs > 16) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    va_list ap;
    va_start(ap, format);
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *a = args[i];
        switch (format[i]) {
        case 'A':
            if (!PyByteArray_Check(a)) {
                PyErr_SetString(PyExc_TypeError, usage);
                goto fail;
            }
            /* fall through */
        case 'O':
            *va_arg(ap, PyObject **) = a;
            break;
        case 'n': {
            Py_ssize_t *p = va_arg(ap, Py_ssize_t *);
            if ((*p = PyLong_AsSsize_t(a)) == -1 && PyErr_Occurred())
                goto fail;
            break;
        }
        case 'L': {
            long long *p = va_arg(ap, long long *);
            if ((*p = PyLong_AsLongLong(a)) == -1 && PyErr_Occurred())
                goto fail;
            break;
        }
        case 'l': {
            long *p = va_arg(ap, long *);
            if ((*p = PyLong_AsLong(a)) == -1 && PyErr_Occurred())
                goto fail;
            break;
        }
        default: {      /* y, Y */
            Py_buffer *v = va_arg(ap, Py_buffer *);
            if (format[i] == 'y')
                rc |= kd_buffer(a, v);
            else if (PyObject_GetBuffer(a, v, PyBUF_SIMPLE) < 0)
                goto fail;
            if (v->obj != NULL)
                held[n_held++] = v;
        }
        }
    }
    va_end(ap);
    return rc;
fail:
    va_end(ap);
    while (n_held > 0)
        PyBuffer_Release(held[--n_held]);
    return -1;
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
    {"v2_hop", (PyCFunction)(void (*)(void))kd_v2_hop, METH_FASTCALL,
     "v2_hop(buf, pos, end, target) -> pos: hop over framed v2 entries until target or one it does not frame."},
    {"decode_v2_records", (PyCFunction)(void (*)(void))kd_decode_v2_records, METH_FASTCALL,
     "decode_v2_records(data, batch) -> list of Record, or None if the data is malformed in any way: the "
     "records of the non-control v2 Batch, data its records section, decompressed (the fields it needs are read "
     "from the batch here, the one place). decode_v2_records(data, base_offset, base_timestamp, log_append_time, "
     "base_sequence, count): the same with the fields given (for the tests)."},
    {"decode_v2_span", (PyCFunction)(void (*)(void))kd_decode_v2_span, METH_FASTCALL,
     "decode_v2_span(data, start, base_offset, base_timestamp, log_append_time, base_sequence, first, take, "
     "count) -> (list of Record, next_start), or None if the data is malformed in any way."},
    {"decode_legacy_set", (PyCFunction)(void (*)(void))kd_decode_legacy_set, METH_FASTCALL,
     "decode_legacy_set(data, wrapper_offset, wrapper_magic, log_append_time) -> list of Record, or None "
     "if the decompressed inner message set is malformed in any way."},
    {"legacy_set_span", (PyCFunction)(void (*)(void))kd_legacy_set_span, METH_FASTCALL,
     "legacy_set_span(data, wrapper_offset, wrapper_magic) -> (first_offset, count) | None: what "
     "decode_legacy_set's records would say of their offsets, without making them (None: malformed)."},
    {"legacy_scan", (PyCFunction)(void (*)(void))kd_legacy_scan, METH_FASTCALL,
     "legacy_scan(data, start, end) -> (next, count, first_inner, last_inner) | None: the inner entries "
     "wholly inside data[start:end) (a window of an inner set), checked, without making them (None: malformed)."},
    {"legacy_decode_span", (PyCFunction)(void (*)(void))kd_legacy_decode_span, METH_FASTCALL,
     "legacy_decode_span(data, start, end, base, take, log_append_time) -> (list of Record, next) | None: the "
     "records of at most take inner entries wholly inside data[start:end) (None: malformed)."},
    {"text_legacy_set", (PyCFunction)(void (*)(void))kd_text_legacy_set, METH_FASTCALL,
     "text_legacy_set(out, batch, data, log_append_ts, mode, last, gaps) -> (first, last) | None: text_item's "
     "lines for a legacy wrapper from its decompressed inner set, without making its records."},
    {"json_legacy_line", (PyCFunction)(void (*)(void))kd_json_legacy_line, METH_FASTCALL,
     "json_legacy_line(file_json, batch, data, log_append_ts, encoding) -> (str, first, last) | None: "
     "json_batch_line's line for a legacy wrapper from its decompressed inner set, without making its records."},
    {"scan_plain_run", (PyCFunction)(void (*)(void))kd_scan_plain_run, METH_FASTCALL,
     "scan_plain_run(buf, pos, end, max_batches, hi, max_size, interval, epochs, state) -> None | "
     "(new_pos, state): the recovery scanner's fast path over the plain v2 batches from pos on; "
     "state = (valid, last_entry_at, lo, prev_epoch, max_ts, max_ts_offset, batches, records, "
     "index_last, time_last); epochs is appended to in place. None: nothing consumed."},
    {"clean_segment_files", (PyCFunction)(void (*)(void))kd_clean_segment_files, METH_FASTCALL,
     "clean_segment_files(log, index, timeindex, base, max_size, interval, max_log, max_side) -> (size, "
     "index_size, timeindex_size, first_offset, state, epochs) | None: a segment read and scanned whole as "
     "plain batches, and its index files (paths, or None) proved clean against it; None: anything else."},
    {"summarize_v2", (PyCFunction)(void (*)(void))kd_summarize_v2, METH_FASTCALL,
     "summarize_v2(buf, pos, end, max_batches, size_buckets, producers) -> (new_pos, batches, records, "
     "first, last, min_ts, max_ts, txn, ctl, invalid, codecs, sizes): kdump info's sums over a run of v2 batches."},
    {"json_batch_line", (PyCFunction)(void (*)(void))kd_json_batch_line, METH_FASTCALL,
     "json_batch_line(file_json, batch, records, encoding) -> str | None: jsonout.batch_line for a plain "
     "view (encoding 0 base64, 1 hex, 2 utf8); None when the Python writer must do it."},
    {"avro_json", (PyCFunction)(void (*)(void))kd_avro_json, METH_FASTCALL,
     "avro_json(program, data, pos, limit) -> (json_text, end) | None: an Avro datum as JSON text of at most limit bytes (avro_text.py)."},
    {"text_item", (PyCFunction)(void (*)(void))kd_text_item, METH_FASTCALL,
     "text_item(out, batch, records, mode, last, gaps) -> int | None: TextDump.item's lines appended to the "
     "bytearray out as UTF-8 (mode: text.c_mode), the record offsets followed into gaps (None: not followed); "
     "the last offset, or None when the Python renderer must do it."},
    {"text_v2_run", (PyCFunction)(void (*)(void))kd_text_v2_run, METH_FASTCALL,
     "text_v2_run(out, buf, pos, end, max_batches, max_records, mode, last, gaps, max_out) -> (new_pos, first, "
     "last): text_item's lines for the run of plain v2 batches from pos, written from the segment's bytes; "
     "it stops before the first batch it does not take (text.c)."},
    {"json_v2_run", (PyCFunction)(void (*)(void))kd_json_v2_run, METH_FASTCALL,
     "json_v2_run(file_json, buf, pos, end, max_batches, max_records, max_section, encoding, max_out) -> (text, "
     "new_pos, first, last): json_v2_line's lines (joined by newlines) for the run of plain v2 batches from pos "
     "whose offsets follow one another; it stops before the first batch it does not take (jsonout.c)."},
    {"json_v2_line", (PyCFunction)(void (*)(void))kd_json_v2_line, METH_FASTCALL,
     "json_v2_line(file_json, batch, data, encoding) -> (str, first_offset, last_offset) | None: the line of a "
     "v2 batch written straight from its (decompressed) records section, whose offsets follow one another; "
     "None for anything else."},
    {"flat_records", (PyCFunction)(void (*)(void))kd_flat_records, METH_FASTCALL,
     "flat_records(head, tail, batch, records, log_append_ts, encoding, limit) -> (str, count) | None: "
     "render/records.py record_objects for Record objects, a v2 records section or a legacy inner set."},
    {"flat_v2_run", (PyCFunction)(void (*)(void))kd_flat_v2_run, METH_FASTCALL,
     "flat_v2_run(head, file_json, buf, pos, end, max_batches, max_records, encoding, max_out, limit, markers, "
     "lso, committed_only) -> (text, new_pos, count): kdump records' flat objects for the run of plain v2 "
     "batches from pos, straight from the segment's bytes (jsonout.c)."},
    {"json_records", (PyCFunction)(void (*)(void))kd_json_records, METH_FASTCALL,
     "json_records(records, encoding) -> str | None: the record objects of json_batch_line, comma-separated "
     "(a batch streamed a slice of records at a time); None when the Python writer must do it."},
    {"crc32c", kd_crc32c, METH_VARARGS, "crc32c(data, value=0) -> CRC-32C (Castagnoli) of data."},
    {"find_candidate", (PyCFunction)(void (*)(void))kd_find_candidate, METH_FASTCALL,
     "find_candidate(buf, pos, end, top) -> int: the resync's next candidate position, or -1."},
    {"index_clean", (PyCFunction)(void (*)(void))kd_index_clean, METH_FASTCALL,
     "index_clean(log, end, base, index, timeindex) -> bool: True when neither index file (bytes, or None: "
     "not there) has a finding against the log's first end bytes; False: the Python check decides."},
    {"watch_mapping", kd_watch_mapping, METH_VARARGS,
     "watch_mapping(mapping, path_bytes) -> slot | None: name the file if a read of the mapping raises SIGBUS."},
    {"unwatch_mapping", kd_unwatch_mapping, METH_O, "unwatch_mapping(slot): the mapping is about to close."},
    {"catch_sigbus", kd_catch_sigbus, METH_NOARGS,
     "catch_sigbus() -> bool: on SIGBUS, write one located error line and exit with status 3."},
    {"_crc32c_sw", kd_crc32c_sw, METH_VARARGS, "crc32c without hardware acceleration (for tests)."},
    {"crc32", kd_crc32, METH_O, "crc32(data): the IEEE CRC-32 of legacy messages (zlib.crc32's value)."},
    {"_crc32_sw", kd_crc32_sw, METH_O, "crc32 without carry-less multiplies (for tests)."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef kd_module = {
    PyModuleDef_HEAD_INIT, "kdump._speedups.native",
    "Optional C accelerators for kdump's hot loops (the pure-Python code is the reference).",
    -1, kd_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit_native(void)
{
    crc_init();
    java_utf8_init();
    kd_text_init();
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
    PyObject *batch_names = names_tuple(batch_field_names, BATCH_FIELDS);
    PyObject *record_names = names_tuple(record_field_names, RECORD_FIELDS);
    int failed = batch_names == NULL || record_names == NULL ||
                 PyModule_AddObjectRef(m, "BATCH_FIELD_NAMES", batch_names) < 0 ||
                 PyModule_AddObjectRef(m, "RECORD_FIELD_NAMES", record_names) < 0;
    Py_XDECREF(batch_names);
    Py_XDECREF(record_names);
    if (failed || PyModule_AddStringConstant(m, "crc32c_impl", crc_impl_name) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
