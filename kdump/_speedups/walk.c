/* scan_v2: the twin of Walker in kdump/format/walk.py */

#include "speedups.h"

PyObject *
kd_scan_v2(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    Py_buffer view;
    Py_ssize_t pos, end, max_batches;
    if (kd_initialised(BatchType) < 0 ||
        kd_args(args, nargs, "scan_v2(buf, pos, end, max_batches)", "ynnn", &view, &pos, &end, &max_batches) < 0)
        return NULL;
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    /* Not a flat buffer (view.buf NULL): consume nothing, the Python walker decides. */
    const unsigned char *buf = (const unsigned char *)view.buf;
    end = kd_end(&view, end);

    Py_ssize_t n = 0;
    int64_t v[BATCH_FIELDS];
    while (buf != NULL && n < max_batches && kd_v2_at(buf, pos, end, v)) {
        int valid = kd_v2_crc_valid(buf, v, 1);
        PyObject *items[BATCH_FIELDS];
        items[BF_POSITION] = PyLong_FromSsize_t(pos);
        items[BF_BASE_OFFSET] = PyLong_FromLongLong(v[BF_BASE_OFFSET]);
        /* equal values share one int object (one-record batches: both pairs) */
        items[BF_LAST_OFFSET] = (v[BF_LAST_OFFSET] == v[BF_BASE_OFFSET] && items[BF_BASE_OFFSET] != NULL)
                                    ? Py_NewRef(items[BF_BASE_OFFSET]) : PyLong_FromLongLong(v[BF_LAST_OFFSET]);
        items[BF_COUNT] = PyLong_FromLongLong(v[BF_COUNT]);
        items[BF_SIZE] = PyLong_FromLongLong(v[BF_SIZE]);
        items[BF_MAGIC] = Py_NewRef(int_two);
        items[BF_CRC] = PyLong_FromLongLong(v[BF_CRC]);
        items[BF_CRC_VALID] = PyBool_FromLong(valid);
        items[BF_ATTRIBUTES] = PyLong_FromLongLong(v[BF_ATTRIBUTES]);
        items[BF_PARTITION_LEADER_EPOCH] = PyLong_FromLongLong(v[BF_PARTITION_LEADER_EPOCH]);
        items[BF_BASE_TIMESTAMP] = PyLong_FromLongLong(v[BF_BASE_TIMESTAMP]);
        items[BF_MAX_TIMESTAMP] = (v[BF_MAX_TIMESTAMP] == v[BF_BASE_TIMESTAMP] && items[BF_BASE_TIMESTAMP] != NULL)
                                      ? Py_NewRef(items[BF_BASE_TIMESTAMP]) : PyLong_FromLongLong(v[BF_MAX_TIMESTAMP]);
        items[BF_PRODUCER_ID] = PyLong_FromLongLong(v[BF_PRODUCER_ID]);
        items[BF_PRODUCER_EPOCH] = PyLong_FromLongLong(v[BF_PRODUCER_EPOCH]);
        items[BF_BASE_SEQUENCE] = PyLong_FromLongLong(v[BF_BASE_SEQUENCE]);
        PyObject *batch = new_struct(BatchType, items, BATCH_FIELDS);
        if (batch == NULL)
            goto fail;
        int rc = PyList_Append(list, batch);
        Py_DECREF(batch);
        if (rc < 0)
            goto fail;
        pos += (Py_ssize_t)v[BF_SIZE];
        n++;
    }
    PyBuffer_Release(&view);
    PyObject *pos_obj = PyLong_FromSsize_t(pos);
    if (pos_obj == NULL) {
        Py_DECREF(list);
        return NULL;
    }
    PyObject *result = PyTuple_New(2);
    if (result == NULL) {
        Py_DECREF(list);
        Py_DECREF(pos_obj);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, list);
    PyTuple_SET_ITEM(result, 1, pos_obj);
    return result;

fail:
    PyBuffer_Release(&view);
    Py_DECREF(list);
    return NULL;
}


/*
 * The batch at ``pos`` as the run writers (text_v2_run, json_v2_run) take it: 1 when it is a
 * whole v2 batch inside [pos, end) that scan_v2 would take, with a valid CRC, uncompressed,
 * not a control batch, declaring 0..max_records records; ``v`` then holds what scan_v2 would
 * put in its Batch, field for field in Batch's order (crc_valid true). 0 for anything else:
 * the walk in Python takes it.
 */
int
kd_plain_v2_at(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, int64_t max_records, int64_t *v)
{
    if (!kd_v2_at(buf, pos, end, v) || (v[BF_ATTRIBUTES] & (COMPRESSION_MASK | CONTROL_FLAG)) || v[BF_COUNT] < 0 ||
        v[BF_COUNT] > max_records || !kd_v2_crc_valid(buf, v, 0))
        return 0;
    v[BF_CRC_VALID] = 1;
    return 1;
}


/*
 * v2_hop(buf, pos, end, target) -> position: from the entry at pos, hop entry to entry while
 * they are v2 entries kd_v2_at frames, until a position at or after target; the position
 * where it stopped (format/walk.py entry_at_or_after takes any other entry there). Framing
 * only: no CRC, no object; a walk for where entries start (storage/split.py's cuts).
 */
PyObject *
kd_v2_hop(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    Py_buffer view;
    Py_ssize_t pos, end, target;
    int rc = kd_args(args, nargs, "v2_hop(buf, pos, end, target)", "ynnn", &view, &pos, &end, &target);
    if (rc < 0)
        return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    end = kd_end(&view, end);
    int64_t v[BATCH_FIELDS];
    while (rc == 0 && pos < target && kd_v2_at(buf, pos, end, v))
        pos += (Py_ssize_t)v[BF_SIZE];
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(pos);
}
