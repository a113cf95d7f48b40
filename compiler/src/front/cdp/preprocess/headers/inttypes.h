/* cdpc's inttypes.h and cinttypes: printf formats of the stdint.h types (LP64). */
#ifndef __CDPC_INTTYPES_H__
#define __CDPC_INTTYPES_H__
#include <stdint.h>
#define PRId8 "d"
#define PRId16 "d"
#define PRId32 "d"
#define PRId64 "ld"
#define PRIi32 "i"
#define PRIi64 "li"
#define PRIu8 "u"
#define PRIu16 "u"
#define PRIu32 "u"
#define PRIu64 "lu"
#define PRIx32 "x"
#define PRIx64 "lx"
#define PRIX32 "X"
#define PRIX64 "lX"
#endif
