/*
 * The compiled record path: v2 records of one batch, decoded and rendered without a Python object
 * per field.
 *
 * kdump/formats/records.py (decode_v2_records) and kdump/render/{jsonl,text}.py are the reference;
 * this file only ever speeds up what they would do on a batch whose checksum and framing already
 * passed. Every function returns None ("decline") the moment anything is not as the common case
 * expects: a varint longer than the fast path reads (4 bytes for an int32, 9 for an int64), a field
 * that runs past its record, a record count or size that does not add up, offsets outside the
 * batch or out of order, a max timestamp that differs. The caller then runs the reference path on
 * the same bytes, which finds and reports whatever is wrong. Declining is always safe; a different
 * answer never is, so the differential tests (tests/formats/test_fast_records.py) hold every output
 * byte-identical to the reference's.
 *
 * Functions (see _fastrecords.pyi):
 *   decode_v2(data, record_type, base_offset, last_offset, base_ts, max_ts, log_append, base_seq,
 *             count, check_max_ts) -> (list[Record], clean) | None
 *   render_v2(data, base_offset, last_offset, base_ts, max_ts, log_append, base_seq, count,
 *             check_max_ts, fmt, encoding, prefix, middle, middle2) -> bytes | None
 *   render_kafka_v2(data, base_offset, last_offset, base_ts, max_ts, log_append, base_seq, count,
 *                   check_max_ts, flags, label, previous) -> (bytes, previous, gaps) | None: the
 *       record lines of Kafka's kafka-dump-log (kdump/render/kafka_tool.record_line is the reference)
 *   columns_v2_many([(data, base_offset, last_offset, base_ts, max_ts, log_append, count,
 *                     check_max_ts), ...]) -> Arrow-layout buffers of the batches taken
 *   check_v2(data, base_offset, last_offset, base_ts, max_ts, log_append, count, check_max_ts)
 *       -> bool: decode_v2 would return (records, True)
 *   zstd_frames(...), check_v2_run(...): a run's deep check in a few calls (see there)
 *   scale_i64(buf, factor) -> bytes | None; take_fixed(values, width, index) -> bytes;
 *   nonempty_validity(offsets, n) -> (bitmap, nulls): Arrow column helpers (formats/arrow_columns.py)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ---- growable output buffer ------------------------------------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) {
        if (cap > PY_SSIZE_T_MAX / 2) return -1;
        cap *= 2;
    }
    char *p = PyMem_RawRealloc(b->data, (size_t)cap);
    if (p == NULL) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static inline void put(Buf *b, const char *s, Py_ssize_t n) {
    /* An empty key or value: nothing to copy, and the buffer may not exist yet (memcpy and pointer
     * arithmetic on NULL are undefined even for 0 bytes). */
    if (n <= 0) return;
    memcpy(b->data + b->len, s, (size_t)n);
    b->len += n;
}

/* Enough room for any int64 in decimal. */
#define INT_ROOM 24

static inline void put_int(Buf *b, int64_t v) {
    char tmp[24];
    int i = 24;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--i] = (char)('0' + (u % 10));
        u /= 10;
    } while (u);
    if (v < 0) tmp[--i] = '-';
    put(b, tmp + i, 24 - i);
}

static const char HEX[] = "0123456789abcdef";

/* ---- varints (bounded by `lim`; decline past the lengths the fast path reads) ------------ */

static inline int read_varint(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t lim, int max_bytes, int64_t *out) {
    uint64_t raw = 0;
    Py_ssize_t p = *pos;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= lim) return -1;
        uint8_t c = d[p++];
        raw |= (uint64_t)(c & 0x7F) << (7 * i);
        if (c < 0x80) {
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            *pos = p;
            return 0;
        }
    }
    return -1;
}

#define VARINT32 4 /* 28 bits: no masking question arises */
#define VARINT64 9 /* 63 bits */

/* ---- one record ------------------------------------------------------------------------- */

typedef struct {
    int64_t ts_delta;
    int64_t offset_delta;
    const uint8_t *key;
    int64_t key_len; /* < 0: null */
    const uint8_t *value;
    int64_t value_len; /* < 0: null */
    int64_t header_count;
    Py_ssize_t headers_at; /* first header's position */
} Rec;

/* Parse and check one record the way decode_v2_records would accept it; -1 to decline. */
static int parse_record(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t end, Rec *r) {
    Py_ssize_t p = *pos;
    int64_t length, n;
    if (read_varint(d, &p, end, VARINT32, &length) < 0 || length < 0 || length > end - p) return -1;
    Py_ssize_t rec_end = p + (Py_ssize_t)length;
    if (p >= rec_end) return -1;
    p += 1; /* attributes: unused */
    if (read_varint(d, &p, rec_end, VARINT64, &r->ts_delta) < 0) return -1;
    if (read_varint(d, &p, rec_end, VARINT32, &r->offset_delta) < 0) return -1;
    if (read_varint(d, &p, rec_end, VARINT32, &n) < 0) return -1;
    r->key_len = n < 0 ? -1 : n;
    r->key = d + p;
    if (n > 0) {
        if (n > rec_end - p) return -1;
        p += (Py_ssize_t)n;
    }
    if (read_varint(d, &p, rec_end, VARINT32, &n) < 0) return -1;
    r->value_len = n < 0 ? -1 : n;
    r->value = d + p;
    if (n > 0) {
        if (n > rec_end - p) return -1;
        p += (Py_ssize_t)n;
    }
    if (read_varint(d, &p, rec_end, VARINT32, &r->header_count) < 0) return -1;
    if (r->header_count < 0 || r->header_count > rec_end - p) return -1;
    r->headers_at = p;
    for (int64_t h = 0; h < r->header_count; h++) {
        if (read_varint(d, &p, rec_end, VARINT32, &n) < 0 || n < 0 || n > rec_end - p) return -1;
        p += (Py_ssize_t)n;
        if (read_varint(d, &p, rec_end, VARINT32, &n) < 0) return -1;
        if (n > 0) {
            if (n > rec_end - p) return -1;
            p += (Py_ssize_t)n;
        }
    }
    if (p != rec_end) return -1;
    *pos = p;
    return 0;
}

/* A header already checked by parse_record. */
static inline void next_header(const uint8_t *d, Py_ssize_t *pos, const uint8_t **k, int64_t *kn,
                               const uint8_t **v, int64_t *vn) {
    int64_t n = 0;
    read_varint(d, pos, PY_SSIZE_T_MAX, VARINT32, &n);
    *k = d + *pos;
    *kn = n;
    *pos += (Py_ssize_t)n;
    read_varint(d, pos, PY_SSIZE_T_MAX, VARINT32, &n);
    *v = d + *pos;
    *vn = n < 0 ? -1 : n;
    if (n > 0) *pos += (Py_ssize_t)n;
}

/* The batch-level facts every record is checked against. */
typedef struct {
    int64_t base_offset, last_offset, base_ts, max_ts, base_seq, count;
    int log_append, check_max_ts;
} Batch;

typedef struct {
    int64_t offset, timestamp, sequence;
} Derived;

/* Offset, timestamp and sequence of a record, and the scanner's checks; -1 to decline. */
static inline int derive(const Batch *bt, const Rec *r, int64_t *prev, int64_t *max_seen, Derived *out) {
    if (__builtin_add_overflow(bt->base_offset, r->offset_delta, &out->offset)) return -1;
    if (bt->log_append) {
        out->timestamp = bt->max_ts;
    } else if (__builtin_add_overflow(bt->base_ts, r->ts_delta, &out->timestamp)) {
        return -1;
    }
    if (bt->base_seq >= 0) {
        /* (base_seq + delta) mod 2^31 without the sum overflowing for a base_seq near 2^63. */
        int64_t s = (bt->base_seq % 2147483648LL + r->offset_delta) % 2147483648LL;
        out->sequence = s < 0 ? s + 2147483648LL : s;
    } else {
        out->sequence = -1;
    }
    /* The scanner reports record-offset-invalid for these: the reference path does that. */
    if (out->offset < bt->base_offset || out->offset > bt->last_offset || out->offset <= *prev) return -1;
    *prev = out->offset;
    if (out->timestamp > *max_seen) *max_seen = out->timestamp;
    return 0;
}

static int parse_batch_args(PyObject *args, Py_ssize_t first, Batch *bt, int with_seq) {
    /* args[first:] = base_offset, last_offset, base_ts, max_ts, log_append, [base_seq,] count, check_max_ts */
    Py_ssize_t i = first;
    int64_t *fields[] = {&bt->base_offset, &bt->last_offset, &bt->base_ts, &bt->max_ts};
    for (int f = 0; f < 4; f++) {
        *fields[f] = PyLong_AsLongLong(PyTuple_GET_ITEM(args, i++));
    }
    bt->log_append = PyObject_IsTrue(PyTuple_GET_ITEM(args, i++));
    bt->base_seq = with_seq ? PyLong_AsLongLong(PyTuple_GET_ITEM(args, i++)) : -1;
    bt->count = PyLong_AsLongLong(PyTuple_GET_ITEM(args, i++));
    bt->check_max_ts = PyObject_IsTrue(PyTuple_GET_ITEM(args, i++));
    if (PyErr_Occurred()) return -1;
    return 0;
}

static int check_arity(PyObject *args, Py_ssize_t n, const char *name) {
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != n) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", name, n);
        return -1;
    }
    return 0;
}

/* Whether the whole batch ended clean: count records, no bytes left, the max timestamp matches. */
static inline int batch_clean(const Batch *bt, Py_ssize_t pos, Py_ssize_t end, int64_t n, int64_t max_seen) {
    if (pos != end || n != bt->count) return 0;
    return !(bt->check_max_ts && n > 0 && max_seen != bt->max_ts);
}

/* ---- decode_v2: Record tuples ----------------------------------------------------------- */

static PyObject *new_bytes_or_none(const uint8_t *p, int64_t n) {
    if (n < 0) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
}

static PyObject *decode_headers(const uint8_t *d, const Rec *r) {
    PyObject *t = PyTuple_New((Py_ssize_t)r->header_count);
    if (t == NULL) return NULL;
    Py_ssize_t p = r->headers_at;
    for (Py_ssize_t h = 0; h < (Py_ssize_t)r->header_count; h++) {
        const uint8_t *k, *v;
        int64_t kn, vn;
        next_header(d, &p, &k, &kn, &v, &vn);
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) goto fail;
        PyTuple_SET_ITEM(t, h, pair);
        PyObject *ko = new_bytes_or_none(k, kn);
        if (ko == NULL) goto fail;
        PyTuple_SET_ITEM(pair, 0, ko);
        PyObject *vo = new_bytes_or_none(v, vn);
        if (vo == NULL) goto fail;
        PyTuple_SET_ITEM(pair, 1, vo);
    }
    return t;
fail:
    Py_DECREF(t);
    return NULL;
}

static PyObject *fast_decode_v2(PyObject *self, PyObject *args) {
    (void)self;
    if (check_arity(args, 10, "decode_v2") < 0) return NULL;
    PyObject *rtype = PyTuple_GET_ITEM(args, 1);
    if (!PyType_Check(rtype) || !PyType_IsSubtype((PyTypeObject *)rtype, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "record_type must be a tuple subclass");
        return NULL;
    }
    PyTypeObject *rt = (PyTypeObject *)rtype;
    Batch bt;
    if (parse_batch_args(args, 2, &bt, 1) < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 0), &view, PyBUF_SIMPLE) < 0) return NULL;
    const uint8_t *d = view.buf;
    Py_ssize_t end = view.len, pos = 0;
    PyObject *empty = PyTuple_New(0);
    PyObject *list = PyList_New(0);
    if (list == NULL || empty == NULL || bt.count < 0 || bt.count > end) goto decline;
    int64_t prev = INT64_MIN, max_seen = INT64_MIN, n = 0;
    int clean = 1;
    for (; n < bt.count; n++) {
        Rec r;
        Derived dv = {0, 0, 0};
        if (pos >= end || parse_record(d, &pos, end, &r) < 0) goto decline;
        if (derive(&bt, &r, &prev, &max_seen, &dv) < 0) {
            /* Decoding is fine; only the scanner's checks need the reference. */
            clean = 0;
            if (__builtin_add_overflow(bt.base_offset, r.offset_delta, &dv.offset)) goto decline;
            if (!bt.log_append && __builtin_add_overflow(bt.base_ts, r.ts_delta, &dv.timestamp)) goto decline;
            prev = INT64_MAX;
        }
        PyObject *rec = rt->tp_alloc(rt, 8);
        if (rec == NULL) goto fail;
        if (PyList_Append(list, rec) < 0) {
            Py_DECREF(rec);
            goto fail;
        }
        Py_DECREF(rec);
        PyObject *items[8];
        items[0] = PyLong_FromLongLong(dv.offset);
        items[1] = PyLong_FromLongLong(dv.timestamp);
        items[2] = new_bytes_or_none(r.key, r.key_len);
        items[3] = new_bytes_or_none(r.value, r.value_len);
        if (r.header_count == 0) {
            Py_INCREF(empty);
            items[4] = empty;
        } else {
            items[4] = decode_headers(d, &r);
        }
        items[5] = PyLong_FromLongLong(dv.sequence);
        Py_INCREF(Py_None);
        items[6] = Py_None;
        Py_INCREF(Py_None);
        items[7] = Py_None;
        for (int i = 0; i < 8; i++) {
            if (items[i] == NULL) {
                for (int j = 0; j < 8; j++) Py_XDECREF(items[j]);
                goto fail;
            }
            PyTuple_SET_ITEM(rec, i, items[i]);
        }
    }
    if (pos != end || n != bt.count) goto decline;
    if (bt.check_max_ts && n > 0 && max_seen != bt.max_ts) clean = 0;
    PyBuffer_Release(&view);
    Py_DECREF(empty);
    PyObject *result = Py_BuildValue("(NO)", list, clean ? Py_True : Py_False);
    return result;
decline:
    PyBuffer_Release(&view);
    Py_XDECREF(list);
    Py_XDECREF(empty);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
fail:
    PyBuffer_Release(&view);
    Py_XDECREF(list);
    Py_XDECREF(empty);
    return NULL;
}

/* ---- check_v2: whether decode_v2 would answer (records, True), without building them ------ */

/* The deep scan's question for a batch whose records it does not hand on (verify --deep): do they
 * all decode, in order, inside the batch's offsets, with the header's count and max timestamp?
 * True exactly when decode_v2 on the same arguments returns (records, True); else the caller runs
 * the reference, which reports what is wrong. */
/* The check of check_v2 on d[0:end]; the caller holds the buffer (the GIL need not be held). */
static int check_batch(const uint8_t *d, Py_ssize_t end, const Batch *bt) {
    Py_ssize_t pos = 0;
    int64_t prev = INT64_MIN, max_seen = INT64_MIN, n = 0;
    if (bt->count < 0 || bt->count > end) return 0;
    for (; n < bt->count; n++) {
        Rec r;
        Derived dv;
        if (pos >= end || parse_record(d, &pos, end, &r) < 0 || derive(bt, &r, &prev, &max_seen, &dv) < 0)
            return 0;
    }
    return batch_clean(bt, pos, end, n, max_seen);
}

static PyObject *fast_check_v2(PyObject *self, PyObject *args) {
    (void)self;
    if (check_arity(args, 8, "check_v2") < 0) return NULL;
    Batch bt;
    if (parse_batch_args(args, 1, &bt, 0) < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 0), &view, PyBUF_SIMPLE) < 0) return NULL;
    int clean;
    Py_BEGIN_ALLOW_THREADS;
    clean = check_batch(view.buf, view.len, &bt);
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&view);
    return PyBool_FromLong(clean);
}

/* ---- rendering of keys, values and headers ---------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at s (Python's strict decoder: no surrogates, no
 * overlongs, nothing above U+10FFFF), or 0 when the byte at s does not start one. */
static inline int utf8_seq(const uint8_t *s, Py_ssize_t left, uint32_t *cp) {
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        if (left < 2 || (s[1] & 0xC0) != 0x80) return 0;
        *cp = ((uint32_t)(c & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && s[1] < 0xA0) return 0;
        if (c == 0xED && s[1] > 0x9F) return 0;
        *cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && s[1] < 0x90) return 0;
        if (c == 0xF4 && s[1] > 0x8F) return 0;
        *cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
              (s[3] & 0x3F);
        return 4;
    }
    return 0;
}

static inline void put_u4(Buf *b, uint32_t u) {
    char *o = b->data + b->len;
    o[0] = '\\';
    o[1] = 'u';
    o[2] = HEX[(u >> 12) & 0xF];
    o[3] = HEX[(u >> 8) & 0xF];
    o[4] = HEX[(u >> 4) & 0xF];
    o[5] = HEX[u & 0xF];
    b->len += 6;
}

/* bytes.decode("utf-8", "backslashreplace") then json.encoder.encode_basestring_ascii: a quoted
 * ASCII JSON string. */
static int put_json_utf8(Buf *b, const uint8_t *s, Py_ssize_t n) {
    /* Worst case 6 output bytes per input byte (a control character), plus the quotes. */
    if (buf_reserve(b, 6 * n + 2) < 0) return -1;
    char *o = b->data + b->len;
    *o++ = '"';
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            *o++ = (char)c;
            i++;
            continue;
        }
        if (c < 0x80) {
            *o++ = '\\';
            switch (c) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '\n': *o++ = 'n'; break;
            case '\r': *o++ = 'r'; break;
            case '\t': *o++ = 't'; break;
            case '\b': *o++ = 'b'; break;
            case '\f': *o++ = 'f'; break;
            default:
                *o++ = 'u';
                *o++ = '0';
                *o++ = '0';
                *o++ = HEX[c >> 4];
                *o++ = HEX[c & 0xF];
            }
            i++;
            continue;
        }
        uint32_t cp;
        int k = utf8_seq(s + i, n - i, &cp);
        if (k == 0) {
            /* backslashreplace gives \xNN; JSON escapes its backslash. */
            *o++ = '\\';
            *o++ = '\\';
            *o++ = 'x';
            *o++ = HEX[c >> 4];
            *o++ = HEX[c & 0xF];
            i++;
            continue;
        }
        b->len = o - b->data;
        if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            put_u4(b, 0xD800 | (v >> 10));
            put_u4(b, 0xDC00 | (v & 0x3FF));
        } else {
            put_u4(b, cp);
        }
        o = b->data + b->len;
        i += k;
    }
    *o++ = '"';
    b->len = o - b->data;
    return 0;
}

/* bytes.decode("utf-8", "backslashreplace") written out as UTF-8: well-formed sequences as they
 * are, any other byte as \xNN. */
static int put_text_utf8(Buf *b, const uint8_t *s, Py_ssize_t n) {
    if (buf_reserve(b, 4 * n) < 0) return -1;
    char *o = b->data + b->len;
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            *o++ = (char)c;
            i++;
            continue;
        }
        uint32_t cp;
        int k = utf8_seq(s + i, n - i, &cp);
        if (k == 0) {
            *o++ = '\\';
            *o++ = 'x';
            *o++ = HEX[c >> 4];
            *o++ = HEX[c & 0xF];
            i++;
        } else {
            memcpy(o, s + i, (size_t)k);
            o += k;
            i += k;
        }
    }
    b->len = o - b->data;
    return 0;
}

static int put_hex(Buf *b, const uint8_t *s, Py_ssize_t n) {
    if (buf_reserve(b, 2 * n + 2) < 0) return -1;
    char *o = b->data + b->len;
    for (Py_ssize_t i = 0; i < n; i++) {
        *o++ = HEX[s[i] >> 4];
        *o++ = HEX[s[i] & 0xF];
    }
    b->len = o - b->data;
    return 0;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int put_base64(Buf *b, const uint8_t *s, Py_ssize_t n) {
    if (buf_reserve(b, 4 * (n / 3 + 1) + 2) < 0) return -1;
    char *o = b->data + b->len;
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 0x3F];
        *o++ = B64[(v >> 6) & 0x3F];
        *o++ = B64[v & 0x3F];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 0x3F];
        *o++ = '=';
        *o++ = '=';
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8);
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 0x3F];
        *o++ = B64[(v >> 6) & 0x3F];
        *o++ = '=';
    }
    b->len = o - b->data;
    return 0;
}

enum { ENC_UTF8 = 0, ENC_HEX = 1, ENC_BASE64 = 2 };
enum { FMT_JSON = 0, FMT_TEXT = 1 };

/* A key, value or header value in the chosen encoding (not null). */
static int put_encoded(Buf *b, int fmt, int encoding, const uint8_t *s, Py_ssize_t n) {
    if (encoding == ENC_UTF8) return fmt == FMT_JSON ? put_json_utf8(b, s, n) : put_text_utf8(b, s, n);
    if (fmt == FMT_JSON) {
        if (buf_reserve(b, 1) < 0) return -1;
        put(b, "\"", 1);
    }
    if ((encoding == ENC_HEX ? put_hex(b, s, n) : put_base64(b, s, n)) < 0) return -1;
    if (fmt == FMT_JSON) {
        if (buf_reserve(b, 1) < 0) return -1;
        put(b, "\"", 1);
    }
    return 0;
}

#define PUT_LIT(b, s)                                    \
    do {                                                 \
        if (buf_reserve((b), sizeof(s) - 1) < 0) goto fail; \
        put((b), (s), sizeof(s) - 1);                    \
    } while (0)

#define PUT_INT(b, v)                                    \
    do {                                                 \
        if (buf_reserve((b), INT_ROOM) < 0) goto fail;   \
        put_int((b), (v));                               \
    } while (0)

/* One JSON line, as render/jsonl.write_jsonl builds it for a v2 record of a non-control batch. */
static int render_json(Buf *b, const uint8_t *d, const Rec *r, const Derived *dv, int encoding,
                       const Py_buffer *prefix, const Py_buffer *middle, const Py_buffer *middle2) {
    if (buf_reserve(b, prefix->len + middle->len + middle2->len + 2 * INT_ROOM) < 0) goto fail;
    put(b, prefix->buf, prefix->len);
    put_int(b, dv->offset);
    put(b, middle->buf, middle->len);
    put_int(b, dv->timestamp);
    put(b, middle2->buf, middle2->len);
    if (r->key_len < 0) {
        PUT_LIT(b, "null");
    } else if (put_encoded(b, FMT_JSON, encoding, r->key, (Py_ssize_t)r->key_len) < 0) {
        goto fail;
    }
    PUT_LIT(b, ",\"value\":");
    if (r->value_len < 0) {
        PUT_LIT(b, "null");
    } else if (put_encoded(b, FMT_JSON, encoding, r->value, (Py_ssize_t)r->value_len) < 0) {
        goto fail;
    }
    PUT_LIT(b, ",\"headers\":[");
    Py_ssize_t p = r->headers_at;
    for (int64_t h = 0; h < r->header_count; h++) {
        const uint8_t *k, *v;
        int64_t kn, vn;
        next_header(d, &p, &k, &kn, &v, &vn);
        if (h > 0) PUT_LIT(b, ",");
        PUT_LIT(b, "{\"key\":");
        if (put_json_utf8(b, k, (Py_ssize_t)kn) < 0) goto fail;
        PUT_LIT(b, ",\"value\":");
        if (vn < 0) {
            PUT_LIT(b, "null");
        } else if (put_encoded(b, FMT_JSON, encoding, v, (Py_ssize_t)vn) < 0) {
            goto fail;
        }
        PUT_LIT(b, "}");
    }
    PUT_LIT(b, "],\"sequence\":");
    PUT_INT(b, dv->sequence);
    PUT_LIT(b, ",\"key_size\":");
    PUT_INT(b, r->key_len);
    PUT_LIT(b, ",\"value_size\":");
    PUT_INT(b, r->value_len);
    PUT_LIT(b, "}\n");
    return 0;
fail:
    return -1;
}

/* One text line, as render/text.record_line builds it for a v2 record of a non-control batch. */
static int render_text(Buf *b, const uint8_t *d, const Rec *r, const Derived *dv, int encoding,
                       const Py_buffer *prefix, const Py_buffer *middle, const Py_buffer *middle2) {
    if (buf_reserve(b, prefix->len + middle->len + middle2->len + 2 * INT_ROOM) < 0) goto fail;
    put(b, prefix->buf, prefix->len);
    put_int(b, dv->offset);
    put(b, middle->buf, middle->len);
    put_int(b, dv->timestamp);
    put(b, middle2->buf, middle2->len);
    PUT_INT(b, r->key_len);
    PUT_LIT(b, " valueSize: ");
    PUT_INT(b, r->value_len);
    PUT_LIT(b, " sequence: ");
    PUT_INT(b, dv->sequence);
    PUT_LIT(b, " headerKeys: [");
    Py_ssize_t p = r->headers_at;
    const uint8_t *k, *v;
    int64_t kn, vn;
    for (int64_t h = 0; h < r->header_count; h++) {
        next_header(d, &p, &k, &kn, &v, &vn);
        if (h > 0) PUT_LIT(b, ",");
        if (put_text_utf8(b, k, (Py_ssize_t)kn) < 0) goto fail;
    }
    PUT_LIT(b, "]");
    if (r->key_len >= 0) {
        PUT_LIT(b, " key: ");
        if (put_encoded(b, FMT_TEXT, encoding, r->key, (Py_ssize_t)r->key_len) < 0) goto fail;
    }
    if (r->value_len >= 0) {
        PUT_LIT(b, " payload: ");
        if (put_encoded(b, FMT_TEXT, encoding, r->value, (Py_ssize_t)r->value_len) < 0) goto fail;
    }
    if (r->header_count > 0) {
        PUT_LIT(b, " headers: [");
        p = r->headers_at;
        for (int64_t h = 0; h < r->header_count; h++) {
            next_header(d, &p, &k, &kn, &v, &vn);
            if (h > 0) PUT_LIT(b, ", ");
            if (put_text_utf8(b, k, (Py_ssize_t)kn) < 0) goto fail;
            PUT_LIT(b, "=");
            if (vn < 0) {
                PUT_LIT(b, "null");
            } else if (put_encoded(b, FMT_TEXT, encoding, v, (Py_ssize_t)vn) < 0) {
                goto fail;
            }
        }
        PUT_LIT(b, "]");
    }
    PUT_LIT(b, "\n");
    return 0;
fail:
    return -1;
}

static PyObject *fast_render_v2(PyObject *self, PyObject *args) {
    (void)self;
    if (check_arity(args, 14, "render_v2") < 0) return NULL;
    Batch bt;
    if (parse_batch_args(args, 1, &bt, 1) < 0) return NULL;
    long fmt = PyLong_AsLong(PyTuple_GET_ITEM(args, 9));
    long encoding = PyLong_AsLong(PyTuple_GET_ITEM(args, 10));
    if (PyErr_Occurred()) return NULL;
    if ((fmt != FMT_JSON && fmt != FMT_TEXT) || encoding < ENC_UTF8 || encoding > ENC_BASE64) {
        PyErr_SetString(PyExc_ValueError, "unknown format or encoding");
        return NULL;
    }
    Py_buffer view, prefix, middle, middle2;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 0), &view, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 11), &prefix, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 12), &middle, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&prefix);
        return NULL;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 13), &middle2, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&prefix);
        PyBuffer_Release(&middle);
        return NULL;
    }
    const uint8_t *d = view.buf;
    Py_ssize_t end = view.len, pos = 0;
    Buf b = {NULL, 0, 0};
    PyObject *result = NULL;
    int failed = 0;
    int64_t prev = INT64_MIN, max_seen = INT64_MIN, n = 0;
    if (bt.count < 0 || bt.count > end) goto done;
    Py_BEGIN_ALLOW_THREADS
    for (; n < bt.count; n++) {
        Rec r;
        Derived dv;
        if (pos >= end || parse_record(d, &pos, end, &r) < 0) break;
        if (derive(&bt, &r, &prev, &max_seen, &dv) < 0) break;
        int rc = fmt == FMT_JSON ? render_json(&b, d, &r, &dv, (int)encoding, &prefix, &middle, &middle2)
                                 : render_text(&b, d, &r, &dv, (int)encoding, &prefix, &middle, &middle2);
        if (rc < 0) {
            failed = 1;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    if (!batch_clean(&bt, pos, end, n, max_seen)) goto done;
    result = PyBytes_FromStringAndSize(b.data ? b.data : "", b.len);
done:
    PyMem_RawFree(b.data);
    PyBuffer_Release(&view);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&middle);
    PyBuffer_Release(&middle2);
    if (result == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

/* ---- render_kafka_v2: the record lines of Kafka's own kafka-dump-log ------------------- */

/* Java's `new String(bytes, UTF_8)` (JDK 9+) written out as UTF-8: well-formed sequences as they
 * are, U+FFFD (EF BF BD) where Java puts one. A step-for-step port of
 * kdump/formats/internal/java_text.java_utf8_decode, the reference. */
static int put_java_utf8(Buf *b, const uint8_t *s, Py_ssize_t n) {
    if (n <= 0) return 0;
    if (buf_reserve(b, 3 * n) < 0) return -1; /* at most one U+FFFD (3 bytes) per input byte */
    char *o = b->data + b->len;
#define CONT(x) (((x) & 0xC0) == 0x80)
#define REPL()              \
    do {                    \
        *o++ = (char)0xEF;  \
        *o++ = (char)0xBF;  \
        *o++ = (char)0xBD;  \
    } while (0)
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t lead = s[i];
        Py_ssize_t rest = n - i - 1;
        if (lead < 0x80) {
            *o++ = (char)lead;
            i++;
            /* ASCII text as it is, eight bytes at a time while no byte has its top bit set. */
            while (n - i >= 8) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                if (w & 0x8080808080808080ULL) break;
                memcpy(o, s + i, 8);
                o += 8;
                i += 8;
            }
        } else if (lead >= 0xC2 && lead <= 0xDF) {
            if (rest == 0) {
                REPL();
                break;
            }
            if (CONT(s[i + 1])) {
                *o++ = (char)lead;
                *o++ = (char)s[i + 1];
                i += 2;
            } else {
                REPL();
                i++;
            }
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            int second_bad = rest >= 1 && (!CONT(s[i + 1]) || (lead == 0xE0 && s[i + 1] < 0xA0));
            if (rest >= 2) {
                if (second_bad) {
                    REPL();
                    i++;
                } else if (!CONT(s[i + 2])) {
                    REPL();
                    i += 2;
                } else {
                    uint32_t cp = ((uint32_t)(lead & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) |
                                  (s[i + 2] & 0x3F);
                    if (cp >= 0xD800 && cp <= 0xDFFF) {
                        REPL();
                    } else {
                        memcpy(o, s + i, 3);
                        o += 3;
                    }
                    i += 3;
                }
            } else if (second_bad) {
                REPL();
                i++;
            } else {
                REPL();
                break;
            }
        } else if (lead >= 0xF0 && lead <= 0xF7) {
            int second = rest >= 1 ? s[i + 1] : -1;
            int second_bad = rest >= 1 && (!CONT(second) || (lead == 0xF0 && !(second >= 0x90 && second <= 0xBF)) ||
                                           (lead == 0xF4 && (second & 0xF0) != 0x80));
            if (rest >= 3) {
                uint8_t third = s[i + 2], fourth = s[i + 3];
                uint32_t cp = ((uint32_t)(lead & 0x07) << 18) | ((uint32_t)(second & 0x3F) << 12) |
                              ((uint32_t)(third & 0x3F) << 6) | (fourth & 0x3F);
                if (CONT(second) && CONT(third) && CONT(fourth) && cp >= 0x10000 && cp <= 0x10FFFF) {
                    memcpy(o, s + i, 4);
                    o += 4;
                    i += 4;
                    continue;
                }
                REPL();
                if (lead > 0xF4 || second_bad) {
                    i++;
                } else if (!CONT(third)) {
                    i += 2;
                } else {
                    i += 3;
                }
            } else if (lead > 0xF4 || second_bad) {
                REPL();
                i++;
            } else {
                REPL();
                i += 2;
                if (!(i < n && !CONT(s[i]))) break;
            }
        } else {
            REPL();
            i++;
        }
    }
#undef CONT
#undef REPL
    b->len = o - b->data;
    return 0;
}

enum { KT_PRINT_DATA = 1, KT_SKIP_METADATA = 2, KT_JAVA = 4 };

/* One line of kdump/render/kafka_tool.record_line (the reference) for a v2 record of a data batch,
 * keys and values read by Kafka's StringDecoder. */
static int render_kafka_line(Buf *b, const uint8_t *d, const Rec *r, const Derived *dv, int flags,
                             const Py_buffer *label) {
    int print_data = flags & KT_PRINT_DATA, skip = flags & KT_SKIP_METADATA, java = flags & KT_JAVA;
    if (!skip) {
        if (buf_reserve(b, label->len + 4 * INT_ROOM + 64) < 0) return -1;
        PUT_LIT(b, "| offset: ");
        put_int(b, dv->offset);
        PUT_LIT(b, " ");
        put(b, label->buf, label->len);
        PUT_LIT(b, ": ");
        put_int(b, dv->timestamp);
        PUT_LIT(b, " keySize: ");
        put_int(b, r->key_len);
        PUT_LIT(b, " valueSize: ");
        put_int(b, r->value_len);
        PUT_LIT(b, " sequence: ");
        PUT_INT(b, dv->sequence);
        PUT_LIT(b, " headerKeys: [");
        Py_ssize_t p = r->headers_at;
        const uint8_t *k, *v;
        int64_t kn, vn;
        for (int64_t h = 0; h < r->header_count; h++) {
            next_header(d, &p, &k, &kn, &v, &vn);
            if (h > 0) PUT_LIT(b, ",");
            if (put_java_utf8(b, k, (Py_ssize_t)kn) < 0) goto fail;
        }
        PUT_LIT(b, "]");
    }
    if (print_data) {
        int first = skip; /* "| " before the first part printed without metadata */
        if (r->key_len >= 0) {
            if (first) {
                PUT_LIT(b, "| key: ");
                first = 0;
            } else {
                PUT_LIT(b, " key: ");
            }
            if (put_java_utf8(b, r->key, (Py_ssize_t)r->key_len) < 0) goto fail;
        }
        if (r->value_len >= 0) {
            /* The 3.x tool always puts a bare space before the payload. */
            if (first && java) {
                PUT_LIT(b, "| payload: ");
            } else {
                PUT_LIT(b, " payload: ");
            }
            if (put_java_utf8(b, r->value, (Py_ssize_t)r->value_len) < 0) goto fail;
        }
    }
    PUT_LIT(b, "\n");
    return 0;
fail:
    return -1;
}

/* render_kafka_v2(data, base_offset, last_offset, base_ts, max_ts, log_append, base_seq, count,
 * check_max_ts, flags, label, previous) -> (lines, previous, gaps) | None: the record lines Kafka's
 * tool prints for a clean v2 data batch (each newline-terminated), the last offset printed, and the
 * (previous, offset) pairs of the non-consecutive offsets summary (a pair wherever an offset does not
 * follow the one before; before the first record, `previous` is the caller's, -1 at a file's start,
 * which only the 4.x tool (flags & 4) reports). None: the batch needs the reference path. */
static PyObject *fast_render_kafka_v2(PyObject *self, PyObject *args) {
    (void)self;
    if (check_arity(args, 12, "render_kafka_v2") < 0) return NULL;
    Batch bt;
    if (parse_batch_args(args, 1, &bt, 1) < 0) return NULL;
    long flags = PyLong_AsLong(PyTuple_GET_ITEM(args, 9));
    long long previous = PyLong_AsLongLong(PyTuple_GET_ITEM(args, 11));
    if (PyErr_Occurred()) return NULL;
    if (flags < 0 || flags > 7) {
        PyErr_SetString(PyExc_ValueError, "unknown flags");
        return NULL;
    }
    Py_buffer view, label;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 0), &view, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 10), &label, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const uint8_t *d = view.buf;
    Py_ssize_t end = view.len, pos = 0;
    Buf b = {NULL, 0, 0};
    PyObject *result = NULL, *gaps = NULL;
    int failed = 0;
    int64_t prev = INT64_MIN, max_seen = INT64_MIN, n = 0, printed = (int64_t)previous;
    if (bt.count < 0 || bt.count > end) goto done;
    /* Pairs of the summary: at most one per record, so bounded by the count; kept as offsets here and
     * made Python objects after the loop (without the GIL no object may be built). */
    int64_t *pairs = NULL;
    Py_ssize_t npairs = 0;
    if (bt.count > 0) {
        pairs = PyMem_RawMalloc((size_t)bt.count * 2 * sizeof(int64_t));
        if (pairs == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (; n < bt.count; n++) {
        Rec r;
        Derived dv;
        if (pos >= end || parse_record(d, &pos, end, &r) < 0) break;
        if (derive(&bt, &r, &prev, &max_seen, &dv) < 0) break;
        if (((flags & KT_JAVA) || printed != -1) && (printed == INT64_MAX || dv.offset != printed + 1)) {
            pairs[2 * npairs] = printed;
            pairs[2 * npairs + 1] = dv.offset;
            npairs++;
        }
        printed = dv.offset;
        if (render_kafka_line(&b, d, &r, &dv, (int)flags, &label) < 0) {
            failed = 1;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
    } else if (batch_clean(&bt, pos, end, n, max_seen)) {
        gaps = PyList_New(npairs);
        for (Py_ssize_t i = 0; gaps != NULL && i < npairs; i++) {
            PyObject *pair = Py_BuildValue("(LL)", (long long)pairs[2 * i], (long long)pairs[2 * i + 1]);
            if (pair == NULL) Py_CLEAR(gaps);
            else PyList_SET_ITEM(gaps, i, pair);
        }
        if (gaps != NULL) {
            result = Py_BuildValue("(NLN)", PyBytes_FromStringAndSize(b.data ? b.data : "", b.len),
                                   (long long)printed, gaps);
        }
    }
    PyMem_RawFree(pairs);
done:
    PyMem_RawFree(b.data);
    PyBuffer_Release(&view);
    PyBuffer_Release(&label);
    if (result == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

/* ---- columns_v2: Arrow-layout buffers of a batch's records ------------------------------- */

/* A binary column being built: validity bitmap, int32 offsets, data. */
typedef struct {
    Buf valid, offsets, data;
    int64_t nulls;
} BinCol;

static int bincol_add(BinCol *c, int64_t i, const uint8_t *s, int64_t n) {
    if ((i & 7) == 0) {
        if (buf_reserve(&c->valid, 1) < 0) return -1;
        c->valid.data[c->valid.len++] = 0;
    }
    if (n < 0) {
        c->nulls++;
    } else {
        c->valid.data[i >> 3] |= (char)(1 << (i & 7));
        if (buf_reserve(&c->data, (Py_ssize_t)n) < 0) return -1;
        put(&c->data, (const char *)s, (Py_ssize_t)n);
        if (c->data.len > INT32_MAX) return -1;
    }
    int32_t off = (int32_t)c->data.len;
    if (buf_reserve(&c->offsets, 4) < 0) return -1;
    put(&c->offsets, (const char *)&off, 4);
    return 0;
}

static int bincol_init(BinCol *c) {
    memset(c, 0, sizeof(*c));
    int32_t zero = 0;
    if (buf_reserve(&c->offsets, 4) < 0) return -1;
    put(&c->offsets, (const char *)&zero, 4);
    return 0;
}

static void bincol_free(BinCol *c) {
    PyMem_RawFree(c->valid.data);
    PyMem_RawFree(c->offsets.data);
    PyMem_RawFree(c->data.data);
}

static PyObject *buf_bytes(const Buf *b) { return PyBytes_FromStringAndSize(b->data ? b->data : "", b->len); }

static PyObject *bincol_tuple(const BinCol *c) {
    return Py_BuildValue("(NNNL)", buf_bytes(&c->valid), buf_bytes(&c->offsets), buf_bytes(&c->data),
                         (long long)c->nulls);
}

/* Where a column stood before a batch, to take the batch back out when it declines. */
typedef struct {
    Py_ssize_t valid_len, offsets_len, data_len;
    int64_t nulls;
} BinMark;

static BinMark bincol_mark(const BinCol *c) {
    BinMark m = {c->valid.len, c->offsets.len, c->data.len, c->nulls};
    return m;
}

static void bincol_rewind(BinCol *c, BinMark m, int64_t rows) {
    c->valid.len = m.valid_len;
    c->offsets.len = m.offsets_len;
    c->data.len = m.data_len;
    c->nulls = m.nulls;
    if (rows & 7) c->valid.data[rows >> 3] &= (char)((1 << (rows & 7)) - 1); /* rows past `rows` */
}

/* columns_v2_many(items): the records of a run of batches, each item (data, base_offset,
 * last_offset, base_ts, max_ts, log_append, count, check_max_ts), as one set of Arrow-layout
 * buffers: (batches_done, rows, offsets int64, timestamps int64, key column, value column, header
 * list offsets int32, header key column, header value column, batch index int32 per row), each
 * column (validity, int32 offsets, data, null count), native byte order. Items are taken in order
 * until one declines: batches_done says how many went in (the caller reads the next one the
 * reference way and goes on after it). A record without headers has an empty header run. */
static PyObject *fast_columns_v2_many(PyObject *self, PyObject *items) {
    (void)self;
    if (!PyList_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "columns_v2_many takes a list of batch tuples");
        return NULL;
    }
    Buf offs = {NULL, 0, 0}, tss = {NULL, 0, 0}, hoffs = {NULL, 0, 0}, bidx = {NULL, 0, 0};
    BinCol keys, values, hkeys, hvalues;
    PyObject *result = NULL;
    int oom = bincol_init(&keys) | bincol_init(&values) | bincol_init(&hkeys) | bincol_init(&hvalues);
    int32_t hcount = 0;
    int64_t rows = 0, hi = 0;
    Py_ssize_t done = 0, nitems = PyList_GET_SIZE(items);
    if (oom || buf_reserve(&hoffs, 4) < 0) goto nomem;
    put(&hoffs, (const char *)&hcount, 4);
    for (; done < nitems; done++) {
        PyObject *item = PyList_GET_ITEM(items, done);
        if (check_arity(item, 8, "a columns_v2_many item") < 0) goto fail;
        Batch bt;
        if (parse_batch_args(item, 1, &bt, 0) < 0) goto fail;
        Py_buffer view;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 0), &view, PyBUF_SIMPLE) < 0) goto fail;
        const uint8_t *d = view.buf;
        Py_ssize_t end = view.len, pos = 0;
        /* Where everything stood, to take this batch back out if it declines. */
        Py_ssize_t offs_len = offs.len, tss_len = tss.len, hoffs_len = hoffs.len, bidx_len = bidx.len;
        BinMark mk = bincol_mark(&keys), mv = bincol_mark(&values), mhk = bincol_mark(&hkeys),
                mhv = bincol_mark(&hvalues);
        int64_t rows0 = rows, hi0 = hi, prev = INT64_MIN, max_seen = INT64_MIN, n = 0;
        int32_t index = (int32_t)done;
        int nomem_here = 0;
        if (bt.count >= 0 && bt.count <= end) {
            for (; n < bt.count; n++) {
                Rec r;
                Derived dv;
                if (pos >= end || parse_record(d, &pos, end, &r) < 0) break;
                if (derive(&bt, &r, &prev, &max_seen, &dv) < 0) break;
                if (buf_reserve(&offs, 8) < 0 || buf_reserve(&tss, 8) < 0 || buf_reserve(&bidx, 4) < 0 ||
                    bincol_add(&keys, rows, r.key, r.key_len) < 0 ||
                    bincol_add(&values, rows, r.value, r.value_len) < 0) {
                    nomem_here = 1;
                    break;
                }
                put(&offs, (const char *)&dv.offset, 8);
                put(&tss, (const char *)&dv.timestamp, 8);
                put(&bidx, (const char *)&index, 4);
                rows++;
                Py_ssize_t p = r.headers_at;
                for (int64_t h = 0; h < r.header_count && !nomem_here; h++, hi++) {
                    const uint8_t *k, *v;
                    int64_t kn, vn;
                    next_header(d, &p, &k, &kn, &v, &vn);
                    if (bincol_add(&hkeys, hi, k, kn) < 0 || bincol_add(&hvalues, hi, v, vn) < 0) nomem_here = 1;
                }
                if (nomem_here || hi > INT32_MAX || rows > INT32_MAX || buf_reserve(&hoffs, 4) < 0) {
                    nomem_here = 1;
                    break;
                }
                hcount = (int32_t)hi;
                put(&hoffs, (const char *)&hcount, 4);
            }
        }
        int clean = !nomem_here && bt.count >= 0 && batch_clean(&bt, pos, end, n, max_seen);
        PyBuffer_Release(&view);
        if (!clean) {
            offs.len = offs_len;
            tss.len = tss_len;
            hoffs.len = hoffs_len;
            bidx.len = bidx_len;
            bincol_rewind(&keys, mk, rows0);
            bincol_rewind(&values, mv, rows0);
            bincol_rewind(&hkeys, mhk, hi0);
            bincol_rewind(&hvalues, mhv, hi0);
            rows = rows0;
            hi = hi0;
            hcount = (int32_t)hi0;
            break;
        }
    }
    result = Py_BuildValue("(nLNNNNNNNN)", done, (long long)rows, buf_bytes(&offs), buf_bytes(&tss),
                           bincol_tuple(&keys), bincol_tuple(&values), buf_bytes(&hoffs), bincol_tuple(&hkeys),
                           bincol_tuple(&hvalues), buf_bytes(&bidx));
    goto cleanup;
nomem:
    PyErr_NoMemory();
fail:
cleanup:
    PyMem_RawFree(offs.data);
    PyMem_RawFree(tss.data);
    PyMem_RawFree(hoffs.data);
    PyMem_RawFree(bidx.data);
    bincol_free(&keys);
    bincol_free(&values);
    bincol_free(&hkeys);
    bincol_free(&hvalues);
    return result;
}

/* ---- Arrow column helpers (so that building the columns needs no pyarrow.compute) -------- */

/* scale_i64(buf, factor) -> bytes | None: each native int64 of buf times factor; None when one
 * overflows (Arrow's multiply_checked raises there). */
static PyObject *fast_scale_i64(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    long long factor;
    if (!PyArg_ParseTuple(args, "y*L", &view, &factor)) return NULL;
    Py_ssize_t n = view.len / 8;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * 8);
    if (out != NULL) {
        const char *src = view.buf;
        char *dst = PyBytes_AS_STRING(out);
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t v, r;
            memcpy(&v, src + 8 * i, 8);
            if (__builtin_mul_overflow(v, (int64_t)factor, &r)) {
                Py_DECREF(out);
                PyBuffer_Release(&view);
                Py_RETURN_NONE;
            }
            memcpy(dst + 8 * i, &r, 8);
        }
    }
    PyBuffer_Release(&view);
    return out;
}

/* take_fixed(values, width, index) -> bytes: the `width`-byte items (4 or 8) of values at each
 * native int32 of index, in order (Arrow's take of a fixed-width array without nulls). */
static PyObject *fast_take_fixed(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer values, index;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*", &values, &width, &index)) return NULL;
    PyObject *out = NULL;
    if (width != 4 && width != 8) {
        PyErr_SetString(PyExc_ValueError, "take_fixed takes items of 4 or 8 bytes");
        goto done;
    }
    Py_ssize_t n = index.len / 4, items = values.len / width;
    out = PyBytes_FromStringAndSize(NULL, n * width);
    if (out == NULL) goto done;
    const char *src = values.buf, *idx = index.buf;
    char *dst = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t k;
        memcpy(&k, idx + 4 * i, 4);
        if (k < 0 || k >= items) {
            Py_CLEAR(out);
            PyErr_SetString(PyExc_IndexError, "take_fixed: index out of range");
            goto done;
        }
        memcpy(dst + (Py_ssize_t)width * i, src + (Py_ssize_t)width * k, (size_t)width);
    }
done:
    PyBuffer_Release(&values);
    PyBuffer_Release(&index);
    return out;
}

/* nonempty_validity(offsets, n) -> (bitmap, nulls): an Arrow validity bitmap of n list entries
 * from their n + 1 native int32 offsets, entry i valid when offsets[i + 1] != offsets[i] (a record
 * without headers is a null list), and how many are not. */
static PyObject *fast_nonempty_validity(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer offsets;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*n", &offsets, &n)) return NULL;
    PyObject *out = NULL;
    if (n < 0 || n >= offsets.len / 4) { /* fewer than n + 1 offsets (without computing (n + 1) * 4) */
        PyErr_SetString(PyExc_ValueError, "nonempty_validity: too few offsets");
        PyBuffer_Release(&offsets);
        return NULL;
    }
    PyObject *bitmap = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
    if (bitmap != NULL) {
        unsigned char *bits = (unsigned char *)PyBytes_AS_STRING(bitmap);
        memset(bits, 0, (size_t)((n + 7) / 8));
        const char *o = offsets.buf;
        Py_ssize_t nulls = 0;
        int32_t prev, cur;
        memcpy(&prev, o, 4);
        for (Py_ssize_t i = 0; i < n; i++) {
            memcpy(&cur, o + 4 * (i + 1), 4);
            if (cur != prev)
                bits[i >> 3] |= (unsigned char)(1 << (i & 7));
            else
                nulls++;
            prev = cur;
        }
        out = Py_BuildValue("(Nn)", bitmap, nulls);
    }
    PyBuffer_Release(&offsets);
    return out;
}

/* ---- a run's deep check, many batches a call (verify --deep) ------------------------------ */

/* kdump/scan/runs.py checks every batch of a compiled walk's run (kdump/formats/_fastwalk.c) in a
 * few calls instead of a few Python calls per batch: `zstd_frames` lists the run's zstd payloads that
 * one-shot decompression takes (one frame, exactly the payload, that states its content size), the
 * caller decompresses them in one tight loop of the zstd binding's calls, and `check_v2_run`
 * asks check_v2's question of every batch: of the uncompressed ones in place, of the listed ones on
 * their decompressed bytes. Positions, sizes and the index are the caller's and bounded here again.
 *
 *   zstd_frames(buf, columns, n, lo, hi, max_total) -> (index, segments)
 *       index: int64 batch numbers; segments: (uint64 offset in buf, uint64 length) pairs; the
 *       content sizes their frames state sum to at most max_total (a payload past it is left out).
 *   check_v2_run(buf, columns, n, lo, hi, index, datas) -> bytes: per batch lo..hi-1, 1 when
 *       check_v2 finds it clean, 0 when the reference must read it (a control batch, a record not as
 *       the fast path reads it), 2 when it is compressed and not in `index` (the caller decompresses
 *       it itself). datas: the decompressed payload of each batch of `index`, in its order.
 */

/* The columns of a run (fast_walk.py's column numbers): n int64s per column, column after column. */
enum {
    COL_POSITION = 0,
    COL_BASE_OFFSET = 1,
    COL_LAST_OFFSET = 2,
    COL_COUNT = 3,
    COL_SIZE = 4,
    COL_ATTRIBUTES = 6,
    COL_BASE_TS = 7,
    COL_MAX_TS = 8,
    RUN_COLUMNS = 13,
};
#define V2_HEADER 61 /* offset, length and the v2 header: where the payload starts */
#define ATTR_CODEC 0x07
#define ATTR_LOG_APPEND 0x08
#define ATTR_CONTROL 0x20
#define CODEC_NONE 0
#define CODEC_ZSTD 4

typedef struct {
    Py_buffer buf, cols;
    Py_ssize_t n, lo, hi;
} Run;

static void run_release(Run *r) {
    if (r->buf.obj) PyBuffer_Release(&r->buf);
    if (r->cols.obj) PyBuffer_Release(&r->cols);
}

/* args[0:5] = buf, columns, n, lo, hi: the columns must hold n rows; 0 <= lo <= hi <= n. */
static int run_args(PyObject *args, Py_ssize_t nargs, const char *name, Run *r) {
    memset(r, 0, sizeof(*r));
    if (check_arity(args, nargs, name) < 0) return -1;
    r->n = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, 2));
    r->lo = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, 3));
    r->hi = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, 4));
    if (PyErr_Occurred()) return -1;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 0), &r->buf, PyBUF_SIMPLE) < 0) return -1;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 1), &r->cols, PyBUF_SIMPLE) < 0) {
        run_release(r);
        return -1;
    }
    if (r->n < 0 || r->n > PY_SSIZE_T_MAX / (RUN_COLUMNS * 8) || r->cols.len < r->n * RUN_COLUMNS * 8 ||
        r->lo < 0 || r->lo > r->hi || r->hi > r->n) {
        PyErr_Format(PyExc_ValueError, "%s: columns, n, lo and hi do not agree", name);
        run_release(r);
        return -1;
    }
    return 0;
}

/* Column c of batch k (memcpy: the columns' buffer need not be aligned). */
static inline int64_t run_col(const Run *r, int c, Py_ssize_t k) {
    int64_t v;
    memcpy(&v, (const char *)r->cols.buf + ((Py_ssize_t)c * r->n + k) * 8, 8);
    return v;
}

/* Batch k's payload inside buf, or -1 when its position and size do not lie inside it. */
static int run_payload(const Run *r, Py_ssize_t k, const uint8_t **p, Py_ssize_t *len) {
    int64_t pos = run_col(r, COL_POSITION, k), size = run_col(r, COL_SIZE, k);
    if (pos < 0 || size < V2_HEADER || pos > r->buf.len || size > r->buf.len - pos) return -1;
    *p = (const uint8_t *)r->buf.buf + pos + V2_HEADER;
    *len = (Py_ssize_t)size - V2_HEADER;
    return 0;
}

/* The length of the zstd frame at p (RFC 8878, 3.1.1: header, blocks, checksum) and the content
 * size its header states; -1 when it is not a zstd frame (a skippable one included), states no
 * content size, or does not end by len. Only the framing is read: the library checks the rest. */
static Py_ssize_t zstd_frame(const uint8_t *p, Py_ssize_t len, uint64_t *content_size) {
    static const int did_size[4] = {0, 1, 2, 4};
    static const int fcs_size[4] = {0, 2, 4, 8};
    if (len < 6) return -1;
    if (p[0] != 0x28 || p[1] != 0xB5 || p[2] != 0x2F || p[3] != 0xFD) return -1;
    uint8_t fhd = p[4];
    int single = (fhd >> 5) & 1;
    if (fhd & 0x08) return -1; /* reserved bit */
    int fcs = (fhd >> 6) == 0 ? single : fcs_size[fhd >> 6];
    if (fcs == 0) return -1;
    Py_ssize_t q = 5 + (single ? 0 : 1) + did_size[fhd & 3];
    if (fcs > len - q) return -1;
    uint64_t v = 0;
    for (int i = 0; i < fcs; i++) v |= (uint64_t)p[q + i] << (8 * i);
    if (fcs == 2) v += 256;
    q += fcs;
    for (;;) {
        if (len - q < 3) return -1;
        uint32_t bh = (uint32_t)p[q] | (uint32_t)p[q + 1] << 8 | (uint32_t)p[q + 2] << 16;
        q += 3;
        int type = (bh >> 1) & 3;
        Py_ssize_t body = type == 1 ? 1 : (Py_ssize_t)(bh >> 3);
        if (type == 3 || body > len - q) return -1;
        q += body;
        if (bh & 1) break;
    }
    if (fhd & 0x04) {
        if (len - q < 4) return -1;
        q += 4;
    }
    *content_size = v;
    return q;
}

static PyObject *fast_zstd_frames(PyObject *self, PyObject *args) {
    (void)self;
    Run r;
    if (run_args(args, 6, "zstd_frames", &r) < 0) return NULL;
    unsigned long long max_total = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(args, 5));
    if (PyErr_Occurred()) {
        run_release(&r);
        return NULL;
    }
    Py_ssize_t most = r.hi - r.lo, m = 0;
    int64_t *index = PyMem_Malloc(most ? (size_t)most * 8 : 1);
    uint64_t *segments = PyMem_Malloc(most ? (size_t)most * 16 : 1);
    PyObject *out = NULL;
    if (index == NULL || segments == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    uint64_t total = 0;
    for (Py_ssize_t k = r.lo; k < r.hi; k++) {
        int64_t attrs = run_col(&r, COL_ATTRIBUTES, k);
        const uint8_t *p;
        Py_ssize_t len;
        uint64_t size;
        if ((attrs & ATTR_CONTROL) || (attrs & ATTR_CODEC) != CODEC_ZSTD) continue;
        if (run_payload(&r, k, &p, &len) < 0 || zstd_frame(p, len, &size) != len) continue;
        /* An empty frame (a batch of no records, rare) is left to the caller's one-shot path. */
        if (size == 0 || size > max_total - total) continue;
        total += size;
        index[m] = k;
        segments[2 * m] = (uint64_t)(p - (const uint8_t *)r.buf.buf);
        segments[2 * m + 1] = (uint64_t)len;
        m++;
    }
    out = Py_BuildValue("(y#y#)", (const char *)index, m * 8, (const char *)segments, m * 16);
done:
    PyMem_Free(index);
    PyMem_Free(segments);
    run_release(&r);
    return out;
}

static PyObject *fast_check_v2_run(PyObject *self, PyObject *args) {
    (void)self;
    Run r;
    if (run_args(args, 7, "check_v2_run", &r) < 0) return NULL;
    PyObject *datas = PyTuple_GET_ITEM(args, 6), *out = NULL;
    Py_buffer index = {0}, *views = NULL;
    Py_ssize_t m = 0, got = 0;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 5), &index, PyBUF_SIMPLE) < 0) goto done;
    m = index.len / 8;
    if (index.len % 8 || !PyList_Check(datas) || PyList_GET_SIZE(datas) != m) {
        PyErr_SetString(PyExc_ValueError, "check_v2_run: index and datas do not agree");
        goto done;
    }
    int64_t prev = (int64_t)r.lo - 1;
    for (Py_ssize_t j = 0; j < m; j++) {
        int64_t k;
        memcpy(&k, (const char *)index.buf + j * 8, 8);
        if (k <= prev || k >= r.hi) {
            PyErr_SetString(PyExc_ValueError, "check_v2_run: index not increasing inside lo..hi");
            goto done;
        }
        prev = k;
    }
    views = PyMem_Calloc(m ? (size_t)m : 1, sizeof(Py_buffer));
    if (views == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < m; got++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(datas, got), &views[got], PyBUF_SIMPLE) < 0) goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, r.hi - r.lo);
    if (out == NULL) goto done;
    char *flags = PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS;
    Py_ssize_t j = 0;
    for (Py_ssize_t k = r.lo; k < r.hi; k++) {
        int64_t attrs = run_col(&r, COL_ATTRIBUTES, k), at = -1;
        if (j < m) memcpy(&at, (const char *)index.buf + j * 8, 8);
        const uint8_t *d = NULL;
        Py_ssize_t len = 0;
        char flag;
        if (at == k) {
            d = views[j].buf;
            len = views[j].len;
            j++;
        } else if ((attrs & ATTR_CODEC) == CODEC_NONE && !(attrs & ATTR_CONTROL)) {
            if (run_payload(&r, k, &d, &len) < 0) d = NULL;
        }
        if (attrs & ATTR_CONTROL) {
            flag = 0;
        } else if (d != NULL) {
            Batch bt;
            bt.base_offset = run_col(&r, COL_BASE_OFFSET, k);
            bt.last_offset = run_col(&r, COL_LAST_OFFSET, k);
            bt.base_ts = run_col(&r, COL_BASE_TS, k);
            bt.max_ts = run_col(&r, COL_MAX_TS, k);
            bt.count = run_col(&r, COL_COUNT, k);
            bt.base_seq = -1;
            bt.log_append = (attrs & ATTR_LOG_APPEND) != 0;
            bt.check_max_ts = !bt.log_append;
            flag = (char)check_batch(d, len, &bt);
        } else {
            flag = (attrs & ATTR_CODEC) == CODEC_NONE ? 0 : 2;
        }
        flags[k - r.lo] = flag;
    }
    Py_END_ALLOW_THREADS;
done:
    for (Py_ssize_t j = 0; j < got; j++) PyBuffer_Release(&views[j]);
    PyMem_Free(views);
    if (index.obj) PyBuffer_Release(&index);
    run_release(&r);
    return out;
}

static PyMethodDef methods[] = {
    {"decode_v2", fast_decode_v2, METH_VARARGS, "Decode a clean v2 batch's records, or None."},
    {"render_v2", fast_render_v2, METH_VARARGS, "Render a clean v2 batch's records as lines, or None."},
    {"columns_v2_many", fast_columns_v2_many, METH_O, "Clean v2 batches' records as Arrow buffers."},
    {"render_kafka_v2", fast_render_kafka_v2, METH_VARARGS, "Kafka's tool's record lines of a clean v2 batch, or None."},
    {"check_v2", fast_check_v2, METH_VARARGS, "Whether decode_v2 would find a batch clean, building nothing."},
    {"scale_i64", fast_scale_i64, METH_VARARGS, "int64s times a factor, or None on overflow."},
    {"take_fixed", fast_take_fixed, METH_VARARGS, "Fixed-width items gathered by an int32 index."},
    {"nonempty_validity", fast_nonempty_validity, METH_VARARGS, "Validity bitmap of non-empty list entries."},
    {"zstd_frames", fast_zstd_frames, METH_VARARGS, "A run's zstd payloads one-shot decompression takes."},
    {"check_v2_run", fast_check_v2_run, METH_VARARGS, "check_v2 of every batch of a run, as flags."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kdump.formats._fastrecords", "Compiled v2 record decoding and rendering.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastrecords(void) { return PyModule_Create(&module); }
