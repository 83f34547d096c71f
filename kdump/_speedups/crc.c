/* CRC-32C and CRC-32: the twin of kdump/format/crc.py */

#include "speedups.h"

/* SSE4.2 CRC-32C on x86-64 with GCC or clang (checked at run time); -DKDUMP_NO_HW_CRC
 * builds the portable table-driven code only, as on every other platform. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(KDUMP_NO_HW_CRC)
#  define KD_HAVE_SSE42 1
#  include <nmmintrin.h>
#  include <wmmintrin.h>
#  include <smmintrin.h>
#else
#  define KD_HAVE_SSE42 0
#endif

/* ------------------------------------------------------------------------------------ */
/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78)                                 */
/*                                                                                       */
/* All the internal functions work on the raw register: callers invert on entry and     */
/* exit. Software: slicing-by-8 tables. SSE4.2: three independent streams over adjacent   */
/* blocks (the crc32 instruction has a latency of ~3 cycles but a throughput of 1), then  */
/* the first two are moved past the following blocks with a "append N zero bytes"         */
/* operator, which is linear and so tabulated per byte of the register.                   */
/* ------------------------------------------------------------------------------------ */

#define CRC32C_POLY 0x82F63B78u
#define CRC32_POLY 0xEDB88320u     /* IEEE CRC-32 (zlib's), for legacy v0/v1 messages */
#define CRC32_FOLD_MIN 64          /* shorter buffers: the table (the fold's fixed cost) */

typedef uint32_t crc_table[8][256];

static crc_table crc_tab;          /* CRC-32C */
static crc_table crc32_tab;        /* CRC-32 */

static void
crc_tables_fill(crc_table tab, uint32_t poly)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        tab[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = tab[0][n];
        for (int t = 1; t < 8; t++) {
            c = tab[0][c & 0xFF] ^ (c >> 8);
            tab[t][n] = c;
        }
    }
}

static void
crc_tables_init(void)
{
    crc_tables_fill(crc_tab, CRC32C_POLY);
    crc_tables_fill(crc32_tab, CRC32_POLY);
}

/* Slicing-by-8 over either table (raw register in and out). */
static inline uint32_t
crc_slice8(const crc_table tab, uint32_t crc, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w = le64(p) ^ (uint64_t)crc;
        uint32_t lo = (uint32_t)w, hi = (uint32_t)(w >> 32);
        crc = tab[7][lo & 0xFF] ^ tab[6][(lo >> 8) & 0xFF] ^
              tab[5][(lo >> 16) & 0xFF] ^ tab[4][lo >> 24] ^
              tab[3][hi & 0xFF] ^ tab[2][(hi >> 8) & 0xFF] ^
              tab[1][(hi >> 16) & 0xFF] ^ tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

static uint32_t
crc_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    return crc_slice8(crc_tab, crc, p, n);
}

#if KD_HAVE_SSE42
static uint32_t crc32_fold(uint32_t crc, const unsigned char *p, size_t n);
static int have_clmul = 0;
#endif

/* The IEEE CRC-32 of p[0:n], finished (what zlib.crc32(data) returns). Legacy messages
 * need one per inner message: folded with carry-less multiplies where the CPU has them
 * (a quarter of the text dump of v1 gzip wrappers went to slicing-by-8 before). */
uint32_t
crc32_ieee(const unsigned char *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
#if KD_HAVE_SSE42
    if (have_clmul && n >= CRC32_FOLD_MIN) {
        size_t whole = n & ~(size_t)15;
        crc = crc32_fold(crc, p, whole);
        p += whole;
        n -= whole;
    }
#endif
    return ~crc_slice8(crc32_tab, crc, p, n);
}

/* crc32_ieee without carry-less multiplies, so tests can compare both. */
static uint32_t
crc32_ieee_sw(const unsigned char *p, size_t n)
{
    return ~crc_slice8(crc32_tab, 0xFFFFFFFFu, p, n);
}

#if KD_HAVE_SSE42

#define CRC_LONG 8192      /* block of the three-stream loop for big buffers */
#define CRC_SHORT 256      /* ... and for medium ones */

/* shift_long[k][b]: the register b << 8k after CRC_LONG zero bytes; same for short. */
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];

/* A GF(2)-linear map on 32-bit registers, as the images of the 32 unit vectors. */
typedef struct { uint32_t col[32]; } gf2mat;

static uint32_t
gf2_apply(const gf2mat *m, uint32_t v)
{
    uint32_t r = 0;
    for (int i = 0; v; i++, v >>= 1)
        if (v & 1)
            r ^= m->col[i];
    return r;
}

/* out = a after b (apply b first). out may not alias a or b. */
static void
gf2_compose(gf2mat *out, const gf2mat *a, const gf2mat *b)
{
    for (int i = 0; i < 32; i++)
        out->col[i] = gf2_apply(a, b->col[i]);
}

static void
zeros_table(uint32_t tab[4][256], size_t nbytes)
{
    gf2mat power, result, tmp;
    /* one zero byte: register -> table[reg & 0xff] ^ (reg >> 8) */
    for (int i = 0; i < 32; i++) {
        uint32_t v = (uint32_t)1 << i;
        power.col[i] = crc_tab[0][v & 0xFF] ^ (v >> 8);
        result.col[i] = v;      /* identity */
    }
    while (nbytes) {
        if (nbytes & 1) {
            gf2_compose(&tmp, &power, &result);
            result = tmp;
        }
        nbytes >>= 1;
        if (nbytes) {
            gf2_compose(&tmp, &power, &power);
            power = tmp;
        }
    }
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            tab[k][b] = gf2_apply(&result, b << (8 * k));
}

static inline uint32_t
shift_by(const uint32_t tab[4][256], uint32_t crc)
{
    return tab[0][crc & 0xFF] ^ tab[1][(crc >> 8) & 0xFF] ^ tab[2][(crc >> 16) & 0xFF] ^ tab[3][crc >> 24];
}

/* While three blocks of ``block`` bytes remain: one stream each, then the first two moved
 * past the blocks after them (``shift``) and combined. Advances *pp and *np. */
__attribute__((target("sse4.2"), always_inline))
static inline uint64_t
crc_three_streams(uint64_t c0, const unsigned char **pp, size_t *np, size_t block, const uint32_t shift[4][256])
{
    const unsigned char *p = *pp;
    size_t n = *np;
    while (n >= 3 * block) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *stop = p + block;
        do {
            uint64_t w0, w1, w2;
            memcpy(&w0, p, 8);
            memcpy(&w1, p + block, 8);
            memcpy(&w2, p + 2 * block, 8);
            c0 = _mm_crc32_u64(c0, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
            p += 8;
        } while (p < stop);
        c0 = shift_by(shift, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = shift_by(shift, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * block;
        n -= 3 * block;
    }
    *pp = p;
    *np = n;
    return c0;
}

__attribute__((target("sse4.2")))
static uint32_t
crc_hw(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c0 = crc;
    while (n && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        n--;
    }
    c0 = crc_three_streams(c0, &p, &n, CRC_LONG, shift_long);
    c0 = crc_three_streams(c0, &p, &n, CRC_SHORT, shift_short);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c0 = _mm_crc32_u64(c0, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}

/*
 * CRC-32 (IEEE, reflected) by folding: the data is seen as a polynomial over GF(2), and a
 * 128-bit lane that stands d bits before the end is moved forward by multiplying its two
 * halves by x^(d+32) mod P and x^(d-32) mod P (bit-reflected, hence the 33-bit constants)
 * and adding it to the lane there. Four lanes move 64 bytes a step; they are then folded
 * into one, the one into 64 bits, and the 64 bits reduced to the 32-bit remainder by Barrett
 * reduction (mu = x^64 / P). The constants are these powers of x for P = 0x104C11DB7,
 * reflected; tests/speedups compare the result with zlib.crc32 at every length and alignment.
 */
static const uint64_t fold_64[2] = {0x0154442bd4ull, 0x01c6e41596ull};    /* x^(512+32), x^(512-32) */
static const uint64_t fold_16[2] = {0x01751997d0ull, 0x00ccaa009eull};    /* x^(128+32), x^(128-32) */
static const uint64_t fold_8 = 0x0163cd6124ull;                             /* x^64 */
static const uint64_t barrett[2] = {0x01db710641ull, 0x01f7011641ull};    /* P', mu' */

__attribute__((target("pclmul,sse4.1")))
static inline __m128i
fold_lane(__m128i lane, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(lane, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(lane, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* The raw register over p[0:n], n a multiple of 16 and at least CRC32_FOLD_MIN. */
__attribute__((target("pclmul,sse4.1")))
static uint32_t
crc32_fold(uint32_t crc, const unsigned char *p, size_t n)
{
    __m128i lane[4];
    for (int i = 0; i < 4; i++)
        lane[i] = _mm_loadu_si128((const __m128i *)(p + 16 * i));
    lane[0] = _mm_xor_si128(lane[0], _mm_cvtsi32_si128((int)crc));
    p += 64;
    n -= 64;
    __m128i k = _mm_loadu_si128((const __m128i *)fold_64);
    for (; n >= 64; p += 64, n -= 64) {
        for (int i = 0; i < 4; i++)
            lane[i] = fold_lane(lane[i], k, _mm_loadu_si128((const __m128i *)(p + 16 * i)));
    }
    k = _mm_loadu_si128((const __m128i *)fold_16);
    __m128i x = lane[0];
    for (int i = 1; i < 4; i++)
        x = fold_lane(x, k, lane[i]);
    for (; n >= 16; p += 16, n -= 16)
        x = fold_lane(x, k, _mm_loadu_si128((const __m128i *)p));

    /* 128 bits to 64: the low half times x^(128-32), added to the high half */
    const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
    x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, k, 0x10));
    /* then the low 32 bits times x^64, added to the rest */
    __m128i rest = _mm_srli_si128(x, 4);
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), _mm_cvtsi64_si128((long long)fold_8), 0x00), rest);
    /* Barrett: q = (x mod x^32) * mu, r = x + (q mod x^32) * P; the remainder is the middle word */
    __m128i b = _mm_loadu_si128((const __m128i *)barrett);
    __m128i q = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), b, 0x10), low32);
    x = _mm_xor_si128(x, _mm_clmulepi64_si128(q, b, 0x00));
    return (uint32_t)_mm_extract_epi32(x, 1);
}

#endif /* KD_HAVE_SSE42 */

uint32_t (*crc_raw)(uint32_t, const unsigned char *, size_t) = crc_sw;
const char *crc_impl_name = "software";

void
crc_init(void)
{
    crc_tables_init();
#if KD_HAVE_SSE42
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        zeros_table(shift_long, CRC_LONG);
        zeros_table(shift_short, CRC_SHORT);
        crc_raw = crc_hw;
        crc_impl_name = "sse4.2";
    }
    have_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}

/* ------------------------------------------------------------------------------------ */
/* crc32c                                                                                */
/* ------------------------------------------------------------------------------------ */

PyObject *
kd_crc32c(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    PyObject *value_obj = NULL;
    if (!PyArg_ParseTuple(args, "y*|O:crc32c", &view, &value_obj))
        return NULL;
    uint32_t value = 0;
    if (value_obj != NULL) {
        if (!PyLong_Check(value_obj)) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_TypeError, "crc32c() value must be an int");
            return NULL;
        }
        value = (uint32_t)(PyLong_AsUnsignedLongLongMask(value_obj) & 0xFFFFFFFFu);
        if (PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    uint32_t crc;
    if (view.len >= KD_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        crc = crc32c_value(value, (const unsigned char *)view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = crc32c_value(value, (const unsigned char *)view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

/* The table-driven implementation whatever the CPU, so tests can compare both. */
PyObject *
kd_crc32c_sw(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I:_crc32c_sw", &view, &value))
        return NULL;
    uint32_t crc = ~crc_sw(~(uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}


/* ``crc`` of arg's buffer, the GIL let go on large ones. */
static PyObject *
crc_of_buffer(PyObject *arg, uint32_t (*crc)(const unsigned char *, size_t))
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t value;
    if (view.len >= KD_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        value = crc((const unsigned char *)view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        value = crc((const unsigned char *)view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(value);
}

/* crc32(data): crc32_ieee, as zlib.crc32(data) (format/crc.py crc32). */
PyObject *
kd_crc32(PyObject *self, PyObject *arg)
{
    (void)self;
    return crc_of_buffer(arg, crc32_ieee);
}

/* crc32_ieee's table-driven form whatever the CPU, so tests can compare both. */
PyObject *
kd_crc32_sw(PyObject *self, PyObject *arg)
{
    (void)self;
    return crc_of_buffer(arg, crc32_ieee_sw);
}
