/* summarize_v2: the twin of PartitionSummary._add_batch in kdump/survey/summary.py, over a run */

#include "speedups.h"

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
    Py_buffer view;
    Py_ssize_t pos, end, max_batches;
    PyObject *limits_obj, *producers;
    /* a buffer that is not flat (view.buf NULL): take nothing, Python walks it */
    if (kd_args(args, nargs, "summarize_v2(buf, pos, end, max_batches, size_buckets, producers)", "ynnnOO", &view,
                &pos, &end, &max_batches, &limits_obj, &producers) < 0)
        return NULL;
    if (!PyTuple_Check(limits_obj) || PyTuple_GET_SIZE(limits_obj) >= MAX_BUCKETS || !PySet_Check(producers)) {
        PyErr_SetString(PyExc_TypeError, "summarize_v2: size_buckets must be a short tuple, producers a set");
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t n_limits = PyTuple_GET_SIZE(limits_obj);
    int64_t limits[MAX_BUCKETS];
    for (Py_ssize_t i = 0; i < n_limits; i++) {
        limits[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(limits_obj, i));
        if (limits[i] == -1 && PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }

    int64_t n = 0, records = 0, first = 0, last = 0, low = 0, high = 0, txn = 0, ctl = 0, invalid = 0;
    int has_ts = 0, have_producer = 0;
    int64_t prev_producer = 0;
    int64_t codecs[CODECS] = {0}, sizes[MAX_BUCKETS + 1] = {0};

    const unsigned char *buf = (const unsigned char *)view.buf;
    end = kd_end(&view, end);
    int64_t v[BATCH_FIELDS];
    while (buf != NULL && n < max_batches && kd_v2_at(buf, pos, end, v)) {
        int64_t base_offset = v[BF_BASE_OFFSET], last_offset = v[BF_LAST_OFFSET], size = v[BF_SIZE];
        int64_t base_ts = v[BF_BASE_TIMESTAMP], max_ts = v[BF_MAX_TIMESTAMP], producer_id = v[BF_PRODUCER_ID];
        int64_t attributes = v[BF_ATTRIBUTES];
        int valid = kd_v2_crc_valid(buf, v, 1);

        /* _add_batch, field by field */
        if (n == 0 || base_offset < first)
            first = base_offset;
        if (n == 0 || last_offset > last)
            last = last_offset;
        n++;
        records += v[BF_COUNT];
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
        if (!valid)
            invalid++;
        Py_ssize_t bucket = 0;
        while (bucket < n_limits && size > limits[bucket])
            bucket++;
        sizes[bucket]++;
        pos += (Py_ssize_t)size;
    }
    PyBuffer_Release(&view);
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
