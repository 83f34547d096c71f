/* scan_v2: the twin of Walker in kdump/format/walk.py */

#include "speedups.h"

int
span_args(PyObject *const *args, Py_ssize_t *pos, Py_ssize_t *end, Py_ssize_t *max_batches)
{
    Py_ssize_t *out[3] = {pos, end, max_batches};
    for (int i = 0; i < 3; i++) {
        *out[i] = PyLong_AsSsize_t(args[i + 1]);
        if (*out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

PyObject *
kd_scan_v2(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "scan_v2(buf, pos, end, max_batches)");
        return NULL;
    }
    if (BatchType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "kdump._speedups.init() was not called");
        return NULL;
    }
    Py_ssize_t pos, end, max_batches;
    if (span_args(args, &pos, &end, &max_batches) < 0)
        return NULL;

    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;

    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        /* Not a flat buffer: consume nothing, the Python walker decides what happens. */
        PyErr_Clear();
        goto done;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    if (end > view.len)
        end = view.len;

    Py_ssize_t n = 0;
    while (n < max_batches && pos >= 0 && end - pos > HEADER_UP_TO_MAGIC) {
        const unsigned char *h = buf + pos;
        if (h[16] != 2)
            break;
        int32_t length = (int32_t)be32(h + 8);
        if ((int64_t)length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD)
            break;
        if ((int64_t)length + LOG_OVERHEAD > (int64_t)(end - pos))
            break;
        Py_ssize_t size = (Py_ssize_t)length + LOG_OVERHEAD;
        /* From here the whole entry, header included, lies inside [pos, end). */
        int64_t base_offset = (int64_t)be64(h);
        int32_t last_delta = (int32_t)be32(h + 23);
        int64_t last_offset;
        if (add_overflows(base_offset, last_delta, &last_offset))
            break;    /* Python would make a big int: let it */
        int32_t epoch = (int32_t)be32(h + 12);
        uint32_t crc = be32(h + 17);
        int16_t attributes = be16s(h + 21);
        int64_t base_ts = (int64_t)be64(h + 27);
        int64_t max_ts = (int64_t)be64(h + 35);
        int64_t producer_id = (int64_t)be64(h + 43);
        int16_t producer_epoch = be16s(h + 51);
        int32_t base_sequence = (int32_t)be32(h + 53);
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

        PyObject *items[BATCH_FIELDS];
        items[BF_POSITION] = PyLong_FromSsize_t(pos);
        items[BF_BASE_OFFSET] = PyLong_FromLongLong(base_offset);
        /* equal values share one int object (one-record batches: both pairs) */
        items[BF_LAST_OFFSET] = (last_delta == 0 && items[BF_BASE_OFFSET] != NULL) ? Py_NewRef(items[BF_BASE_OFFSET]) : PyLong_FromLongLong(last_offset);
        items[BF_COUNT] = PyLong_FromLong(count);
        items[BF_SIZE] = PyLong_FromSsize_t(size);
        items[BF_MAGIC] = Py_NewRef(int_two);
        items[BF_CRC] = PyLong_FromUnsignedLong(crc);
        items[BF_CRC_VALID] = PyBool_FromLong(computed == crc);
        items[BF_ATTRIBUTES] = PyLong_FromLong(attributes);
        items[BF_PARTITION_LEADER_EPOCH] = PyLong_FromLong(epoch);
        items[BF_BASE_TIMESTAMP] = PyLong_FromLongLong(base_ts);
        items[BF_MAX_TIMESTAMP] = (max_ts == base_ts && items[BF_BASE_TIMESTAMP] != NULL) ? Py_NewRef(items[BF_BASE_TIMESTAMP]) : PyLong_FromLongLong(max_ts);
        items[BF_PRODUCER_ID] = PyLong_FromLongLong(producer_id);
        items[BF_PRODUCER_EPOCH] = PyLong_FromLong(producer_epoch);
        items[BF_BASE_SEQUENCE] = PyLong_FromLong(base_sequence);
        PyObject *batch = new_struct(BatchType, items, BATCH_FIELDS);
        if (batch == NULL)
            goto fail;
        int rc = PyList_Append(list, batch);
        Py_DECREF(batch);
        if (rc < 0)
            goto fail;
        pos += size;
        n++;
    }
    PyBuffer_Release(&view);
done:;
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
    if (pos < 0 || end - pos <= HEADER_UP_TO_MAGIC)
        return 0;
    const unsigned char *h = buf + pos;
    int32_t length = (int32_t)be32(h + 8);
    if (h[16] != 2 || (int64_t)length + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD ||
        (int64_t)length + LOG_OVERHEAD > (int64_t)(end - pos))
        return 0;
    Py_ssize_t size = (Py_ssize_t)length + LOG_OVERHEAD;
    int16_t attributes = be16s(h + 21);
    int32_t count = (int32_t)be32(h + 57);
    int64_t base_offset = (int64_t)be64(h), last_offset;
    if ((attributes & (0x07 | 0x20)) || count < 0 || count > max_records ||
        add_overflows(base_offset, (int32_t)be32(h + 23), &last_offset))
        return 0;
    uint32_t crc = be32(h + 17);
    if (crc32c_value(0, h + ATTRIBUTES_OFFSET, (size_t)(size - ATTRIBUTES_OFFSET)) != crc)
        return 0;
    v[0] = pos;
    v[1] = base_offset;
    v[2] = last_offset;
    v[3] = count;
    v[4] = size;
    v[5] = 2;
    v[6] = crc;
    v[7] = 1;
    v[8] = attributes;
    v[9] = (int32_t)be32(h + 12);
    v[10] = (int64_t)be64(h + 27);
    v[11] = (int64_t)be64(h + 35);
    v[12] = (int64_t)be64(h + 43);
    v[13] = be16s(h + 51);
    v[14] = (int32_t)be32(h + 53);
    return 1;
}
