/* summarize_v2: the twin of PartitionSummary._add_batch in kdump/survey/summary.py, over a run */

#include "speedups.h"

/* Batch attributes (kdump/model.py) */
#define COMPRESSION_MASK 0x07
#define TRANSACTIONAL_FLAG 0x10
#define CONTROL_FLAG 0x20
#define DELETE_HORIZON_FLAG 0x40

#define CODECS 8
#define MAX_BUCKETS 32

/*
 * kdump info's per-batch sums over the run of well-formed v2 batches from pos: the entries
 * scan_v2 would take (walk.c), with no Batch object made. It stops where scan_v2 stops;
 * Python's Walker takes over there. Producer ids go straight into the given set (one
 * PySet_Add per change of id, not per batch).
 */
PyObject *
kd_summarize_v2(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "summarize_v2(buf, pos, end, max_batches, size_buckets, producers)");
        return NULL;
    }
    Py_ssize_t pos, end, max_batches;
    if (span_args(args, &pos, &end, &max_batches) < 0)
        return NULL;
    PyObject *limits_obj = args[4], *producers = args[5];
    if (!PyTuple_Check(limits_obj) || PyTuple_GET_SIZE(limits_obj) >= MAX_BUCKETS || !PySet_Check(producers)) {
        PyErr_SetString(PyExc_TypeError, "summarize_v2: size_buckets must be a short tuple, producers a set");
        return NULL;
    }
    Py_ssize_t n_limits = PyTuple_GET_SIZE(limits_obj);
    int64_t limits[MAX_BUCKETS];
    for (Py_ssize_t i = 0; i < n_limits; i++) {
        limits[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(limits_obj, i));
        if (limits[i] == -1 && PyErr_Occurred())
            return NULL;
    }

    int64_t n = 0, records = 0, first = 0, last = 0, low = 0, high = 0, txn = 0, ctl = 0, invalid = 0;
    int has_ts = 0, have_producer = 0;
    int64_t prev_producer = 0;
    int64_t codecs[CODECS] = {0}, sizes[MAX_BUCKETS + 1] = {0};

    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();      /* not a flat buffer: take nothing, Python walks it */
        goto done;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    if (end > view.len)
        end = view.len;
    while (n < max_batches && pos >= 0 && end - pos > HEADER_UP_TO_MAGIC) {
        const unsigned char *h = buf + pos;
        /* scan_v2's framing, exactly */
        if (h[16] != 2)
            break;
        int32_t length = (int32_t)be32(h + 8);
        if ((int64_t)length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD)
            break;
        if ((int64_t)length + LOG_OVERHEAD > (int64_t)(end - pos))
            break;
        Py_ssize_t size = (Py_ssize_t)length + LOG_OVERHEAD;
        int64_t base_offset = (int64_t)be64(h);
        int64_t last_offset;
        if (add_overflows(base_offset, (int32_t)be32(h + 23), &last_offset))
            break;
        uint32_t crc = be32(h + 17);
        int16_t attributes = be16s(h + 21);
        int64_t base_ts = (int64_t)be64(h + 27);
        int64_t max_ts = (int64_t)be64(h + 35);
        int64_t producer_id = (int64_t)be64(h + 43);
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

        /* _add_batch, field by field */
        if (n == 0 || base_offset < first)
            first = base_offset;
        if (n == 0 || last_offset > last)
            last = last_offset;
        n++;
        records += count;
        if (max_ts >= 0) {
            int64_t lo = (0 <= base_ts && base_ts <= max_ts && !(attributes & DELETE_HORIZON_FLAG)) ? base_ts : max_ts;
            if (!has_ts || max_ts > high)
                high = max_ts;
            if (!has_ts || lo < low)
                low = lo;
            has_ts = 1;
        }
        codecs[attributes & COMPRESSION_MASK]++;
        if (producer_id >= 0 && !(have_producer && producer_id == prev_producer)) {
            PyObject *id = PyLong_FromLongLong(producer_id);
            if (id == NULL || PySet_Add(producers, id) < 0) {
                Py_XDECREF(id);
                PyBuffer_Release(&view);
                return NULL;
            }
            Py_DECREF(id);
            prev_producer = producer_id;
            have_producer = 1;
        }
        if (attributes & TRANSACTIONAL_FLAG)
            txn++;
        if (attributes & CONTROL_FLAG)
            ctl++;
        if (computed != crc)
            invalid++;
        Py_ssize_t bucket = 0;
        while (bucket < n_limits && size > limits[bucket])
            bucket++;
        sizes[bucket]++;
        pos += size;
    }
    PyBuffer_Release(&view);
done:;
    PyObject *codec_t = PyTuple_New(CODECS), *size_t_ = PyTuple_New(n_limits + 1);
    if (codec_t == NULL || size_t_ == NULL)
        goto fail;
    for (int i = 0; i < CODECS; i++) {
        PyObject *v = PyLong_FromLongLong(codecs[i]);
        if (v == NULL)
            goto fail;
        PyTuple_SET_ITEM(codec_t, i, v);
    }
    for (Py_ssize_t i = 0; i <= n_limits; i++) {
        PyObject *v = PyLong_FromLongLong(sizes[i]);
        if (v == NULL)
            goto fail;
        PyTuple_SET_ITEM(size_t_, i, v);
    }
    /* (new_pos, batches, records, first, last, min_ts, max_ts, txn, ctl, invalid, codecs, sizes) */
    return Py_BuildValue("(nLLNNNNLLLNN)", pos, n, records,
                         n ? PyLong_FromLongLong(first) : Py_NewRef(Py_None),
                         n ? PyLong_FromLongLong(last) : Py_NewRef(Py_None),
                         has_ts ? PyLong_FromLongLong(low) : Py_NewRef(Py_None),
                         has_ts ? PyLong_FromLongLong(high) : Py_NewRef(Py_None),
                         txn, ctl, invalid, codec_t, size_t_);
fail:
    Py_XDECREF(codec_t);
    Py_XDECREF(size_t_);
    return NULL;
}
