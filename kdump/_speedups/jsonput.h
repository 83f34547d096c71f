/* What the two JSON writers share: jsonout.c (dump's NDJSON, render/jsonout.py) and flatout.c
 * (kdump records' flat objects, render/records.py). The room a JSON string takes, the payload
 * encodings and their writers, a record's payload fields and sizes (static inline: each writer
 * keeps them inlined in its loop), a writer's result (defined in jsonout.c). */

#ifndef KDUMP_JSONPUT_H
#define KDUMP_JSONPUT_H

#include "speedups.h"

enum { ENC_BASE64 = 0, ENC_HEX = 1, ENC_UTF8 = 2 };

#define PUT KD_PUT

/* Room a JSON string of n bytes may take in any encoding (utf8: \ufffd a byte at worst). */
static inline Py_ssize_t
json_room(Py_ssize_t n)
{
    return 6 * n + 6;
}

/* An encoding of ours. */
static inline int
encoding_ok(long encoding)
{
    return encoding == ENC_BASE64 || encoding == ENC_HEX || encoding == ENC_UTF8;
}

/* A Batch's values as put_line takes them (magic 0, 1 or 2): 0, or -1 (not ours). */
static inline int
line_batch(PyObject *batch, int64_t *v)
{
    return batch_values(batch, v) < 0 || v[BF_MAGIC] < 0 || v[BF_MAGIC] > 2 ? -1 : 0;
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

static inline char *
put_utf8_json(char *w, const unsigned char *s, Py_ssize_t n)
{
    return put_utf8_string(w, s, n, 1, NULL);
}

/* A JSON literal for ``n`` bytes at ``s`` (NULL: null) in the encoding. Room: json_room(n). */
static inline char *
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

/* A record's ``,"key":…,"value":…,"headers":[…]``, the payloads in the encoding; header keys
 * are text whatever the encoding: all ASCII (``ascii``: dump's objects), or as dumps writes them
 * with ensure_ascii=False (``*wide`` set if one is not ASCII: the flat record objects). */
static inline char *
kd_json_key_value_headers(char *w, const kd_record *r, int encoding, int ascii, int *wide)
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

/* A record's ,"key_size":…,"value_size":…,"sequence":… (-1 for a null key or value), in both
 * of its objects. */
static inline char *
kd_json_sizes_sequence(char *w, const kd_record *r)
{
    PUT(w, ",\"key_size\":");
    w = kd_put_i64(w, r->key == NULL ? -1 : r->klen);
    PUT(w, ",\"value_size\":");
    w = kd_put_i64(w, r->value == NULL ? -1 : r->vlen);
    PUT(w, ",\"sequence\":");
    w = kd_put_i64(w, r->sequence);
    return w;
}

/* o's bytes from ``from`` as an ASCII str (NULL with an exception set). */
PyObject *kd_json_ascii_text(const kd_out *o, Py_ssize_t from);
/* What a writer's ``rc`` makes of ``o``, which it ends: its text, None, or NULL. */
PyObject *kd_json_written(kd_out *o, int rc);

#endif /* KDUMP_JSONPUT_H */
