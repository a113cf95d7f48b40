/* Linked into the Python extension by link.py, so that it loads on glibc 2.28 and newer.
 *
 * LLVM's static libraries and libstdc++.a were compiled against Debian 12's glibc 2.36 and
 * reference three symbols glibc 2.28 does not have. Zig's glibc 2.28 stubs leave them
 * undefined, and the extension would then fail to load on an older glibc. Each is defined here,
 * hidden, from what glibc 2.28 has; `xtask/src/python.rs` fails the build if any other symbol is
 * left undefined without a version. */
#include <stddef.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/types.h>

/* glibc's `struct mallinfo` and `mallinfo()` (int fields), declared here: the headers of a
 * newer glibc declare mallinfo2 too, with a type of their own. */
struct cdpc_mallinfo {
    int arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
struct cdpc_mallinfo mallinfo(void);

/* libstdc++'s inline reference counting reads it (glibc 2.32+). Zero means "maybe threaded":
 * always the atomic operations, correct everywhere. */
char __libc_single_threaded __attribute__((visibility("hidden"))) = 0;

/* LLVM's Process::GetMallocUsage (glibc 2.33+): the same counts from mallinfo (int fields). */
struct cdpc_mallinfo2 {
    size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
__attribute__((visibility("hidden"))) struct cdpc_mallinfo2 mallinfo2(void) {
    struct cdpc_mallinfo m = mallinfo();
    struct cdpc_mallinfo2 r = {
        (unsigned)m.arena, (unsigned)m.ordblks, (unsigned)m.smblks, (unsigned)m.hblks, (unsigned)m.hblkhd,
        (unsigned)m.usmblks, (unsigned)m.fsmblks, (unsigned)m.uordblks, (unsigned)m.fordblks, (unsigned)m.keepcost,
    };
    return r;
}

/* std::random_device (libstdc++ built with glibc 2.36+): the kernel's random bytes, through
 * getrandom (glibc 2.25). */
__attribute__((visibility("hidden"))) uint32_t arc4random(void) {
    uint32_t value = 0;
    unsigned char *p = (unsigned char *)&value;
    size_t got = 0;
    while (got < sizeof value) {
        ssize_t n = getrandom(p + got, sizeof value - got, 0);
        if (n > 0)
            got += (size_t)n;
    }
    return value;
}
