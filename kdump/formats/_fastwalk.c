/*
 * The compiled batch walk: framing, bounds, CRC-32C and the scanner's offset checks over runs of
 * clean v2 batches, without a Python object per batch.
 *
 * kdump/scan/log_scanner.py (scan_log) is the reference and keeps every finding. walk_v2 takes the
 * common case off its hands: starting at an entry boundary, it walks consecutive entries as long as
 * each one is a whole v2 batch inside the bytes given, at least the v2 header long, with a matching
 * checksum, and passing exactly the conditions under which the scanner skips its full offset checks
 * (base offset = previous last offset + 1, relative offset in range, count within the offsets,
 * leader epoch not below the previous one, a defined codec). At the first entry that is anything
 * else it stops and hands back: the scanner reads that entry the reference way (and reports what is
 * wrong with it, if anything), then calls the walk again. So the walk can only ever be faster, never
 * different (tests/scan/test_fast_walk.py holds the event streams identical).
 *
 * A length field is bounded by the bytes left before it is used; nothing is read past `limit` (how far
 * the bytes are ready); no batch is started at or after `soft_stop` (where the caller hands back
 * memory it has scanned).
 *
 * Functions (see _fastwalk.pyi):
 *   walk_v2(buf, pos, end, limit, soft_stop, prev_last, prev_epoch, base_offset, max_batches,
 *           threads=1, thread_bytes=THREAD_BYTES, release_from=-1, fd=-1)
 *       -> (n, pos, prev_last, prev_epoch, columns, records, max_ts, offset_of_max_ts, attrs_or)
 *       With threads > 1 and a window (pos to soft_stop or limit) of at least thread_bytes, a helper
 *       thread (created and joined inside the call, the GIL released) walks the second half of the
 *       window (see SPLIT_HOPS); the result is the one of threads=1. release_from >= 0 (only for a
 *       read-only mmap's buffer, and <= pos; else ValueError) also hands back the pages of
 *       buf[release_from:pos], on the helper when there is one: the scan's memory stays flat
 *       (kdump/scan/pages.py). fd >= 0 (only with a read-only mmap's whole buffer; else ValueError):
 *       the descriptor of the file it maps, read with pread instead of through the mapping (CHUNK).
 *   headers(columns, n, header_type) -> list of header tuples
 *   kafka_batch_lines(columns, n, lo, hi, position, limit) -> (lines, count, position after them)
 *   index_agrees(kind, index, base_offset, positions, bases, lasts, max_timestamps, valid_bytes) -> bool
 *       (kind 0 .index, 1 .timeindex; the columns int64 arrays of the valid log's batches)
 *   build_indexes(positions, last_offsets, max_timestamps, interval_bytes, base_offset)
 *       -> (index bytes, timeindex bytes) | None
 *   crc32c(data, crc=0) -> int   (the checksum the walk uses: hardware where the CPU has it)
 *   crc32c_impl() -> "sse4.2" | "armv8-crc" | "table"
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <errno.h>
#include <time.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#define KD_X86 1
#include <cpuid.h>
#include <nmmintrin.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#define KD_ARM 1
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

/* ---- CRC-32C (Castagnoli), reflected polynomial 0x82F63B78 ----------------------------------- */
/* All functions below work on the raw register (no pre/post inversion); crc32c() adds those. */

#define POLY 0x82F63B78u
static uint32_t sw_table[8][256];
static int sw_ready = 0;

static void sw_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        sw_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = sw_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = sw_table[0][c & 0xff] ^ (c >> 8);
            sw_table[k][n] = c;
        }
    }
    sw_ready = 1;
}

/* Slicing-by-8: where the CPU has no CRC-32C instruction. */
static uint32_t sw_update(uint32_t crc, const uint8_t *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        crc = sw_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc; /* little-endian hosts; the build targets those (x86-64, aarch64) */
        crc = sw_table[7][w & 0xff] ^ sw_table[6][(w >> 8) & 0xff] ^ sw_table[5][(w >> 16) & 0xff] ^
              sw_table[4][(w >> 24) & 0xff] ^ sw_table[3][(w >> 32) & 0xff] ^ sw_table[2][(w >> 40) & 0xff] ^
              sw_table[1][(w >> 48) & 0xff] ^ sw_table[0][(w >> 56) & 0xff];
        p += 8;
        n -= 8;
    }
    while (n--) crc = sw_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(KD_X86) || defined(KD_ARM)
/* Three streams at once hide the instruction's 3-cycle latency; their registers are joined by
 * shifting through the zeros that follow each (a table per byte of the register, per block size). */
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256
static uint32_t shift_long[4][256], shift_short[4][256];

static inline uint32_t shift(uint32_t table[4][256], uint32_t crc) {
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^ table[3][crc >> 24];
}

/* The register after `n` zero bytes, in software (once, to build the shift tables). */
static uint32_t zeros_sw(uint32_t crc, size_t n) {
    while (n--) crc = sw_table[0][crc & 0xff] ^ (crc >> 8);
    return crc;
}

static void shift_init(uint32_t table[4][256], size_t n) {
    uint32_t basis[32];
    for (int b = 0; b < 32; b++) basis[b] = zeros_sw(1u << b, n);
    for (int k = 0; k < 4; k++)
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t out = 0;
            for (int b = 0; b < 8; b++)
                if (v & (1u << b)) out ^= basis[8 * k + b];
            table[k][v] = out;
        }
}
#endif

#ifdef KD_X86
#define HW_ATTR __attribute__((target("sse4.2")))
#define HW8(c, p) ((uint32_t)_mm_crc32_u64((c), load64(p)))
#define HW1(c, b) _mm_crc32_u8((c), (b))
#elif defined(KD_ARM)
#include <arm_acle.h>
#define HW_ATTR __attribute__((target("+crc")))
#define HW8(c, p) __crc32cd((c), load64(p))
#define HW1(c, b) __crc32cb((c), (b))
#endif

#if defined(KD_X86) || defined(KD_ARM)
static inline uint64_t load64(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static HW_ATTR uint32_t hw_blocks(uint32_t crc, const uint8_t **pp, size_t *np, size_t block,
                                  uint32_t table[4][256]) {
    const uint8_t *p = *pp;
    size_t n = *np;
    while (n >= 3 * block) {
        uint32_t c0 = crc, c1 = 0, c2 = 0;
        const uint8_t *end = p + block;
        do {
            c0 = HW8(c0, p);
            c1 = HW8(c1, p + block);
            c2 = HW8(c2, p + 2 * block);
            p += 8;
        } while (p < end);
        crc = shift(table, shift(table, c0) ^ c1) ^ c2;
        p += 2 * block;
        n -= 3 * block;
    }
    *pp = p;
    *np = n;
    return crc;
}

static HW_ATTR uint32_t hw_update(uint32_t crc, const uint8_t *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        crc = HW1(crc, *p++);
        n--;
    }
    crc = hw_blocks(crc, &p, &n, LONG_BLOCK, shift_long);
    crc = hw_blocks(crc, &p, &n, SHORT_BLOCK, shift_short);
    while (n >= 8) {
        crc = HW8(crc, p);
        p += 8;
        n -= 8;
    }
    while (n--) crc = HW1(crc, *p++);
    return crc;
}
#endif

static int use_hw = -1; /* -1: not decided yet */

static void crc_init(void) {
    if (use_hw >= 0) return;
    if (!sw_ready) sw_init();
    use_hw = 0;
#if defined(KD_X86)
    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2)) use_hw = 1;
#elif defined(KD_ARM)
    if (getauxval(AT_HWCAP) & HWCAP_CRC32) use_hw = 1;
#endif
#if defined(KD_X86) || defined(KD_ARM)
    if (use_hw) {
        shift_init(shift_long, LONG_BLOCK);
        shift_init(shift_short, SHORT_BLOCK);
    }
#endif
}

static inline uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n) {
#if defined(KD_X86) || defined(KD_ARM)
    if (use_hw) return hw_update(crc, p, n);
#endif
    return sw_update(crc, p, n);
}

/* The standard CRC-32C of `n` bytes, continuing from a previous checksum `crc`. */
static inline uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n) { return ~crc_update(~crc, p, n); }

/* ---- big-endian fields ----------------------------------------------------------------------- */

static inline int64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}
static inline int32_t be32(const uint8_t *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}
static inline int16_t be16(const uint8_t *p) { return (int16_t)(((uint16_t)p[0] << 8) | p[1]); }

/* The i-th native int64 of a caller's column buffer. Through memcpy: a buffer (a memoryview slice,
 * say) need not be 8-aligned, and a misaligned int64_t load is undefined. Compiles to one load. */
static inline int64_t ld64(const void *buf, Py_ssize_t i) {
    int64_t v;
    memcpy(&v, (const uint8_t *)buf + 8 * i, 8);
    return v;
}

/* ---- the walk -------------------------------------------------------------------------------- */

/* Sizes from kdump/formats/constants.py. */
#define LOG_OVERHEAD 12
#define HEADER_SIZE_UP_TO_MAGIC 17
#define V2_HEADER_SIZE 61
#define MIN_BATCH_LENGTH 14
#define MAX_RELATIVE_OFFSET 2147483647LL

/* Columns of the result, each n int64s, in this order (kdump/formats/fast_walk.py names them). */
enum {
    C_POSITION,
    C_BASE_OFFSET,
    C_LAST_OFFSET,
    C_COUNT,
    C_SIZE,
    C_CRC,
    C_ATTRIBUTES,
    C_BASE_TIMESTAMP,
    C_MAX_TIMESTAMP,
    C_PRODUCER_ID,
    C_PRODUCER_EPOCH,
    C_BASE_SEQUENCE,
    C_LEADER_EPOCH,
    N_COLUMNS
};

/* With threads > 1, a window of at least this many bytes (from `pos` to `soft_stop` or `limit`) gets a
 * helper thread; below it a thread costs more than it saves (measured: tests/bench/README.md). */
#define THREAD_BYTES (1 << 20)
/* Whether a helper pays depends on whether a core is free for it: on a quiet machine it takes the
 * walk's page faults off it (a GiB walked 20% faster), on a busy one the call waits for it to get a
 * core (20% slower). So each window of a walk that may have one is timed, per MiB walked, with a
 * helper and without (each way twice to begin with); the cost of each kept as a running average (half
 * the old, half the new), and a window takes the cheaper way, the other one every PROBE_EVERY windows
 * to follow a change in the machine's load. (Not with thread_bytes 0, which the tests use to give
 * every window a helper.) Shared by concurrent calls, read and written atomically: a hint, whichever
 * call writes last. */
#define PROBE_EVERY 8
static long long cost_per_mib[2]; /* [0] alone, [1] with a helper; 0: not measured yet */
static unsigned windows_walked;

static int choose_helper(void) {
    long long alone = __atomic_load_n(&cost_per_mib[0], __ATOMIC_RELAXED);
    long long helped = __atomic_load_n(&cost_per_mib[1], __ATOMIC_RELAXED);
    unsigned w = __atomic_fetch_add(&windows_walked, 1, __ATOMIC_RELAXED);
    if (w < 4 || helped == 0 || alone == 0) return !(w & 1); /* each way twice to begin with */
    int best = helped < alone;
    return w % PROBE_EVERY == PROBE_EVERY - 1 ? !best : best;
}

static void note_cost(int helped, long long ns, Py_ssize_t bytes) {
    if (bytes <= 0 || ns <= 0 || ns > (INT64_MAX >> 21)) return;
    long long cost = ns * (1 << 20) / bytes;
    long long old = __atomic_load_n(&cost_per_mib[helped], __ATOMIC_RELAXED);
    __atomic_store_n(&cost_per_mib[helped], old ? (old + cost) / 2 : (cost ? cost : 1), __ATOMIC_RELAXED);
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The helper walks the second half of the window while the calling thread walks the first: both
 * stream their bytes through the checksum (one core alone waits on memory at about 8 GB/s) and take
 * their own page faults. The helper needs a batch boundary in the middle of the window: it follows the
 * batch lengths from the window's start for up to SPLIT_HOPS batches (large batches), else looks from
 * the middle for the first position that frames as a batch passing every check of the walk, its
 * checksum included (small batches: found within a batch's length). That position is only ever a
 * guess: the calling thread takes the helper's batches only if its own walk lands exactly on it and
 * the helper's first batch follows its last one (offset and leader epoch); else they are dropped and
 * the calling thread walks on alone. So the result is always the one-thread walk's. */
#define SPLIT_HOPS 32
#define SPLIT_SCAN_STEP 4096 /* the search for a boundary looks for the walk's end this often */

/* Small batches through the mapping are another matter: the walk waits on memory for each header
 * and two threads split it no faster (a 1 GiB segment of 2 KB batches, whole process: 1.07-1.12x the
 * time). There the helper maps the window's pages ahead of the walk instead (MADV_POPULATE_READ, a
 * step at a time, from where its hops stopped), so that the walk finds them mapped rather than
 * taking a page fault every 64 KiB: the kernel's half of reading a mapped file, on the other core.
 * It stops once the walk is over. */
#if defined(__linux__) && !defined(MADV_POPULATE_READ)
#define MADV_POPULATE_READ 22 /* Linux 5.14; built against older headers, an older kernel says EINVAL */
#endif
#define POPULATE_STEP (256 << 10)
#define MEET_UNKNOWN (-2) /* the helper has not said yet */
#define MEET_NONE (-1)
#define MEET_POPULATE (-3) /* small batches through the mapping: the helper maps pages ahead */

/* The fields of the walk's bytes and bounds, the same for both threads. */
typedef struct {
    const uint8_t *buf;
    Py_ssize_t end, limit, soft_stop;
    int has_base;
    long long base_offset;
    int fd; /* >= 0: the file buf maps from position 0, read with pread instead of through the mapping */
} walk_bounds;

/* One thread's run of batches: its rows (row-major), where it stands, and its sums. */
typedef struct {
    int64_t *rows;
    Py_ssize_t n, cap, pos;
    long long prev_last, prev_epoch, records, max_ts, off_max, attrs_or;
} walk_run;

typedef struct {
    const walk_bounds *b;
    Py_ssize_t from, mid, stop; /* the window; the helper's boundary is looked for from mid */
    long long prev_last, prev_epoch; /* the calling thread's state at the window's start */
    Py_ssize_t max_batches;
    uint8_t *release_lo, *release_hi; /* the pages to hand back first (see release_pages) */
    Py_ssize_t meet;                  /* atomic: MEET_UNKNOWN, MEET_NONE, or where the helper starts */
    Py_ssize_t hopped;                /* how far the helper's hops went (MEET_POPULATE: it maps from there) */
    int over;                         /* atomic: the calling thread no longer wants the helper's batches */
    walk_run run;                     /* the helper's batches */
} split_job;

/* Hands back a mapped file's pages the scan has passed (MADV_DONTNEED: they stay in the page cache,
 * they leave the process's resident memory), so a scan of a 1 GiB segment keeps a flat footprint.
 * Only ever asked for of a read-only mmap (walk_v2 checks), whose pages a later read maps again from
 * the page cache: what it releases is never lost, only no longer mapped. An error changes nothing. */
static void release_pages(uint8_t *lo, uint8_t *hi) {
#ifdef MADV_DONTNEED
    if (lo < hi) (void)madvise(lo, (size_t)(hi - lo), MADV_DONTNEED);
#else
    (void)lo;
    (void)hi;
#endif
}

/* Reading a mapped file through its mapping costs a page fault every 64 KiB and the pages' mapping and
 * unmapping, all of it kernel work on the walking thread (about 40% of a GiB's walk, measured:
 * tests/bench/README.md). With the file's descriptor, the walk instead reads its bytes with pread
 * into a buffer of its own, CHUNK at a time, and checksums them while they are in the cache: a copy,
 * as `cat` makes, and nothing to map or hand back. The bytes are the same (both are the page cache);
 * a file cut short under the walk reads short, and the walk stops there, as the mapping's guard would
 * have it. */
#define CHUNK (256 << 10)

typedef struct {
    int fd;
    uint8_t *chunk;     /* cap bytes (CHUNK, or a header's for a peek) */
    Py_ssize_t cap;
    Py_ssize_t at, len; /* the chunk holds the file's bytes [at, at + len) */
    int pooled;         /* which of `chunk_pool` it is, or -1: allocated for this reader */
} reader;

/* Chunks kept from call to call (a fresh 256 KiB buffer per window is 64 page faults of new
 * memory): one for the calling thread, one for its helper; a call that finds them taken (walks on
 * other threads at once) allocates its own. */
static uint8_t *chunk_pool[2];
static int chunk_busy[2];

static int reader_open(reader *rd, int fd) {
    rd->fd = fd;
    rd->chunk = NULL;
    rd->cap = CHUNK;
    rd->at = rd->len = 0;
    rd->pooled = -1;
    if (fd < 0) return 1;
    for (int i = 0; i < 2; i++) {
        int free_slot = 0;
        if (__atomic_compare_exchange_n(&chunk_busy[i], &free_slot, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            if (chunk_pool[i] == NULL) chunk_pool[i] = PyMem_RawMalloc(CHUNK);
            if (chunk_pool[i] == NULL) {
                __atomic_store_n(&chunk_busy[i], 0, __ATOMIC_RELEASE);
                break;
            }
            rd->chunk = chunk_pool[i];
            rd->pooled = i;
            return 1;
        }
    }
    rd->chunk = PyMem_RawMalloc(CHUNK);
    return rd->chunk != NULL;
}

static void reader_close(reader *rd) {
    if (rd->pooled >= 0) __atomic_store_n(&chunk_busy[rd->pooled], 0, __ATOMIC_RELEASE);
    else PyMem_RawFree(rd->chunk);
    rd->chunk = NULL;
}

/* The bytes from pos on, at least `need` of them (1 <= need <= its chunk's size), and in *avail how many are
 * there: in buf itself, or in the chunk, read from pos when it does not hold them. NULL when the file
 * no longer has them or cannot be read: the walk stops there. Nothing at or past limit is read. */
static const uint8_t *bytes_at(reader *rd, const walk_bounds *b, Py_ssize_t pos, Py_ssize_t need, Py_ssize_t *avail) {
    if (pos + need > b->limit) return NULL;
    if (rd->fd < 0) {
        *avail = b->limit - pos;
        return b->buf + pos;
    }
    if (pos < rd->at || pos + need > rd->at + rd->len) {
        Py_ssize_t want = b->limit - pos < rd->cap ? b->limit - pos : rd->cap;
        Py_ssize_t got = 0;
        while (got < want) {
            ssize_t k = pread(rd->fd, rd->chunk + got, (size_t)(want - got), (off_t)(pos + got));
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break;
            got += k;
        }
        rd->at = pos;
        rd->len = got;
        if (got < need) return NULL;
    }
    *avail = rd->at + rd->len - pos;
    return rd->chunk + (pos - rd->at);
}

/* The CRC-32C of the n bytes from pos (streamed through the chunk); 0 when they cannot all be read. */
static int crc_of(reader *rd, const walk_bounds *b, Py_ssize_t pos, Py_ssize_t n, uint32_t *out) {
    uint32_t crc = ~0u;
    while (n > 0) {
        Py_ssize_t avail;
        const uint8_t *p = bytes_at(rd, b, pos, 1, &avail);
        if (p == NULL) return 0;
        Py_ssize_t k = avail < n ? avail : n;
        crc = crc_update(crc, p, (size_t)k);
        pos += k;
        n -= k;
    }
    *out = ~crc;
    return 1;
}

/* The size of the entry at pos when it frames as a v2 batch inside the bytes ready (the walk's first
 * checks), else 0; *header its first V2_HEADER_SIZE bytes (all of them there when it frames). */
static inline Py_ssize_t framed_size(reader *rd, const walk_bounds *b, Py_ssize_t pos, const uint8_t **header) {
    Py_ssize_t remaining = b->end - pos;
    if (remaining <= HEADER_SIZE_UP_TO_MAGIC || pos + HEADER_SIZE_UP_TO_MAGIC > b->limit) return 0;
    Py_ssize_t avail, need = b->limit - pos < V2_HEADER_SIZE ? b->limit - pos : V2_HEADER_SIZE;
    const uint8_t *e = bytes_at(rd, b, pos, need, &avail);
    if (e == NULL) return 0;
    int32_t length = be32(e + 8);
    if (length < MIN_BATCH_LENGTH || (Py_ssize_t)length > remaining - LOG_OVERHEAD) return 0;
    if ((int8_t)e[16] != 2 || length < V2_HEADER_SIZE - LOG_OVERHEAD) return 0;
    Py_ssize_t size = (Py_ssize_t)length + LOG_OVERHEAD;
    if (pos + size > b->limit) return 0;
    *header = e;
    return size;
}

/* The walk's checks of a framed batch's header but its link to the batch before (its base offset)
 * and its checksum: its last offset computable and, with the file name's offset, at most 2^31-1
 * past it; a record count within its offsets; a leader epoch not below prev_epoch; a defined codec.
 * *last its last offset. */
static inline int header_holds(const walk_bounds *b, const uint8_t *e, long long prev_epoch, int64_t *last) {
    int64_t base = be64(e);
    int32_t delta = be32(e + 23), count = be32(e + 57), epoch = be32(e + 12);
    if (__builtin_add_overflow(base, (int64_t)delta, last)) return 0;
    if (b->has_base &&
        (__builtin_sub_overflow(*last, b->base_offset, &(int64_t){0}) || *last - b->base_offset > MAX_RELATIVE_OFFSET))
        return 0;
    return count >= 0 && (int64_t)count <= (int64_t)delta + 1 && epoch >= prev_epoch && (be16(e + 21) & 0x07) <= 4;
}

/* The checksum of the batch at pos (size bytes, its header at e) matches the one it says. */
static inline int checksum_holds(reader *rd, const walk_bounds *b, Py_ssize_t pos, Py_ssize_t size, const uint8_t *e) {
    uint32_t stored = (uint32_t)be32(e + 17), crc;
    if (rd->fd < 0) return crc32c(0, e + 21, (size_t)(size - 21)) == stored;
    return crc_of(rd, b, pos + 21, size - 21, &crc) && crc == stored;
}

/* Walks batches from run->pos while each passes every check (see the file's comment), appending a row
 * each, up to max_batches rows in all, none starting at or after soft_stop. `linked` 0: the first
 * batch's base offset is not checked against prev_last (the helper's, checked by the calling thread
 * when it takes them). `meet` (the calling thread with a helper): stop on reaching the helper's start.
 * `over` (the helper): stop once the calling thread is done with it. Returns 0 when stopped by a batch
 * (or the end of the bytes), 1 by soft_stop, max_batches, `meet` or `over`. */
static int walk_batches(reader *rd, const walk_bounds *b, walk_run *r, Py_ssize_t max_batches, int linked,
                        const Py_ssize_t *meet, const int *over) {
    Py_ssize_t pos = r->pos, n = r->n;
    long long prev_last = r->prev_last, prev_epoch = r->prev_epoch;
    int stopped = 0;
    for (;;) {
        if (n >= max_batches || pos >= b->soft_stop) {
            stopped = 1;
            break;
        }
        if (meet != NULL) {
            Py_ssize_t m = __atomic_load_n(meet, __ATOMIC_ACQUIRE);
            if (m >= 0 && pos >= m) {
                stopped = 1;
                break;
            }
        }
        if (over != NULL && __atomic_load_n(over, __ATOMIC_RELAXED)) {
            stopped = 1;
            break;
        }
        const uint8_t *e;
        Py_ssize_t size = framed_size(rd, b, pos, &e);
        if (size == 0) break;
        int64_t base = be64(e), last;
        /* The fast condition of the scanner (else it runs its full offset checks). */
        if (linked && (prev_last == INT64_MAX || base != prev_last + 1)) break;
        linked = 1;
        if (!header_holds(b, e, prev_epoch, &last)) break;
        int32_t epoch = be32(e + 12), count = be32(e + 57);
        int16_t attributes = be16(e + 21);
        if (n == r->cap) {
            Py_ssize_t ncap = r->cap ? r->cap * 2 : 256;
            int64_t *nr = PyMem_RawRealloc(r->rows, (size_t)ncap * N_COLUMNS * sizeof(int64_t));
            if (nr == NULL) break; /* hand back: the scanner reads on in Python */
            r->rows = nr;
            r->cap = ncap;
        }
        int64_t *row = r->rows + n * N_COLUMNS;
        /* The header's fields are kept before the checksum streams the batch (the chunk moves on). */
        row[C_POSITION] = pos;
        row[C_BASE_OFFSET] = base;
        row[C_LAST_OFFSET] = last;
        row[C_COUNT] = count;
        row[C_SIZE] = size;
        row[C_CRC] = (uint32_t)be32(e + 17);
        row[C_ATTRIBUTES] = attributes;
        row[C_BASE_TIMESTAMP] = be64(e + 27);
        row[C_MAX_TIMESTAMP] = be64(e + 35);
        row[C_PRODUCER_ID] = be64(e + 43);
        row[C_PRODUCER_EPOCH] = be16(e + 51);
        row[C_BASE_SEQUENCE] = be32(e + 53);
        row[C_LEADER_EPOCH] = epoch;
        if (!checksum_holds(rd, b, pos, size, e)) break;
        if (row[C_MAX_TIMESTAMP] > r->max_ts) {
            r->max_ts = row[C_MAX_TIMESTAMP];
            r->off_max = last;
        }
        r->records += count;
        r->attrs_or |= attributes;
        prev_last = last;
        if (epoch >= 0 && epoch > prev_epoch) prev_epoch = epoch;
        pos += size;
        n++;
    }
    r->pos = pos;
    r->n = n;
    r->prev_last = prev_last;
    r->prev_epoch = prev_epoch;
    return stopped;
}

/* Whether a batch starting at pos would pass every check of the walk after a batch whose last offset
 * is at most prev_last (so any base offset above it) at leader epoch prev_epoch: a guess at a batch
 * boundary (see SPLIT_HOPS); its length is taken from *budget first, and it is not checked once that is
 * spent. */
static int passes_at(reader *rd, const walk_bounds *b, Py_ssize_t pos, long long prev_last, long long prev_epoch,
                     Py_ssize_t *budget) {
    const uint8_t *e;
    int64_t last;
    Py_ssize_t size = framed_size(rd, b, pos, &e);
    if (size == 0 || be64(e) <= prev_last || !header_holds(b, e, prev_epoch, &last)) return 0;
    *budget -= size;
    return *budget >= 0 && checksum_holds(rd, b, pos, size, e);
}

/* Where the helper starts: a batch boundary at or after mid (before stop), or MEET_NONE; or, for
 * small batches read through the mapping, MEET_POPULATE. */
static Py_ssize_t find_split(split_job *job, reader *rd) {
    const walk_bounds *b = job->b;
    Py_ssize_t p = job->from;
    /* Its hops read a header each (with a descriptor, not a chunk each). */
    uint8_t header[V2_HEADER_SIZE];
    reader peek = {b->fd, header, V2_HEADER_SIZE, 0, 0, -1};
    for (int hops = 0; hops < SPLIT_HOPS && p < job->mid; hops++) {
        const uint8_t *e;
        Py_ssize_t size = framed_size(&peek, b, p, &e);
        if (size == 0) return MEET_NONE; /* the calling thread stops before the middle */
        p += size;
    }
    if (p >= job->mid) return p < job->stop ? p : MEET_NONE;
    if (b->fd < 0) {
        job->hopped = p;
        return MEET_POPULATE;
    }
    /* Nothing at or past limit is read: a batch's header must end before it. Guesses whose checksum
     * is computed cost their length: past a budget of half the window (bytes made to look like
     * headers everywhere), the helper gives up and the calling thread walks alone. */
    Py_ssize_t last_start = b->limit - V2_HEADER_SIZE < job->stop - 1 ? b->limit - V2_HEADER_SIZE : job->stop - 1;
    Py_ssize_t budget = job->stop - job->mid;
    for (Py_ssize_t q = job->mid; q <= last_start; q++) {
        if ((q & (SPLIT_SCAN_STEP - 1)) == 0 && __atomic_load_n(&job->over, __ATOMIC_RELAXED)) return MEET_NONE;
        Py_ssize_t avail;
        const uint8_t *e = bytes_at(rd, b, q, V2_HEADER_SIZE, &avail);
        if (e == NULL) return MEET_NONE;
        if (e[16] != 2) continue;
        if (__atomic_load_n(&job->over, __ATOMIC_RELAXED)) return MEET_NONE;
        if (passes_at(rd, b, q, job->prev_last, job->prev_epoch, &budget)) return q;
        if (budget < 0) return MEET_NONE;
    }
    return MEET_NONE;
}

/* The window's pages from `from` on, mapped ahead of the walk until it is over. An error (a file cut
 * short under the scan; a kernel without it) changes nothing: no signal is raised, and the walk reads
 * what it reads either way. */
static void populate(const uint8_t *from, const uint8_t *to, const int *over) {
#ifdef MADV_POPULATE_READ
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uint8_t *p = (const uint8_t *)(((uintptr_t)from + page - 1) & ~(page - 1));
    to = (const uint8_t *)((uintptr_t)to & ~(page - 1));
    while (p < to && !__atomic_load_n(over, __ATOMIC_RELAXED)) {
        size_t n = (size_t)(to - p) < POPULATE_STEP ? (size_t)(to - p) : POPULATE_STEP;
        if (madvise((void *)p, n, MADV_POPULATE_READ) != 0) break;
        p += n;
    }
#else
    (void)from;
    (void)to;
    (void)over;
#endif
}

static void *split_thread(void *arg) {
    split_job *job = arg;
    release_pages(job->release_lo, job->release_hi);
    reader rd;
    Py_ssize_t at = reader_open(&rd, job->b->fd) ? find_split(job, &rd) : MEET_NONE;
    __atomic_store_n(&job->meet, at < 0 ? MEET_NONE : at, __ATOMIC_RELEASE);
    if (at == MEET_POPULATE) populate(job->b->buf + job->hopped, job->b->buf + job->stop, &job->over);
    if (at >= 0) {
        job->run.pos = at;
        job->run.prev_last = job->prev_last; /* unused for its first batch (not linked) */
        job->run.prev_epoch = job->prev_epoch;
        walk_batches(&rd, job->b, &job->run, job->max_batches, 0, NULL, &job->over);
    }
    reader_close(&rd);
    return NULL;
}

/* The helper's batches after the calling thread's, when its walk ended exactly where the helper's
 * began and the helper's first batch follows its last (then every one of them passes after it too: the
 * helper's leader epochs never go down); else nothing changes. */
static void take_helpers(walk_run *r, split_job *job, Py_ssize_t max_batches) {
    walk_run *h = &job->run;
    if (h->n == 0 || r->pos != __atomic_load_n(&job->meet, __ATOMIC_ACQUIRE) || r->n + h->n > max_batches) return;
    const int64_t *first = h->rows;
    if (r->prev_last == INT64_MAX || first[C_BASE_OFFSET] != r->prev_last + 1 || first[C_LEADER_EPOCH] < r->prev_epoch)
        return;
    if (r->n + h->n > r->cap) {
        int64_t *nr = PyMem_RawRealloc(r->rows, (size_t)(r->n + h->n) * N_COLUMNS * sizeof(int64_t));
        if (nr == NULL) return;
        r->rows = nr;
        r->cap = r->n + h->n;
    }
    memcpy(r->rows + r->n * N_COLUMNS, h->rows, (size_t)h->n * N_COLUMNS * sizeof(int64_t));
    r->n += h->n;
    r->pos = h->pos;
    r->prev_last = h->prev_last;
    if (h->prev_epoch > r->prev_epoch) r->prev_epoch = h->prev_epoch;
    if (h->max_ts > r->max_ts) {
        r->max_ts = h->max_ts;
        r->off_max = h->off_max;
    }
    r->records += h->records;
    r->attrs_or |= h->attrs_or;
}

/* Whether `obj` exports a read-only mmap.mmap (itself, or a memoryview of one): the only buffer whose
 * pages walk_v2 may hand back (MADV_DONTNEED on any other memory would zero it). */
static int is_readonly_map(PyObject *obj, const Py_buffer *view) {
    if (!view->readonly) return 0;
    if (PyMemoryView_Check(obj)) obj = PyMemoryView_GET_BASE(obj);
    if (obj == NULL) return 0;
    PyObject *module = PyImport_ImportModule("mmap");
    if (module == NULL) return -1;
    PyObject *type = PyObject_GetAttrString(module, "mmap");
    Py_DECREF(module);
    if (type == NULL) return -1;
    int is = PyType_Check(type) && PyObject_TypeCheck(obj, (PyTypeObject *)type);
    Py_DECREF(type);
    return is;
}

/* Whether the buffer starts where the mmap it is a view of starts (a slice does not). */
static int starts_its_map(PyObject *obj, const Py_buffer *view) {
    if (PyMemoryView_Check(obj)) obj = PyMemoryView_GET_BASE(obj);
    Py_buffer whole;
    if (obj == NULL || PyObject_GetBuffer(obj, &whole, PyBUF_SIMPLE) != 0) return 0;
    int starts = whole.buf == view->buf && view->len <= whole.len;
    PyBuffer_Release(&whole);
    return starts;
}

static PyObject *walk_v2(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kwlist[] = {"buf",          "pos",       "end",         "limit",        "soft_stop",
                             "prev_last",    "prev_epoch", "base_offset", "max_batches", "threads",
                             "thread_bytes", "release_from", "fd", NULL};
    Py_buffer view;
    Py_ssize_t pos, end, limit, soft_stop, max_batches, thread_bytes = THREAD_BYTES, release_from = -1;
    int threads = 1, fd = -1;
    long long prev_last, prev_epoch;
    PyObject *base_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*nnnnLLOn|inni", kwlist, &view, &pos, &end, &limit, &soft_stop,
                                     &prev_last, &prev_epoch, &base_obj, &max_batches, &threads, &thread_bytes,
                                     &release_from, &fd))
        return NULL;
    int has_base = base_obj != Py_None;
    long long base_offset = has_base ? PyLong_AsLongLong(base_obj) : 0;
    if (has_base && base_offset == -1 && PyErr_Occurred()) {
        PyBuffer_Release(&view);
        return NULL;
    }
    /* Never read past the buffer, whatever the caller said. */
    if (end > view.len) end = view.len;
    if (limit > end) limit = end;
    if (pos < 0) pos = end;
    /* release_from (>= 0): hand back the whole pages of buf[release_from:pos], the bytes the scan has
     * passed, while this window is walked (on the helper thread when there is one). */
    uint8_t *release_lo = NULL, *release_hi = NULL;
    if (release_from >= 0) {
        int is_map = is_readonly_map(view.obj, &view);
        if (is_map <= 0 || release_from > pos || pos > view.len) {
            PyBuffer_Release(&view);
            if (is_map == 0 || release_from > pos || pos > view.len)
                PyErr_SetString(PyExc_ValueError,
                                "walk_v2: release_from is a position before pos, of a read-only mmap's buffer");
            return NULL;
        }
        /* The page holding buf + release_from lies inside the mapping (an mmap starts on a page); the
         * one holding buf + pos is still to be read. */
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        release_lo = (uint8_t *)((uintptr_t)((uint8_t *)view.buf + release_from) & ~(page - 1));
        release_hi = (uint8_t *)((uintptr_t)((uint8_t *)view.buf + pos) & ~(page - 1));
    }
    /* fd (>= 0): the descriptor of the file this read-only mmap maps from position 0, read instead of
     * the mapping (see CHUNK). The buffer must be the whole mapping's, from its first byte. */
    if (fd >= 0) {
        int whole = is_readonly_map(view.obj, &view) > 0 && starts_its_map(view.obj, &view);
        if (PyErr_Occurred() || !whole) {
            PyBuffer_Release(&view);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "walk_v2: fd is given only with a read-only mmap's buffer, from its start");
            return NULL;
        }
    }
    if (max_batches < 0) max_batches = 0;
    crc_init();
    walk_bounds bounds = {view.buf, end, limit, soft_stop, has_base, base_offset, fd};
    walk_run run = {NULL, 0, 0, pos, prev_last, prev_epoch, 0, INT64_MIN, 0, 0};
    Py_BEGIN_ALLOW_THREADS;
    reader rd;
    /* Without a buffer to read into (memory short), through the mapping. */
    if (!reader_open(&rd, fd)) {
        reader_close(&rd);
        bounds.fd = -1;
        reader_open(&rd, -1);
    }
    split_job job;
    pthread_t helper;
    int helped = 0, adaptive = thread_bytes > 0, timed = 0;
    long long started = 0;
    const Py_ssize_t pos0 = pos;
    Py_ssize_t stop = soft_stop < limit ? soft_stop : limit;
    if (threads > 1 && pos < stop && stop - pos >= thread_bytes) {
        int help = adaptive ? choose_helper() : 1;
        if (adaptive) {
            timed = 1;
            started = now_ns();
        }
        if (help) {
            memset(&job, 0, sizeof job);
            job.b = &bounds;
            job.from = pos;
            job.mid = pos + (stop - pos) / 2;
            job.stop = stop;
            job.prev_last = prev_last;
            job.prev_epoch = prev_epoch;
            job.max_batches = max_batches;
            job.release_lo = release_lo;
            job.release_hi = release_hi;
            job.meet = MEET_UNKNOWN;
            job.run.max_ts = INT64_MIN;
            helped = pthread_create(&helper, NULL, split_thread, &job) == 0;
        }
    }
    /* Without a helper the pages are handed back here. */
    if (!helped) release_pages(release_lo, release_hi);
    int stopped = walk_batches(&rd, &bounds, &run, max_batches, 1, helped ? &job.meet : NULL, NULL);
    if (helped) {
        __atomic_store_n(&job.over, 1, __ATOMIC_RELAXED);
        pthread_join(helper, NULL);
        /* Stopped where the helper began: its batches, then on alone (past where the helper stopped,
         * should that be anything but a batch the walk stops at too). */
        if (stopped) {
            take_helpers(&run, &job, max_batches);
            walk_batches(&rd, &bounds, &run, max_batches, 1, NULL, NULL);
        }
        PyMem_RawFree(job.run.rows);
    }
    reader_close(&rd);
    pos = run.pos;
    /* A window cut short (damage, the end of the bytes) says little about the cost per MiB. */
    if (timed && pos - pos0 >= thread_bytes) note_cost(helped, now_ns() - started, pos - pos0);
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&view);
    Py_ssize_t n = run.n;
    int64_t *rows = run.rows;
    PyObject *columns = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * N_COLUMNS * (Py_ssize_t)sizeof(int64_t)));
    if (columns == NULL) {
        PyMem_RawFree(rows);
        return NULL;
    }
    int64_t *out = (int64_t *)PyBytes_AS_STRING(columns);
    for (Py_ssize_t i = 0; i < n; i++)
        for (int c = 0; c < N_COLUMNS; c++) out[c * n + i] = rows[i * N_COLUMNS + c];
    PyMem_RawFree(rows);
    return Py_BuildValue("(nnLLNLLLL)", n, pos, run.prev_last, run.prev_epoch, columns, run.records, run.max_ts,
                         run.off_max, run.attrs_or);
}

/* BatchHeader tuples from a run's columns (field order of kdump.formats.batch.BatchHeader). */
static PyObject *headers(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t n;
    PyObject *htype;
    if (!PyArg_ParseTuple(args, "y*nO", &view, &n, &htype)) return NULL;
    /* n * N_COLUMNS * 8 is not computed before n is known not to overflow it. */
    if (!PyType_Check(htype) || !PyType_IsSubtype((PyTypeObject *)htype, &PyTuple_Type) || n < 0 ||
        n > view.len / (N_COLUMNS * (Py_ssize_t)sizeof(int64_t)) ||
        view.len != n * N_COLUMNS * (Py_ssize_t)sizeof(int64_t)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "headers takes a run's columns, its length and a tuple type");
        return NULL;
    }
    PyTypeObject *ht = (PyTypeObject *)htype;
    const void *col = view.buf;
    PyObject *list = PyList_New(n);
    if (list == NULL) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
#define COL(c) ld64(col, (c) * n + i)
        int64_t attributes = COL(C_ATTRIBUTES);
        PyObject *crc = PyLong_FromLongLong(COL(C_CRC)); /* crc and computed_crc: one object */
        PyObject *t = ht->tp_alloc(ht, 21);
        if (t == NULL) Py_XDECREF(crc);
        if (t == NULL) goto fail;
        PyList_SET_ITEM(list, i, t);
        PyObject *items[21] = {
            PyLong_FromLongLong(COL(C_POSITION)),
            PyLong_FromLongLong(COL(C_BASE_OFFSET)),
            PyLong_FromLongLong(COL(C_LAST_OFFSET)),
            PyLong_FromLongLong(COL(C_COUNT)),
            PyLong_FromLongLong(COL(C_SIZE)),
            PyLong_FromLong(2),
            crc,
            Py_NewRef(Py_True),
            Py_XNewRef(crc),
            PyLong_FromLongLong(attributes),
            PyLong_FromLongLong(attributes & 0x07),
            PyLong_FromLongLong((attributes & 0x08) >> 3),
            PyLong_FromLongLong(COL(C_BASE_TIMESTAMP)),
            PyLong_FromLongLong(COL(C_MAX_TIMESTAMP)),
            PyLong_FromLongLong(COL(C_PRODUCER_ID)),
            PyLong_FromLongLong(COL(C_PRODUCER_EPOCH)),
            PyLong_FromLongLong(COL(C_BASE_SEQUENCE)),
            PyLong_FromLongLong(COL(C_LEADER_EPOCH)),
            Py_NewRef(attributes & 0x10 ? Py_True : Py_False),
            Py_NewRef(attributes & 0x20 ? Py_True : Py_False),
            Py_NewRef(attributes & 0x40 ? Py_True : Py_False),
        };
#undef COL
        int bad = 0;
        for (int k = 0; k < 21; k++) {
            if (items[k] == NULL) bad = 1;
            PyTuple_SET_ITEM(t, k, items[k] ? items[k] : Py_NewRef(Py_None));
        }
        if (bad) goto fail;
    }
    PyBuffer_Release(&view);
    return list;
fail:
    PyBuffer_Release(&view);
    Py_XDECREF(list);
    return NULL;
}

/* ---- Kafka's batch lines --------------------------------------------------------------------- */

/* `v` in decimal, as Python's str(int) writes it. */
static char *put_i64(char *p, int64_t v) {
    char tmp[20];
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int k = 0;
    do {
        tmp[k++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (v < 0) *p++ = '-';
    while (k) *p++ = tmp[--k];
    return p;
}

#define PUT(lit) (memcpy(p, (lit), sizeof(lit) - 1), p += sizeof(lit) - 1)
#define PUTS(s, len) (memcpy(p, (s), (len)), p += (len))
/* A line's literal text is under 400 bytes, its 14 numbers at most 20 characters each. */
#define KAFKA_LINE_MAX 1024

static const char *const codec_names[8] = {"none", "gzip", "snappy", "lz4", "zstd", "unknown(5)", "unknown(6)",
                                           "unknown(7)"};

/* The batch lines kafka-dump-log prints for batches lo.. of a run's columns (kdump/render/text.py's
 * batch_line is the reference, for a checksum-valid v2 batch: what the walk's batches are), each
 * followed by a line break. It renders a batch while it starts at `position` (the one before ended
 * there) and ends by `limit`, as Kafka's file iterator reads batch after batch, and stops at the first
 * that does not: (lines, batches rendered, the position after them). */
static PyObject *kafka_batch_lines(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t n, lo, hi;
    long long position, limit;
    if (!PyArg_ParseTuple(args, "y*nnnLL", &view, &n, &lo, &hi, &position, &limit)) return NULL;
    /* n * N_COLUMNS * 8 is not computed before n is known not to overflow it. */
    if (n < 0 || n > view.len / (N_COLUMNS * (Py_ssize_t)sizeof(int64_t)) ||
        view.len != n * N_COLUMNS * (Py_ssize_t)sizeof(int64_t) || lo < 0 || lo > hi || hi > n) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "kafka_batch_lines takes a run's columns, its length and a range of it");
        return NULL;
    }
    const void *col = view.buf;
    /* At most this many lines are rendered: bounds the output before anything is written. */
    Py_ssize_t most = hi - lo;
    if (most > PY_SSIZE_T_MAX / KAFKA_LINE_MAX) most = PY_SSIZE_T_MAX / KAFKA_LINE_MAX;
    Py_ssize_t i = lo;
    int64_t at = position;
    for (; i < lo + most; i++) {
        int64_t pos = ld64(col, C_POSITION * n + i), size = ld64(col, C_SIZE * n + i), next;
        if (pos != at || size < V2_HEADER_SIZE || __builtin_add_overflow(pos, size, &next) || next > limit) break;
        at = next;
    }
    Py_ssize_t count = i - lo;
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * KAFKA_LINE_MAX);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    char *const start = PyBytes_AS_STRING(out);
    char *p = start;
    for (i = lo; i < lo + count; i++) {
#define COL(c) ld64(col, (c) * n + i)
        int64_t attributes = COL(C_ATTRIBUTES), base = COL(C_BASE_OFFSET), last = COL(C_LAST_OFFSET);
        int64_t base_seq = COL(C_BASE_SEQUENCE);
        /* lastSequence: (base sequence + last - base) mod 2**31, exact in 64-bit unsigned arithmetic
         * (2**31 divides 2**64), whatever the columns hold; -1 without a base sequence. */
        int64_t last_seq =
            base_seq < 0 ? -1 : (int64_t)(((uint64_t)base_seq + (uint64_t)last - (uint64_t)base) & 0x7fffffffu);
        PUT("baseOffset: ");
        p = put_i64(p, base);
        PUT(" lastOffset: ");
        p = put_i64(p, last);
        PUT(" count: ");
        p = put_i64(p, COL(C_COUNT));
        PUT(" baseSequence: ");
        p = put_i64(p, base_seq);
        PUT(" lastSequence: ");
        p = put_i64(p, last_seq);
        PUT(" producerId: ");
        p = put_i64(p, COL(C_PRODUCER_ID));
        PUT(" producerEpoch: ");
        p = put_i64(p, COL(C_PRODUCER_EPOCH));
        PUT(" partitionLeaderEpoch: ");
        p = put_i64(p, COL(C_LEADER_EPOCH));
        if (attributes & 0x10)
            PUT(" isTransactional: true");
        else
            PUT(" isTransactional: false");
        if (attributes & 0x20)
            PUT(" isControl: true");
        else
            PUT(" isControl: false");
        if (attributes & 0x40) {
            PUT(" deleteHorizonMs: OptionalLong[");
            p = put_i64(p, COL(C_BASE_TIMESTAMP));
            PUT("]");
        } else {
            PUT(" deleteHorizonMs: OptionalLong.empty");
        }
        PUT(" position: ");
        p = put_i64(p, COL(C_POSITION));
        if (attributes & 0x08)
            PUT(" LogAppendTime: ");
        else
            PUT(" CreateTime: ");
        p = put_i64(p, COL(C_MAX_TIMESTAMP));
        PUT(" size: ");
        p = put_i64(p, COL(C_SIZE));
        PUT(" magic: 2 compresscodec: ");
        const char *codec = codec_names[attributes & 0x07];
        PUTS(codec, strlen(codec));
        PUT(" crc: ");
        p = put_i64(p, COL(C_CRC));
        PUT(" isvalid: true\n");
#undef COL
    }
    PyBuffer_Release(&view);
    if (_PyBytes_Resize(&out, p - start) < 0) return NULL;
    return Py_BuildValue("(NnL)", out, count, (long long)at);
}

#undef PUT
#undef PUTS

/* ---- index agreement ------------------------------------------------------------------------ */

/* bisect_left of `x` in the ascending `a`, given that every a[i] below `from` is less than `x`: the
 * answer for the previous, not larger, `x`. Entries come in order, so the searches of a whole index
 * advance through the batches once (a binary search per slot cost 2.6 ms on a 135 MB segment of
 * 71,246 batches; the walk forward a tenth of it). */
static inline Py_ssize_t advance64(const void *a, Py_ssize_t n, Py_ssize_t from, int64_t x) {
    while (from < n && ld64(a, from) < x) from++;
    return from;
}

/* Whether an .index (kind 0) or .timeindex (kind 1) agrees with the log's batches so fully that the
 * index checks (kdump/scan/index_checks.py) have nothing to report: whole slots, no slot ending the
 * entries early (Kafka's tail rule), entries in order, each naming a batch of the valid log the way
 * those checks require. Any doubt answers False and the checks run in Python, which report. */
static PyObject *index_agrees(PyObject *self, PyObject *args) {
    (void)self;
    int kind;
    long long base;
    Py_buffer ix, pv, bv, lv, mv;
    Py_ssize_t valid_bytes;
    if (!PyArg_ParseTuple(args, "iy*Ly*y*y*y*n", &kind, &ix, &base, &pv, &bv, &lv, &mv, &valid_bytes)) return NULL;
    if (kind != 0 && kind != 1) {
        /* No other kind has a layout here (the time branch below would read a prefix never built). */
        PyBuffer_Release(&ix);
        PyBuffer_Release(&pv);
        PyBuffer_Release(&bv);
        PyBuffer_Release(&lv);
        PyBuffer_Release(&mv);
        PyErr_SetString(PyExc_ValueError, "index_agrees: kind is 0 (.index) or 1 (.timeindex)");
        return NULL;
    }
    int ok = 1;
    Py_ssize_t n = pv.len / 8, size = kind == 0 ? 8 : 12;
    int64_t *prefix = NULL;
    if (bv.len != pv.len || lv.len != pv.len || mv.len != pv.len || pv.len % 8 || ix.len % size) ok = 0;
    const void *positions = pv.buf, *bases = bv.buf, *lasts = lv.buf, *maxts = mv.buf;
    const uint8_t *slot = ix.buf;
    Py_ssize_t slots = ix.len / size;
    if (ok && kind == 1) {
        prefix = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(int64_t));
        if (prefix == NULL) ok = 0;
        int64_t run = -1;
        for (Py_ssize_t i = 0; ok && i < n; i++) prefix[i] = run = ld64(maxts, i) > run ? ld64(maxts, i) : run;
    }
    /* The searches below walk forward: positions must rise and last offsets must not fall (else the
     * checks in Python judge it). */
    for (Py_ssize_t i = 1; ok && i < n; i++)
        if (ld64(positions, i) <= ld64(positions, i - 1) || ld64(lasts, i) < ld64(lasts, i - 1)) ok = 0;
    int64_t prev_a = 0, prev_b = 0;
    Py_ssize_t holder = 0, at = 0; /* where the previous slot's searches ended */
    for (Py_ssize_t i = 0; ok && i < slots; i++, slot += size) {
        int64_t offset;
        int32_t rel = be32(slot + (kind == 0 ? 0 : 8));
        /* The tail rule ends the entries at a slot i > 0 of relative offset 0: the checks report it. */
        if ((rel == 0 && i > 0) || __builtin_add_overflow((int64_t)base, (int64_t)rel, &offset) || offset < base) {
            ok = 0;
            break;
        }
        /* Slots past the first must rise (checked below, which fails the whole answer otherwise): a
         * slot that does not cannot be searched for from where the one before it was found. */
        if (i > 0 && offset < (kind == 0 ? prev_a : prev_b)) {
            ok = 0;
            break;
        }
        holder = advance64(lasts, n, holder, offset);
        if (holder == n) {
            ok = 0;
            break;
        }
        if (kind == 0) {
            int64_t position = be32(slot + 4);
            if (i > 0 && position <= prev_b) {
                ok = 0;
                break;
            }
            at = advance64(positions, n, at, position);
            /* (a position not above the previous one was refused just above) */
            if ((i > 0 && offset <= prev_a) || position >= valid_bytes || at == n || ld64(positions, at) != position ||
                ld64(positions, holder) < position)
                ok = 0;
            prev_a = offset;
            prev_b = position;
        } else {
            int64_t ts = be64(slot);
            if ((i > 0 && (ts <= prev_a || offset < prev_b)) || ld64(bases, holder) > offset ||
                ld64(maxts, holder) != ts || prefix[holder] != ts)
                ok = 0;
            prev_a = ts;
            prev_b = offset;
        }
    }
    PyMem_RawFree(prefix);
    PyBuffer_Release(&ix);
    PyBuffer_Release(&pv);
    PyBuffer_Release(&bv);
    PyBuffer_Release(&lv);
    PyBuffer_Release(&mv);
    return PyBool_FromLong(ok);
}

/* ---- index entries as LogSegment.recover writes them ---------------------------------------- */

static inline void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The .index and .timeindex bytes of a segment's valid batches (kdump/ops/repair/reindex.py's
 * build_segment_indexes then encode_offset_index / encode_time_index): an offset entry for a batch
 * that starts more than `interval` bytes after the last entry's batch, a time entry with it when
 * the largest timestamp so far grew, and a last time entry for the largest timestamp. None when
 * an entry would not fit the file format (the Python encoders say why). */
static PyObject *build_indexes(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer pv, lv, mv;
    long long interval, base;
    if (!PyArg_ParseTuple(args, "y*y*y*LL", &pv, &lv, &mv, &interval, &base)) return NULL;
    Py_ssize_t n = pv.len / 8;
    PyObject *result = NULL;
    uint8_t *off = NULL, *tim = NULL;
    Py_ssize_t no = 0, nt = 0;
    int ok = lv.len == pv.len && mv.len == pv.len && pv.len % 8 == 0;
    if (ok) {
        off = PyMem_RawMalloc((size_t)(n ? n : 1) * 8);
        tim = PyMem_RawMalloc((size_t)(n + 1) * 12);
        if (off == NULL || tim == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    const void *pvb = pv.buf, *lvb = lv.buf, *mvb = mv.buf;
    int64_t max_ts = -1, offset_of_max = -1, last_time_ts = -1, last_entry_position = 0;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        int64_t position = ld64(pvb, i), last = ld64(lvb, i), ts = ld64(mvb, i);
        if (ts > max_ts) {
            max_ts = ts;
            offset_of_max = last;
        }
        int64_t gap;
        if (__builtin_sub_overflow(position, last_entry_position, &gap)) {
            ok = 0;
            break;
        }
        if (gap > interval) {
            /* last - base overflows for a base near -2^63: the check must not compute it first. */
            int64_t rel;
            if (last < base || __builtin_sub_overflow(last, base, &rel) || rel > 2147483647LL || position < 0 ||
                position > 2147483647LL) {
                ok = 0;
                break;
            }
            put_be32(off + no * 8, (uint32_t)rel);
            put_be32(off + no * 8 + 4, (uint32_t)position);
            no++;
            if (max_ts > last_time_ts) {
                int64_t trel;
                if (offset_of_max < base || __builtin_sub_overflow(offset_of_max, base, &trel) || trel > 2147483647LL) {
                    ok = 0;
                    break;
                }
                put_be32(tim + nt * 12, (uint32_t)((uint64_t)max_ts >> 32));
                put_be32(tim + nt * 12 + 4, (uint32_t)max_ts);
                put_be32(tim + nt * 12 + 8, (uint32_t)trel);
                nt++;
                last_time_ts = max_ts;
            }
            last_entry_position = position;
        }
    }
    if (ok && max_ts > last_time_ts) {
        int64_t trel;
        if (offset_of_max < base || __builtin_sub_overflow(offset_of_max, base, &trel) || trel > 2147483647LL) {
            ok = 0;
        } else {
            put_be32(tim + nt * 12, (uint32_t)((uint64_t)max_ts >> 32));
            put_be32(tim + nt * 12 + 4, (uint32_t)max_ts);
            put_be32(tim + nt * 12 + 8, (uint32_t)trel);
            nt++;
        }
    }
    if (!ok) {
        result = Py_NewRef(Py_None);
    } else {
        result = Py_BuildValue("(y#y#)", (const char *)off, no * 8, (const char *)tim, nt * 12);
    }
done:
    PyMem_RawFree(off);
    PyMem_RawFree(tim);
    PyBuffer_Release(&pv);
    PyBuffer_Release(&lv);
    PyBuffer_Release(&mv);
    return result;
}

static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    unsigned long crc = 0;
    if (!PyArg_ParseTuple(args, "y*|k", &view, &crc)) return NULL;
    crc_init();
    uint32_t out;
    Py_BEGIN_ALLOW_THREADS;
    out = crc32c((uint32_t)crc, view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(out);
}

static PyObject *py_crc32c_impl(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    crc_init();
    return PyUnicode_FromString(!use_hw ? "table"
#ifdef KD_ARM
                                        : "armv8-crc"
#else
                                        : "sse4.2"
#endif
    );
}

/* Test hook: force the software table (1) or let the CPU decide again (0). */
static PyObject *py_crc32c_force_table(PyObject *self, PyObject *arg) {
    (void)self;
    int force = PyObject_IsTrue(arg);
    if (force < 0) return NULL;
    use_hw = -1;
    crc_init();
    if (force) use_hw = 0;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"walk_v2", (PyCFunction)(void (*)(void))walk_v2, METH_VARARGS | METH_KEYWORDS, "Walk a run of clean v2 batches; their columns."},
    {"headers", headers, METH_VARARGS, "A run's batch header tuples."},
    {"kafka_batch_lines", kafka_batch_lines, METH_VARARGS, "kafka-dump-log's lines of a run's batches."},
    {"index_agrees", index_agrees, METH_VARARGS, "Whether an index agrees with the batches past all doubt."},
    {"build_indexes", build_indexes, METH_VARARGS, "A segment's .index and .timeindex bytes, or None."},
    {"crc32c", py_crc32c, METH_VARARGS, "CRC-32C of a buffer (hardware where the CPU has it)."},
    {"crc32c_impl", py_crc32c_impl, METH_NOARGS, "Which CRC-32C implementation runs."},
    {"crc32c_force_table", py_crc32c_force_table, METH_O, "Test hook: software CRC-32C on or off."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kdump.formats._fastwalk", "Compiled walk of clean v2 batch runs.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastwalk(void) { return PyModule_Create(&module); }
