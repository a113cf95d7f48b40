/* cdpc's stddef.h and cstddef: size_t is a built-in type. */
#ifndef __CDPC_STDDEF_H__
#define __CDPC_STDDEF_H__
#ifndef NULL
#define NULL 0
#endif
#endif
